package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"gregor/runtime/docker"
)

func init() { subcommands = append(subcommands, newCleanCmd) }

// cleanTimeout bounds `gregor clean`: removing a few containers takes seconds.
const cleanTimeout = 2 * time.Minute

func newCleanCmd() *cobra.Command {
	var f docker.Filter
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove containers and networks (and with --images, images) left by crashed runs",
		Long: "Removes every Docker object labelled gregor.managed=true, optionally only those of one\n" +
			"cluster (--cluster) or run (--run), and prints what it removed.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), cleanTimeout)
			defer cancel()
			removed, err := docker.Clean(ctx, f)
			out := cmd.OutOrStdout()
			for _, c := range removed.Containers {
				fmt.Fprintln(out, "removed container", c)
			}
			for _, n := range removed.Networks {
				fmt.Fprintln(out, "removed network", n)
			}
			for _, i := range removed.Images {
				fmt.Fprintln(out, "removed image", i)
			}
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			if removed.Empty() {
				fmt.Fprintln(out, "nothing to clean")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&f.Cluster, "cluster", "", "only objects of this cluster name")
	cmd.Flags().StringVar(&f.Run, "run", "", "only objects of this run id")
	cmd.Flags().BoolVar(&f.Images, "images", false, "also remove gregor-built images (gregor:<hash>)")
	return cmd
}
