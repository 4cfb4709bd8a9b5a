package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"gregor/matrix"
	"gregor/reports"
)

func init() { subcommands = append(subcommands, matrixCmd) }

func matrixCmd() *cobra.Command {
	var (
		config, shard, out, runtimeName, seeds string
		laneFlags                              []string
		parallel                               int
		resume                                 bool
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
finish; its report is the uninterrupted run's. A matrix with runtimes: (or
--seeds RUNTIME=N,...) runs every cell on each runtime with its own seeds,
each runtime's cells in a lane of their own (-j, --lane), the simulation's
at a lower CPU priority (it is on virtual time; real-time runs beside it
must not starve); the report colours a cell by the runtime with the most
runs and shows the other's beside it. Exits 1 only when a cell shows a forbidden anomaly or crashed;
allowed anomalies are findings ("unsafe configuration demonstrated").`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, err := matrix.Load(config)
			if err != nil {
				return &exitError{2, err}
			}
			lanes, err := parseLanes(laneFlags)
			if err != nil {
				return &exitError{2, err}
			}
			if runtimeName, err = pickSeeds(spec, seeds, runtimeName); err != nil {
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
			for _, n := range lanes {
				if err := matrix.CheckParallel(n); err != nil {
					return &exitError{2, fmt.Errorf("--lane: %w", err)}
				}
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
			fmt.Fprintf(cmd.ErrOrStderr(), "matrix %s: %d cells, %s\n", spec.Name, len(cells), laneBanner(spec, parallel, lanes))
			r := &matrix.Runner{Binary: bin, Out: out, Parallel: parallel, LaneParallel: lanes, Progress: cmd.ErrOrStderr(), Resume: resume}
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
	cmd.Flags().StringVar(&runtimeName, "runtime", "", "runtime for every cell (default: gregor run's auto); on a matrix with runtimes: (seeds per runtime), only that runtime's cells")
	cmd.Flags().StringVar(&seeds, "seeds", "", "seeds per runtime, RUNTIME=N,... (e.g. sim=30,process=3): every cell on each runtime with seeds 1..N, instead of the file's seeds or runtimes")
	cmd.Flags().StringSliceVar(&laneFlags, "lane", nil, "RUNTIME=N: that runtime's cells run N at a time (default -j), beside the other runtimes' (e.g. --lane sim=2)")
	cmd.Flags().BoolVar(&resume, "resume", false, "reuse the cells an interrupted matrix into the same --out finished (same arguments) and run the rest")
	return cmd
}

// pickSeeds applies --seeds and --runtime to spec, and returns the
// --runtime every cell gets appended ("" when spec's runtimes: put each
// cell on its own).
func pickSeeds(spec *matrix.Spec, seeds, runtimeName string) (string, error) {
	if seeds != "" {
		plan, err := matrix.ParseRuntimeSeeds(seeds)
		if err != nil {
			return "", err
		}
		if err := spec.UseRuntimes(plan); err != nil {
			return "", fmt.Errorf("--seeds: %w", err)
		}
	}
	if len(spec.Runtimes) == 0 || runtimeName == "" {
		return runtimeName, nil
	}
	only, err := spec.Runtimes.Only(runtimeName)
	if err != nil {
		return "", err
	}
	spec.Runtimes = only
	return "", nil
}

// parseLanes reads --lane RUNTIME=N flags.
func parseLanes(flags []string) (map[string]int, error) {
	lanes := map[string]int{}
	for _, f := range flags {
		name, v, ok := strings.Cut(f, "=")
		n, err := strconv.Atoi(v)
		if !ok || name == "" || err != nil {
			return nil, fmt.Errorf("--lane %q: give RUNTIME=N, e.g. sim=2", f)
		}
		if !slices.Contains(matrix.SeedRuntimes, name) {
			return nil, fmt.Errorf("--lane %q: %s is not a runtime (give one of %s)", f, name, strings.Join(matrix.SeedRuntimes, ", "))
		}
		lanes[name] = n
	}
	return lanes, nil
}

// laneBanner says how many cells run at once, per runtime when the
// matrix's runtimes: name several.
func laneBanner(spec *matrix.Spec, parallel int, lanes map[string]int) string {
	if len(spec.Runtimes) == 0 {
		return fmt.Sprintf("%d at a time", max(1, parallel))
	}
	var parts []string
	for _, rt := range spec.Runtimes.Names() {
		n, ok := lanes[rt]
		if !ok {
			n = max(1, parallel)
		}
		parts = append(parts, fmt.Sprintf("%d at a time on %s", n, rt))
	}
	return strings.Join(parts, ", ")
}
