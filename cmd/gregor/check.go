package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"gregor/checker"
	"gregor/history"
)

func init() { subcommands = append(subcommands, newCheckCmd) }

// Exit codes of `gregor check`. unknown gets its own code so that CI, which
// treats 0 as a pass, never mistakes a check that could not finish for one.
const (
	checkValid     = 0
	checkForbidden = 1
	checkBadInput  = 2
	checkUnknown   = 3
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
		Long: `Check reads a history (JSON Lines, DESIGN section 4) and prints the result as JSON:
{"valid": true|false|"unknown", "anomalies": {...}, "counts": {...}, "forbidden": {...},
 "allowed": {...}, "linearizability": {...}, "availability": {...}, ...}

The configuration the history was recorded under decides which anomalies are
forbidden (a bug in the system under test) and which are allowed (an unsafe
configuration demonstrated). It is read from --config, else from test.json
beside the history; without either, every anomaly is treated as forbidden and
the output says so.

Exit status:
  0  valid: no forbidden anomaly, every check finished
  1  a forbidden anomaly was found
  2  unusable input: the line and what is wrong are printed
  3  unknown: nothing forbidden was found, but a check could not finish
     (porcupine's time budget) or the history holds no read; not a pass`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			cfg, note, err := loadCheckConfig(path, configPath)
			if err != nil {
				return &exitError{checkBadInput, err}
			}
			ops, lines, warnings, err := history.ReadFile(path)
			if err != nil {
				return &exitError{checkBadInput, fmt.Errorf("%s: %w", path, err)}
			}
			for _, w := range warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "gregor check: warning: %s: %s\n", path, w)
			}
			if vizDir == "" {
				vizDir = filepath.Dir(path)
			}
			// metadata.jsonl beside the history, when the run wrote one,
			// feeds the under-min-isr-ack check.
			md, mdWarnings, mdErr := history.ReadMetadataFile(filepath.Join(filepath.Dir(path), history.MetadataFile))
			if mdErr != nil && !errors.Is(mdErr, fs.ErrNotExist) {
				return &exitError{checkBadInput, fmt.Errorf("%s: %w (move it away to check without metadata)", history.MetadataFile, mdErr)}
			}
			for _, w := range mdWarnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "gregor check: warning: %s: %s\n", history.MetadataFile, w)
			}
			res, err := checker.Check(ops, cfg, checker.Options{MaxExamples: maxExamples, KeyTimeout: keyTimeout,
				Window: window, OutDir: vizDir, ConfigNote: note, Metadata: md})
			var ie *checker.InputError
			if errors.As(err, &ie) {
				line := 0
				if ie.Pos >= 0 && ie.Pos < len(lines) {
					line = lines[ie.Pos]
				}
				return &exitError{checkBadInput, fmt.Errorf("%s: line %d: %s", path, line, ie.Error())}
			}
			if err != nil {
				return &exitError{checkBadInput, err}
			}
			res.Warnings = append(warnings, res.Warnings...)
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

// loadCheckConfig finds the configuration: the flag, else test.json beside
// the history, else none.
func loadCheckConfig(historyPath, flag string) (*history.Config, string, error) {
	path := flag
	if path == "" {
		beside := filepath.Join(filepath.Dir(historyPath), "test.json")
		if _, err := os.Stat(beside); err != nil {
			return nil, "none: no --config and no test.json beside the history; every anomaly is treated as forbidden", nil
		}
		path = beside
	}
	cfg, err := history.ReadConfig(path)
	if err != nil {
		return nil, "", fmt.Errorf("config: %w", err)
	}
	return cfg, "from " + path, nil
}
