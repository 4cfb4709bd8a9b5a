// Command gregor is a Jepsen-style fault-injection harness for Kafka-protocol
// replicated logs. One static binary: the brokers under test (`gregor broker`),
// the harness that boots and breaks them, the checker and the reports.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// exitError carries a process exit code through cobra without printing usage:
// `gregor check` exits 1 for a forbidden anomaly and 2 for unusable input.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "gregor",
		Short:         "Fault-injection harness for Kafka-protocol replicated logs",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, add := range subcommands {
		root.AddCommand(add())
	}
	return root
}

// subcommands is filled by each command's file in its init, so a command
// lives in one file and main.go does not change when one is added.
var subcommands []func() *cobra.Command

func main() {
	if err := newRoot().Execute(); err != nil {
		code := 1
		if ee, ok := err.(*exitError); ok {
			code = ee.code
			if ee.err == nil {
				os.Exit(code) // said already (a gregor-sim child's own output)
			}
		}
		fmt.Fprintln(os.Stderr, "gregor:", err)
		os.Exit(code)
	}
}
