package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	"gregor/bench"
)

func init() { subcommands = append(subcommands, benchCmd) }

func benchCmd() *cobra.Command {
	var (
		records, valueBytes, rounds int
		partitions                  int32
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Throughput of the embedded cluster beside franz-go's kfake, same load, same run",
		Long: `Runs one franz-go load (default: 100-byte records, 8 partitions, 200k records,
acks=1) against a broker started like 'gregor up --runtime process' and against
franz-go's in-memory kfake, alternating rounds, and prints the median
records/s of each and their ratio. Ratios, not absolute times, are the result:
the machine is shared and noisy.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
			defer cancel()
			bin, err := selfBinary()
			if err != nil {
				return err
			}
			ref, err := bench.KFakeProcess(ctx, bin)
			if err != nil {
				return err
			}
			defer ref.Close()
			o := clusterOpts{nodes: 1, runtime: "process", minISR: 1, fsync: "never", lagMax: 30 * time.Second}
			c, err := pickAndStart(ctx, &o, "bench", bin, cmd)
			if err != nil {
				return err
			}
			defer c.Close(context.Background())
			l := bench.Load{Records: records, ValueBytes: valueBytes, Partitions: partitions, Acks: 1, RF: 1}
			res, err := bench.Compare(ctx, ref, []bench.Target{{Name: "gregor", Bootstrap: c.Bootstrap()}}, l, rounds)
			if err != nil {
				return err
			}
			label := fmt.Sprintf("RF=1 acks=1 %dx%dB p=%d", records, valueBytes, partitions)
			bench.Print(cmd.OutOrStdout(), []bench.Row{
				{Label: label, Result: res["kfake"], Ref: res["kfake"]},
				{Label: label, Result: res["gregor"], Ref: res["kfake"], TargetMin: 1.0},
			})
			return nil
		},
	}
	cmd.Flags().IntVar(&records, "records", 200_000, "records per round")
	cmd.Flags().IntVar(&valueBytes, "value-bytes", 100, "bytes per record value")
	cmd.Flags().Int32Var(&partitions, "partitions", 8, "partitions of the topic")
	cmd.Flags().IntVar(&rounds, "rounds", 3, "alternating rounds per target (median reported)")
	return cmd
}
