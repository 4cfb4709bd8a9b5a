package main

import (
	"github.com/spf13/cobra"

	"gregor/runtime/docker/nsfault"
)

func init() { subcommands = append(subcommands, newNsfaultCmd) }

// newNsfaultCmd is run inside a broker's container by the docker runtime
// (docker exec, CAP_NET_ADMIN) to drop packets and slow links in that
// container's network namespace. Its flags are parsed by nsfault.Main so the
// same syntax serves every binary that embeds it.
func newNsfaultCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "nsfault COMMAND [flags]",
		Short: "Inject network faults in this network namespace (nftables drops, netem)",
		Long: "Used by the docker runtime inside each broker container; needs CAP_NET_ADMIN.\n\n" +
			nsfault.Usage,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := nsfault.Main(args, cmd.OutOrStdout()); err != nil {
				return &exitError{code: 1, err: err}
			}
			return nil
		},
	}
}
