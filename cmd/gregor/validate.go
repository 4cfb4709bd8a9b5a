package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"gregor/matrix"
	"gregor/reports"
	"gregor/validate"
)

func init() { subcommands = append(subcommands, validateCmd) }

func validateCmd() *cobra.Command {
	var (
		runs, safeRuns, parallel int
		timeLimit                time.Duration
		seed                     int64
		bugs                     []string
		out, runtimeName         string
		reportOnly, generic      bool
		resume                   bool
		config                   string
	)
	cmd := &cobra.Command{
		Use:   "validate [--runs N] [--time-limit D]",
		Short: "Measure the harness: detection rate per planted bug, false alarms of the safe configuration",
		Long: `Validate checks the checker. For each planted bug (DESIGN.md section 6) it runs
the fault most likely to expose it --runs times with fresh seeds and reports
how many runs ended in a forbidden anomaly (the detection rate) and the median
time from the first fault to the first read that proved it. Each probe also
runs --runs times without its bug (its control). Then the false-alarm set (the
queue workload in the safe configuration, acks=all, min ISR 2, unclean off,
RF 3, idempotence on, under every nemesis; the group workload in each commit
mode's safe form) runs --safe-runs times. Every rate is printed with its 95%
Wilson score interval and sample size.

Targets: each bug caught in at least 90% of its runs; no false alarm in the
controls and safe runs; no run crashed or unknown (such runs are counted,
never dropped). Writes OUT/validate.json, and OUT/index.html (the matrix
report of every run, with the validation table on top). Exit status 0 when
every target is met, 1 when one is not.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if generic {
				return runGeneric(cmd, config, bugs, out, runtimeName, parallel, reportOnly, resume)
			}
			var results []reports.Cell
			if reportOnly {
				var err error
				if results, err = reports.ReadResults(filepath.Join(out, reports.MatrixResults)); err != nil {
					return &exitError{2, fmt.Errorf("--report-only: %w (give the --out of an earlier gregor validate)", err)}
				}
			} else {
				plan := validate.Plan{Runs: runs, SafeRuns: safeRuns, TimeLimit: timeLimit, Seed: seed, Bugs: bugs}
				cells, err := plan.Cells()
				if err != nil {
					return &exitError{2, err}
				}
				banner := fmt.Sprintf("validate: %d runs (%d per planted bug and as many controls, %d safe), fault phase %v each, %d at a time", len(cells), runs, safeRuns, timeLimit, parallel)
				if results, err = runCells(cmd, cells, banner, out, parallel, resume, runtimeName); err != nil {
					return err
				}
			}
			sum := validate.Summarize(out, results, timeLimit)
			if err := reports.WriteMatrixValidation(out, "gregor validate", results, sum.Section()); err != nil {
				return err
			}
			b, err := json.MarshalIndent(sum, "", "  ")
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(out, "validate.json"), append(b, '\n'), 0o644); err != nil {
				return err
			}
			sum.WriteTable(cmd.OutOrStdout())
			abs, _ := filepath.Abs(filepath.Join(out, reports.MatrixIndex))
			fmt.Fprintf(cmd.OutOrStdout(), "validation report: %s\n", abs)
			if !sum.Pass {
				return &exitError{1, fmt.Errorf("validation below target (detection >= %.0f%%, %d false alarms, no crashed or unknown run)", 100*validate.MinDetectionRate, validate.MaxFalseAlarms)}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&runs, "runs", 10, "runs per planted bug")
	fl.IntVar(&safeRuns, "safe-runs", 20, "runs of the false-alarm set (every workload), spread over every nemesis, on top of the controls")
	fl.DurationVar(&timeLimit, "time-limit", 20*time.Second, "fault phase of each run (at most 60s of faults is the target the detection rate is measured against)")
	fl.Int64Var(&seed, "seed", 1, "first seed (run i uses seed+i)")
	fl.StringSliceVar(&bugs, "bugs", nil, "only these planted bugs (default: every one)")
	fl.IntVarP(&parallel, "parallel", "j", 1, "runs at once")
	fl.StringVar(&out, "out", filepath.Join("store", "validate"), "output directory")
	fl.StringVar(&runtimeName, "runtime", "", "runtime for every run (default: gregor run's auto)")
	fl.BoolVar(&generic, "generic", false, "generic detection: run --config's nemeses and settings on its safe rows with each planted bug (--bugs, default every one) and once without, and print the bug x nemesis table (OUT/generic.json)")
	fl.StringVar(&config, "config", "matrix/default.yaml", "with --generic: the matrix whose nemeses and settings are used")
	fl.BoolVar(&resume, "resume", false, "reuse the runs an interrupted validate into the same --out finished (same arguments) and run the rest")
	fl.BoolVar(&reportOnly, "report-only", false, "run nothing: summarize the runs already in --out again (table, validate.json, index.html)")
	return cmd
}

// runGeneric is gregor validate --generic.
func runGeneric(cmd *cobra.Command, config string, bugs []string, out, runtimeName string, parallel int, reportOnly, resume bool) error {
	spec, err := matrix.Load(config)
	if err != nil {
		return &exitError{2, err}
	}
	if !cmd.Flags().Changed("out") {
		out = filepath.Join("store", "validate-generic")
	}
	var results []reports.Cell
	if reportOnly {
		if results, err = reports.ReadResults(filepath.Join(out, reports.MatrixResults)); err != nil {
			return &exitError{2, fmt.Errorf("--report-only: %w (give the --out of an earlier gregor validate --generic)", err)}
		}
	} else {
		if len(bugs) == 0 {
			bugs = validate.BugNames()
		}
		cells, err := validate.GenericCells(spec, bugs)
		if err != nil {
			return &exitError{2, err}
		}
		banner := fmt.Sprintf("validate --generic: matrix %s's nemeses on its safe rows, %d planted bugs and a control: %d runs, %d at a time",
			spec.Name, len(bugs), len(cells), parallel)
		if results, err = runCells(cmd, cells, banner, out, parallel, resume, runtimeName); err != nil {
			return err
		}
	}
	sum := validate.SummarizeGeneric(spec.Name, results)
	if err := reports.WriteMatrix(out, "gregor validate --generic "+spec.Name, results); err != nil {
		return err
	}
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "generic.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	sum.WriteTable(cmd.OutOrStdout())
	abs, _ := filepath.Abs(filepath.Join(out, reports.MatrixIndex))
	fmt.Fprintf(cmd.OutOrStdout(), "generic detection report: %s\n", abs)
	if !sum.Pass {
		return &exitError{1, errors.New("generic detection below target: a planted bug no nemesis of the matrix caught, or a control run that failed, crashed or ended unknown")}
	}
	return nil
}

// runCells runs a validation plan's cells through `gregor run`
// subprocesses (matrix.Runner), parallel at a time, until done or
// interrupted (SIGINT, SIGTERM); both validate modes share it.
func runCells(cmd *cobra.Command, cells []matrix.Cell, banner, out string, parallel int, resume bool, runtimeName string) ([]reports.Cell, error) {
	if err := matrix.CheckParallel(parallel); err != nil {
		return nil, &exitError{2, err}
	}
	bin, err := selfBinary()
	if err != nil {
		return nil, err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errOut := cmd.ErrOrStderr()
	fmt.Fprintln(errOut, banner)
	r := &matrix.Runner{Binary: bin, Out: out, Parallel: parallel, Progress: errOut, Resume: resume}
	if runtimeName != "" {
		r.ExtraArgs = append(r.ExtraArgs, "--runtime", runtimeName)
	}
	return r.Run(ctx, cells), nil
}
