package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"gregor/matrix"
	"gregor/reports"
)

func init() { subcommands = append(subcommands, matrixCmd) }

func matrixCmd() *cobra.Command {
	var (
		config, shard, out, runtimeName string
		parallel                        int
		resume                          bool
	)
	cmd := &cobra.Command{
		Use:   "matrix --config MATRIX.yaml [--shard i/n] [--parallel N]",
		Short: "Run a configuration matrix through gregor run and write the matrix report",
		Long: `Expands MATRIX.yaml into cells (a configuration x a nemesis set x a seed) and
runs each with 'gregor run' in its own process, N at a time, with a progress
line. A cell that crashes is recorded as crashed with its log and the matrix
goes on. Writes OUT/index.html (rows per configuration, columns per nemesis),
OUT/results.json, OUT/junit.xml, and each run's store and report under
OUT/runs/. A matrix killed part-way (Ctrl-C, SIGKILL, a lost machine) and
run again with --resume into the same --out runs only the cells that did not
finish; its report is the uninterrupted run's. Exits 1 only when a cell shows a forbidden anomaly or crashed;
allowed anomalies are findings ("unsafe configuration demonstrated").`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, err := matrix.Load(config)
			if err != nil {
				return &exitError{2, err}
			}
			cells, err := spec.Cells()
			if err != nil {
				return &exitError{2, err}
			}
			if shard != "" {
				i, n, ok := strings.Cut(shard, "/")
				ii, e1 := strconv.Atoi(i)
				nn, e2 := strconv.Atoi(n)
				if !ok || e1 != nil || e2 != nil {
					return &exitError{2, fmt.Errorf("--shard %q: give i/n, e.g. 1/4", shard)}
				}
				if cells, err = matrix.Shard(cells, ii, nn); err != nil {
					return &exitError{2, err}
				}
			}
			if err := matrix.CheckParallel(parallel); err != nil {
				return &exitError{2, err}
			}
			bin, err := selfBinary()
			if err != nil {
				return err
			}
			if out == "" {
				out = filepath.Join("store", "matrix-"+spec.Name)
			}
			ctx, stop := interruptContext(cmd.Context(), cmd.ErrOrStderr())
			defer stop()
			fmt.Fprintf(cmd.ErrOrStderr(), "matrix %s: %d cells, %d at a time\n", spec.Name, len(cells), max(1, parallel))
			r := &matrix.Runner{Binary: bin, Out: out, Parallel: parallel, Progress: cmd.ErrOrStderr(), Resume: resume}
			if runtimeName != "" {
				r.ExtraArgs = append(r.ExtraArgs, "--runtime", runtimeName)
			}
			results := r.Run(ctx, cells)
			if err := reports.WriteMatrix(out, "gregor matrix "+spec.Name, results); err != nil {
				return err
			}
			failed := 0
			for _, c := range results {
				if c.Failed() {
					failed++
					fmt.Fprintf(cmd.OutOrStdout(), "FAILED %s | %s | seed %d: %s %s\n", c.Config, c.Nemesis, c.Seed, c.Valid, strings.Join(c.Forbidden, ","))
				}
			}
			abs, _ := filepath.Abs(filepath.Join(out, reports.MatrixIndex))
			fmt.Fprintf(cmd.OutOrStdout(), "matrix report: %s (%d cells, %d failed)\n", abs, len(results), failed)
			if failed > 0 {
				return &exitError{1, fmt.Errorf("%d of %d cells showed a forbidden anomaly or crashed", failed, len(results))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&config, "config", "matrix/default.yaml", "matrix file")
	cmd.Flags().StringVar(&shard, "shard", "", "run only shard i of n (i/n)")
	cmd.Flags().IntVarP(&parallel, "parallel", "j", 1, "cells run at once")
	cmd.Flags().StringVar(&out, "out", "", "output directory (default store/matrix-NAME)")
	cmd.Flags().StringVar(&runtimeName, "runtime", "", "runtime for every cell (default: gregor run's auto)")
	cmd.Flags().BoolVar(&resume, "resume", false, "reuse the cells an interrupted matrix into the same --out finished (same arguments) and run the rest")
	return cmd
}
