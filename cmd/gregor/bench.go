package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	"gregor/bench"
	"gregor/harness"
)

func init() { subcommands = append(subcommands, benchCmd) }

func benchCmd() *cobra.Command {
	var (
		records, valueBytes, rounds int
		txnSize, txnRecords         int
		partitions                  int32
		skipReplicated              bool
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Throughput of the embedded cluster beside franz-go's kfake, same load, same run",
		Long: `Runs one franz-go load (default: 100-byte records, 8 partitions, 200k records,
acks=1) against a broker started like 'gregor up --runtime process' and against
franz-go's in-memory kfake (in its own process, like the broker), alternating
rounds, and prints the median records/s of each and their ratio. Then a
transactional load (transactions of --txn-size records, each committed before
the next begins, read back read_committed) on the same broker beside kfake.
Then the same load with RF=3 on a 3-broker cluster, acks=1 and acks=all,
beside kfake (unreplicated) with the same acks. Ratios, not absolute times, are the result:
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
			c, err := pickAndStart(ctx, "process", harness.DefaultCluster(), "bench", bin, cmd)
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
			rows := []bench.Row{
				{Label: label, Result: res["kfake"], Ref: res["kfake"]},
				{Label: label, Result: res["gregor"], Ref: res["kfake"], TargetMin: 1.0},
			}
			if txnSize > 0 {
				// Transactions: each batch of txnSize records committed
				// before the next begins, read back read_committed.
				tl := bench.Load{Records: txnRecords, ValueBytes: valueBytes, Partitions: partitions, Acks: -1, RF: 1, TxnSize: txnSize}
				kr, gr, err := bench.Pair(ctx, ref, tl, bench.Target{Name: "gregor", Bootstrap: c.Bootstrap()}, tl, rounds)
				if err != nil {
					return err
				}
				rows = append(rows, bench.Row{Label: fmt.Sprintf("RF=1 transactions of %d, %dx%dB", txnSize, txnRecords, valueBytes),
					Result: gr, Ref: kr, TargetMin: 0.5, ProduceOnly: true})
			}
			if !skipReplicated {
				c.Close(context.Background())
				c3cfg := harness.DefaultCluster()
				c3cfg.Nodes, c3cfg.MinISR = 3, 2
				c3, err := pickAndStart(ctx, "process", c3cfg, "bench3", bin, cmd)
				if err != nil {
					return err
				}
				defer c3.Close(context.Background())
				g3 := bench.Target{Name: "gregor RF=3", Bootstrap: c3.Bootstrap()}
				for _, acks := range []int16{1, -1} {
					rl := l
					rl.Acks = acks
					gl := rl
					gl.RF = 3
					kr, gr, err := bench.Pair(ctx, ref, rl, g3, gl, rounds)
					if err != nil {
						return err
					}
					name := "acks=1"
					target := 0.0
					if acks == -1 {
						name, target = "acks=all", 0.5
					}
					rows = append(rows, bench.Row{Label: "RF=3 " + name + " vs kfake RF=1", Result: gr, Ref: kr, TargetMin: target, ProduceOnly: true})
				}
			}
			bench.Print(cmd.OutOrStdout(), rows)
			return nil
		},
	}
	cmd.Flags().IntVar(&records, "records", 200_000, "records per round")
	cmd.Flags().IntVar(&valueBytes, "value-bytes", 100, "bytes per record value")
	cmd.Flags().Int32Var(&partitions, "partitions", 8, "partitions of the topic")
	cmd.Flags().IntVar(&rounds, "rounds", 3, "alternating rounds per target (median reported)")
	cmd.Flags().BoolVar(&skipReplicated, "single-node", false, "skip the RF=3 rows (3-broker cluster)")
	cmd.Flags().IntVar(&txnSize, "txn-size", 100, "records per transaction of the transactional row (0 skips it)")
	cmd.Flags().IntVar(&txnRecords, "txn-records", 50_000, "records per round of the transactional row")
	return cmd
}
