package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"gregor/checker"
	"gregor/harness"
)

func init() { subcommands = append(subcommands, newCheckCmd) }

// Exit codes of `gregor check`. unknown gets its own code so that CI, which
// treats 0 as a pass, never mistakes a check that could not finish for one.
const (
	checkValid     = 0
	checkForbidden = 1
	checkBadInput  = 2
	checkUnknown   = 3
	// storeFailed: gregor run could not write its store (read-only, disk
	// full); the error names the path. What was written stays readable.
	storeFailed = 4
	// bootFailed: gregor run's cluster did not come up; nothing was
	// tested (harness.BootError). A matrix retries such a cell.
	bootFailed = 5
)

func newCheckCmd() *cobra.Command {
	var (
		configPath  string
		vizDir      string
		maxExamples int
		keyTimeout  time.Duration
		window      int
	)
	cmd := &cobra.Command{
		Use:   "check HISTORY.jsonl",
		Short: "Check a recorded history for lost, duplicated and reordered records",
		Long: `Check reads a history (JSON Lines, DESIGN.md section 4) and prints the result as JSON:
{"valid": true|false|"unknown", "anomalies": {...}, "counts": {...}, "forbidden": {...},
 "allowed": {...}, "linearizability": {...}, "availability": {...}, ...}

The configuration the history was recorded under decides which anomalies are
forbidden (a bug in the system under test) and which are allowed (an unsafe
configuration demonstrated). It is read from --config, else from test.json
beside the history; without either, every anomaly is treated as forbidden and
the output says so. metadata.jsonl beside the history, when there is one,
feeds the under-min-isr-ack check.

A damaged file: the last line of the history or of metadata.jsonl, when it
has no newline and does not parse, is a write a crash cut short; it is
dropped with a warning. Any other line that does not parse is an error naming
the file and the line (exit 2).

Exit status:
  0  valid: no forbidden anomaly, every check finished
  1  a forbidden anomaly was found
  2  unusable input: the line and what is wrong are printed
  3  unknown: nothing forbidden was found, but a check could not finish
     (porcupine's time budget) or the history holds no read; not a pass`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			run, res, err := harness.CheckRun(path, harness.CheckOptions{Config: configPath,
				Checker: checker.Options{MaxExamples: maxExamples, KeyTimeout: keyTimeout, Window: window, OutDir: vizDir}})
			if err != nil {
				return &exitError{checkBadInput, err}
			}
			for _, w := range run.Warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "gregor check: warning: %s\n", w)
			}
			if _, err := cmd.OutOrStdout().Write(append(res.JSON(), '\n')); err != nil {
				return err
			}
			switch res.Valid {
			case checker.ValidTrue:
				return nil
			case checker.ValidFalse:
				names := make([]string, 0, len(res.Forbidden))
				for _, a := range checker.AnomalyNames {
					if _, ok := res.Forbidden[a]; ok {
						names = append(names, fmt.Sprintf("%s (%d)", a, res.Counts[a]))
					}
				}
				return &exitError{checkForbidden, fmt.Errorf("check: INVALID: forbidden anomalies: %s", strings.Join(names, ", "))}
			default:
				return &exitError{checkUnknown, fmt.Errorf("check: valid is UNKNOWN (not a pass): %s", strings.Join(res.UnknownReasons, "; "))}
			}
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "test configuration (test.json); default: test.json beside the history")
	cmd.Flags().StringVar(&vizDir, "viz-dir", "", "directory for porcupine's HTML of nonlinearizable keys; default: the history's directory")
	cmd.Flags().IntVar(&maxExamples, "examples", 8, "examples kept per anomaly")
	cmd.Flags().DurationVar(&keyTimeout, "key-timeout", 30*time.Second, "porcupine time budget per key; a key that runs out is unknown")
	cmd.Flags().IntVar(&window, "window", 256, "operations per porcupine window")
	return cmd
}
