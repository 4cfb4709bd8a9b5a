package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"gregor/harness"
	"gregor/workloads/all"
)

// registerWorkloads binds --workload and every registered workload's own
// flags to cfg, with def's values as their defaults.
func registerWorkloads(fl *pflag.FlagSet, cfg *harness.Config, def harness.Config) {
	var usage []string
	for _, d := range all.Workloads.All() {
		usage = append(usage, fmt.Sprintf("%s (%s)", d.Name(), d.Usage()))
	}
	fl.StringVar(&cfg.Workload, "workload", def.Workload, strings.Join(usage, " | "))
	for _, d := range all.Workloads.All() {
		d.Flags(fl, cfg, &def)
	}
}

// refuseOwnFlags refuses a workload's own flag given to a run of another:
// a setting that would silently mean nothing. Only the command line knows
// which flags were given, so this one check lives here.
func refuseOwnFlags(fl *pflag.FlagSet, workload string) error {
	for _, d := range all.Workloads.All() {
		if d.Name() == workload {
			continue
		}
		for _, f := range d.OwnFlags() {
			if fl.Changed(f) {
				return fmt.Errorf("--%s needs --workload %s", f, d.Name())
			}
		}
	}
	return nil
}
