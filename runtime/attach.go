package runtime

import (
	"context"

	"gregor/history"
)

// Attached is a runtime that boots nothing: the cluster exists already and
// is reached through its bootstrap servers (runtime/external). The harness
// probes it before validating a run, because the run's shape (how many
// brokers) is the cluster's, not a flag's.
type Attached interface {
	Runtime
	// Probe asks the cluster, with a bounded wait, for its brokers. An error
	// names the setting to fix (a bootstrap that does not answer, a fault
	// file naming a node the cluster does not have).
	Probe(ctx context.Context) ([]NodeInfo, error)
	// CheckFaults refuses nemesis kinds (history's vocabulary) the runtime
	// has no way to inject, naming what to add.
	CheckFaults(kinds []string) error
}

// ForeignBrokers is implemented by runtimes whose brokers do not take
// gregor's broker flags (an image spec, an external cluster): the harness
// reads the settings its theory needs (min.insync.replicas, unclean leader
// election, replica.lag.time.max.ms) back from the cluster with
// DescribeConfigs instead of trusting the flags.
type ForeignBrokers interface {
	ForeignBrokers() bool
}

// IsForeign reports whether r's brokers are foreign (ForeignBrokers).
func IsForeign(r Runtime) bool {
	f, ok := r.(ForeignBrokers)
	return ok && f.ForeignBrokers()
}

// CommandRecorder is a cluster whose faults are commands (the external
// runtime's fault file): the nemesis takes the results of the commands run
// since the last call and records them with the operation (DESIGN.md
// section 4, "commands").
type CommandRecorder interface {
	TakeCommands() []history.NemesisCommand
}
