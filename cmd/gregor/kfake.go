package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"
)

func init() { subcommands = append(subcommands, kfakeCmd) }

// kfakeCmd serves franz-go's in-memory kfake in its own process, so `gregor
// bench` compares two servers on equal footing: each in its own process,
// neither sharing the load generator's Go scheduler.
func kfakeCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "kfake",
		Short:  "Serve franz-go's kfake (the bench reference) until interrupted",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := kfake.NewCluster(kfake.NumBrokers(1))
			if err != nil {
				return err
			}
			defer c.Close()
			fmt.Printf("KFAKE %s\n", c.ListenAddrs()[0])
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
			<-sig
			return nil
		},
	}
}
