package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"gregor/harness"
)

// groupFlags are the flags that only mean something with --workload group.
var groupFlags = []string{"processing-time", "failure-rate", "failure-handling", "commit-mode",
	"auto-commit-interval", "assignor", "static", "max-poll-records", "max-poll-interval", "group-session-timeout"}

// registerGroup binds `gregor run`'s group workload flags to cfg.Group,
// with def's values as their defaults.
func registerGroup(fl *pflag.FlagSet, cfg *harness.Config, def harness.Config) {
	g, d := &cfg.Group, def.Group
	fl.StringVar(&cfg.Workload, "workload", def.Workload, "queue (producers + assign-based readers) | group (producers + a consumer group that processes, fails and commits) | txn (transactional producers, read_committed consumers and a read_uncommitted control; needs --partitions >= --concurrency) | eos (an input producer and --consumers consume-transform-produce pipelines in one group, GroupTransactSession)")
	fl.DurationVar(&g.ProcessingTime, "processing-time", d.ProcessingTime, "group: time to process one record")
	fl.Float64Var(&g.FailureRate, "failure-rate", d.FailureRate, "group: probability that processing a record fails")
	fl.StringVar(&g.FailureHandling, "failure-handling", d.FailureHandling, "group: swallow (catch and go on, as in seed 002's incident) | retry")
	fl.StringVar(&g.CommitMode, "commit-mode", d.CommitMode, "group: auto (enable.auto.commit as the Java consumer: at the next poll, what the previous polls returned) | auto-greedy (everything polled, on a timer, as seed 002 describes) | before | after (processing) | on-revoked")
	fl.DurationVar(&g.AutoCommitInterval, "auto-commit-interval", d.AutoCommitInterval, "group: auto.commit.interval.ms")
	fl.StringVar(&g.Assignor, "assignor", d.Assignor, "group: range | sticky | cooperative-sticky")
	fl.BoolVar(&g.Static, "static", d.Static, "group: static membership (group.instance.id per consumer, KIP-345)")
	fl.IntVar(&g.MaxPollRecords, "max-poll-records", d.MaxPollRecords, "group: max.poll.records")
	fl.DurationVar(&g.MaxPollInterval, "max-poll-interval", d.MaxPollInterval, "group: max.poll.interval.ms (a slower batch leaves the group)")
	fl.DurationVar(&g.SessionTimeout, "group-session-timeout", d.SessionTimeout, "group: the consumers' session.timeout.ms")
}

// refuseGroupFlags refuses a group flag given without the group workload:
// a setting that would silently mean nothing. Only the command line knows
// which flags were given, so this one check lives here.
func refuseGroupFlags(fl *pflag.FlagSet, workload string) error {
	if workload == harness.WorkloadGroup {
		return nil
	}
	for _, f := range groupFlags {
		if fl.Changed(f) {
			return fmt.Errorf("--%s needs --workload group", f)
		}
	}
	return nil
}
