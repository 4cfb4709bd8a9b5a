package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"gregor/checker"
	"gregor/internal/atomicfile"
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
		controls                 bool
		seeds                    int
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
			switch {
			case generic && controls:
				return &exitError{2, errors.New("--generic and --controls are two modes: give one")}
			case generic:
				return runSpecMode(cmd, genericMode(bugs), config, out, runtimeName, parallel, reportOnly, resume)
			case controls:
				if seeds == 0 && cmd.Flags().Changed("seed") {
					return &exitError{2, errors.New("--controls --seed F needs --seeds N (seeds F..F+N-1 per cell)")}
				}
				return runSpecMode(cmd, controlsMode(seed, seeds), config, out, runtimeName, parallel, reportOnly, resume)
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
			if err := atomicfile.WriteFile(filepath.Join(out, "validate.json"), append(b, '\n'), 0o644); err != nil {
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
	fl.Int64Var(&seed, "seed", 1, "first seed (run i uses seed+i); with --controls --seeds N: seeds SEED..SEED+N-1 per cell, so a long set of controls runs in parts")
	fl.StringSliceVar(&bugs, "bugs", nil, "only these planted bugs (default: every one)")
	fl.IntVarP(&parallel, "parallel", "j", 1, "runs at once")
	fl.StringVar(&out, "out", filepath.Join("store", "validate"), "output directory")
	fl.StringVar(&runtimeName, "runtime", "", "runtime for every run (default: gregor run's auto)")
	fl.BoolVar(&generic, "generic", false, "generic detection: run --config's nemeses and settings on its safe rows with each planted bug (--bugs, default every one) and once without, and print the bug x nemesis table (OUT/generic.json)")
	fl.BoolVar(&controls, "controls", false, "controls of every row: run every cell of --config on the correct cluster (--seeds per cell) and print, per configuration, the runs that showed an anomaly its theory forbids, with their 95% Wilson interval (OUT/controls.json); exit 1 on any")
	fl.IntVar(&seeds, "seeds", 0, "with --controls: N seeds per cell, from --seed (default: the matrix's own)")
	fl.StringVar(&config, "config", "matrix/default.yaml", "with --generic or --controls: the matrix whose rows, nemeses and settings are used")
	fl.BoolVar(&resume, "resume", false, "reuse the runs an interrupted validate into the same --out finished (same arguments) and run the rest")
	fl.BoolVar(&reportOnly, "report-only", false, "run nothing: summarize the runs already in --out again (table, validate.json, index.html)")
	return cmd
}

// specMode is a validate mode over a matrix file's cells: --generic
// (planted bugs on its safe rows) or --controls (every row, no bug).
type specMode struct {
	name string // the mode's flag, for the banner and the messages
	out  string // its default --out
	json string // the summary's file in --out
	// cells makes the mode's cells and says what they are.
	cells func(*matrix.Spec) ([]matrix.Cell, string, error)
	// summarize tabulates the runs; the summary prints itself and says
	// whether the mode's target is met (else the error says which).
	summarize func(*matrix.Spec, []reports.Cell) (modeSummary, error)
}

type modeSummary interface{ WriteTable(io.Writer) }

// runSpecMode runs (or, with --report-only, reads again) a specMode's cells,
// writes the matrix report and the summary, and exits 1 below target.
func runSpecMode(cmd *cobra.Command, m specMode, config, out, runtimeName string, parallel int, reportOnly, resume bool) error {
	spec, err := matrix.Load(config)
	if err != nil {
		return &exitError{2, err}
	}
	// A matrix with runtimes: under --runtime R runs R's cells alone.
	if runtimeName, err = pickSeeds(spec, "", runtimeName); err != nil {
		return &exitError{2, err}
	}
	if !cmd.Flags().Changed("out") {
		out = m.out
	}
	var results []reports.Cell
	if reportOnly {
		if results, err = reports.ReadResults(filepath.Join(out, reports.MatrixResults)); err != nil {
			return &exitError{2, fmt.Errorf("--report-only: %w (give the --out of an earlier gregor validate %s)", err, m.name)}
		}
	} else {
		cells, what, err := m.cells(spec)
		if err != nil {
			return &exitError{2, err}
		}
		banner := fmt.Sprintf("validate %s: matrix %s, %s: %d runs, %d at a time", m.name, spec.Name, what, len(cells), parallel)
		if results, err = runCells(cmd, cells, banner, out, parallel, resume, runtimeName); err != nil {
			return err
		}
	}
	sum, below := m.summarize(spec, results)
	if err := reports.WriteMatrix(out, "gregor validate "+m.name+" "+spec.Name, results); err != nil {
		return err
	}
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(out, m.json), append(b, '\n'), 0o644); err != nil {
		return err
	}
	sum.WriteTable(cmd.OutOrStdout())
	abs, _ := filepath.Abs(filepath.Join(out, reports.MatrixIndex))
	fmt.Fprintf(cmd.OutOrStdout(), "validate %s report: %s\n", m.name, abs)
	if below != nil {
		return &exitError{1, below}
	}
	return nil
}

// genericMode is gregor validate --generic.
func genericMode(bugs []string) specMode {
	return specMode{name: "--generic", out: filepath.Join("store", "validate-generic"), json: "generic.json",
		cells: func(spec *matrix.Spec) ([]matrix.Cell, string, error) {
			if len(bugs) == 0 {
				bugs = validate.BugNames()
			}
			cells, dropped, err := validate.GenericCells(spec, bugs, cellForbidsLoss)
			what := fmt.Sprintf("its nemeses on its safe rows, %d planted bugs and a control", len(bugs))
			if len(dropped) > 0 {
				what += fmt.Sprintf(" (not under %s: the theory allows lost writes there)", strings.Join(dropped, ", "))
			}
			return cells, what, err
		},
		summarize: func(spec *matrix.Spec, results []reports.Cell) (modeSummary, error) {
			sum := validate.SummarizeGeneric(spec.Name, results)
			if !sum.Pass {
				return sum, errors.New("generic detection below target: a planted bug no nemesis of the matrix caught, or a control run that failed, crashed or ended unknown")
			}
			return sum, nil
		}}
}

// controlsMode is gregor validate --controls.
func controlsMode(first int64, seeds int) specMode {
	return specMode{name: "--controls", out: filepath.Join("store", "validate-controls"), json: "controls.json",
		cells: func(spec *matrix.Spec) ([]matrix.Cell, string, error) {
			cells, err := validate.ControlCells(spec, first, seeds)
			return cells, "every row and nemesis on the correct cluster", err
		},
		summarize: func(spec *matrix.Spec, results []reports.Cell) (modeSummary, error) {
			sum := validate.SummarizeControls(spec.Name, results)
			if !sum.Pass {
				return sum, errors.New("controls below target: a run of the correct cluster showed an anomaly its row's theory forbids (a false alarm to root-cause), or crashed or ended unknown")
			}
			return sum, nil
		}}
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

// cellForbidsLoss asks the checker's theory about the run cell c makes
// (validate.ForbidsLoss).
func cellForbidsLoss(c matrix.Cell) (bool, error) {
	rec, err := plannedRecord(c.Args)
	if err != nil {
		return false, err
	}
	return !checker.Expect(&rec)[checker.LostWrite].Allowed, nil
}
