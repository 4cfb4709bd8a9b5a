package main

import (
	"fmt"

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
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, paths []string) error {
			cells, err := reports.ReadResults(paths...)
			if err != nil {
				return &exitError{2, err}
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
