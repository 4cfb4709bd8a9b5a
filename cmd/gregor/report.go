package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"gregor/reports"
)

func init() { subcommands = append(subcommands, reportCmd) }

func reportCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "report", Short: "Work with matrix reports"}
	var out, title string
	merge := &cobra.Command{
		Use:   "merge --out DIR SHARD/results.json...",
		Short: "Join the results of matrix shards into one report (index.html, results.json, junit.xml)",
		Long: `Merge reads each shard's results.json and writes one index.html,
results.json and junit.xml into --out, ordered exactly as an unsharded run.
Each shard's runs/ folder (the runs' own reports and histories, beside its
results.json) is copied into --out/runs so the index's links resolve.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, paths []string) error {
			cells, err := reports.ReadResults(paths...)
			if err != nil {
				return &exitError{2, err}
			}
			for _, p := range paths {
				if err := copyRuns(filepath.Join(filepath.Dir(p), "runs"), filepath.Join(out, "runs")); err != nil {
					return fmt.Errorf("copying %s's runs: %w", p, err)
				}
			}
			if err := reports.WriteMatrix(out, title, cells); err != nil {
				return err
			}
			failed := 0
			for _, c := range cells {
				if c.Failed() {
					failed++
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "merged %d cells from %d shards into %s/index.html (%d failed)\n", len(cells), len(paths), out, failed)
			return nil
		},
	}
	merge.Flags().StringVar(&out, "out", "reports", "output directory")
	merge.Flags().StringVar(&title, "title", "gregor matrix", "report title")
	cmd.AddCommand(merge)
	return cmd
}

// copyRuns copies a shard's runs folder into dst (cell ids are unique across
// shards, so a file already there means dst holds an earlier merge). A
// missing src is fine: the shard may have been moved without its runs.
// Copying a folder onto itself is a no-op.
func copyRuns(src, dst string) error {
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	as, err1 := filepath.Abs(src)
	ad, err2 := filepath.Abs(dst)
	if err1 == nil && err2 == nil && as == ad {
		return nil
	}
	err := os.CopyFS(dst, os.DirFS(src))
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s already holds these runs; merge into an empty --out", err, dst)
	}
	return err
}
