package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"

	"gregor/internal/atomicfile"
)

func init() { subcommands = append(subcommands, kfakeCmd) }

// kfakeCmd serves franz-go's in-memory kfake in its own process: the
// reference server of `gregor bench` (each server in its own process,
// neither sharing the load generator's Go scheduler), and a Kafka-protocol
// cluster gregor did not write, for the external runtime to fault by pid
// (kill -9, SIGSTOP/SIGCONT, a restart on its data directory).
func kfakeCmd() *cobra.Command {
	var brokers int
	var ports []int
	var data, addrFile string
	var syncWrites bool
	cmd := &cobra.Command{
		Use:    "kfake",
		Short:  "Serve franz-go's kfake (the bench reference, a foreign cluster for --runtime external) until interrupted",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if brokers < 1 {
				return fmt.Errorf("--brokers %d: give at least 1", brokers)
			}
			if len(ports) > 0 && len(ports) != brokers {
				return fmt.Errorf("--ports names %d ports for %d brokers: give one per broker", len(ports), brokers)
			}
			opts := []kfake.Opt{kfake.NumBrokers(brokers)}
			if len(ports) > 0 {
				opts = append(opts, kfake.Ports(ports...))
			}
			if data != "" {
				opts = append(opts, kfake.DataDir(data))
			}
			if syncWrites {
				opts = append(opts, kfake.SyncWrites())
			}
			c, err := kfake.NewCluster(opts...)
			if err != nil {
				return err
			}
			defer c.Close()
			addrs := strings.Join(c.ListenAddrs(), ",")
			fmt.Printf("KFAKE %s\n", addrs)
			if addrFile != "" {
				// Written once every broker listens: a start command waits
				// for it instead of a sleep.
				if err := atomicfile.WriteFile(addrFile, []byte(addrs+"\n"), 0o644); err != nil {
					return err
				}
			}
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
			<-sig
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&brokers, "brokers", 1, "brokers in the one process")
	f.IntSliceVar(&ports, "ports", nil, "the brokers' ports (default: free ones); fixed ports keep the addresses across a restart")
	f.StringVar(&data, "data", "", "persist to this directory and reload from it on start (kfake.DataDir)")
	f.BoolVar(&syncWrites, "sync-writes", false, "fsync every batch (kfake.SyncWrites); default: the page cache, synced on roll and shutdown, as Kafka's default")
	f.StringVar(&addrFile, "addr-file", "", "write the brokers' addresses here once they listen")
	return cmd
}
