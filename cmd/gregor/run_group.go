package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"gregor/harness"
	"gregor/history"
	"gregor/nemesis"
	"gregor/workloads/group"
	"gregor/workloads/queue"
)

// groupOpts are `gregor run`'s flags for --workload group.
type groupOpts struct {
	workload        string
	processingTime  time.Duration
	failureRate     float64
	failureHandling string
	commitMode      string
	autoInterval    time.Duration
	assignor        string
	static          bool
	maxPollRecords  int
	maxPollInterval time.Duration
	sessionTimeout  time.Duration
}

// groupFlags are the flags that only mean something with --workload group.
var groupFlags = []string{"processing-time", "failure-rate", "failure-handling", "commit-mode",
	"auto-commit-interval", "assignor", "static", "max-poll-records", "max-poll-interval", "group-session-timeout"}

func (g *groupOpts) register(fl *pflag.FlagSet) {
	fl.StringVar(&g.workload, "workload", "queue", "queue (producers + assign-based readers) | group (producers + a consumer group that processes, fails and commits)")
	fl.DurationVar(&g.processingTime, "processing-time", 2*time.Millisecond, "group: time to process one record")
	fl.Float64Var(&g.failureRate, "failure-rate", 0, "group: probability that processing a record fails")
	fl.StringVar(&g.failureHandling, "failure-handling", "swallow", "group: swallow (catch and go on, as in seed 002's incident) | retry")
	fl.StringVar(&g.commitMode, "commit-mode", "auto", "group: auto (enable.auto.commit as the Java consumer: at the next poll, what the previous polls returned) | auto-greedy (everything polled, on a timer, as seed 002 describes) | before | after (processing) | on-revoked")
	fl.DurationVar(&g.autoInterval, "auto-commit-interval", 5*time.Second, "group: auto.commit.interval.ms")
	fl.StringVar(&g.assignor, "assignor", "range", "group: range | sticky | cooperative-sticky")
	fl.BoolVar(&g.static, "static", false, "group: static membership (group.instance.id per consumer, KIP-345)")
	fl.IntVar(&g.maxPollRecords, "max-poll-records", 50, "group: max.poll.records")
	fl.DurationVar(&g.maxPollInterval, "max-poll-interval", 30*time.Second, "group: max.poll.interval.ms (a slower batch leaves the group)")
	fl.DurationVar(&g.sessionTimeout, "group-session-timeout", 6*time.Second, "group: the consumers' session.timeout.ms")
}

// validate refuses group settings without the group workload, and the
// group workload's impossible settings, before anything boots.
func (g *groupOpts) validate(fl *pflag.FlagSet, r *runOpts, kinds []nemesis.Kind) error {
	switch g.workload {
	case "queue":
		for _, f := range groupFlags {
			if fl.Changed(f) {
				return fmt.Errorf("--%s needs --workload group", f)
			}
		}
		for _, k := range kinds {
			if nemesis.GroupOnly(k) {
				return fmt.Errorf("--nemesis %s acts on a consumer group: add --workload group", k)
			}
		}
		return nil
	case "group":
	default:
		return fmt.Errorf("--workload %q: give queue or group", g.workload)
	}
	if r.consumers < 1 {
		return fmt.Errorf("--consumers %d: the group workload needs at least 1 consumer", r.consumers)
	}
	cfg := g.config(r)
	cfg.Queue.Bootstrap, cfg.Queue.Acks, cfg.Queue.Idempotence = []string{"validate"}, r.acks, r.idempotence
	return cfg.Validate()
}

func (g *groupOpts) config(r *runOpts) group.Config {
	return group.Config{Consumers: r.consumers, ProcessingTime: g.processingTime, FailureRate: g.failureRate,
		FailureHandling: g.failureHandling, CommitMode: g.commitMode, AutoCommitInterval: g.autoInterval,
		Assignor: g.assignor, Static: g.static, MaxPollRecords: g.maxPollRecords,
		MaxPollInterval: g.maxPollInterval, SessionTimeout: g.sessionTimeout, Queue: queue.Config{Partitions: r.partitions}}
}

// apply turns the test into a group test: the consumers move to the group,
// and test.json records the group settings the checker's theory reads.
func (g *groupOpts) apply(fl *pflag.FlagSet, r *runOpts, test *harness.Test) {
	if g.workload != "group" {
		return
	}
	cfg := g.config(r)
	test.Workload.Consumers = 0
	cfg.Queue = queue.Config{} // the harness passes test.Workload, the producers'
	test.Group = &cfg
	c := &test.Config
	c.AutoCommit, c.CommitMode = cfg.HistoryMode()
	if c.AutoCommit {
		c.AutoCommitInterval = history.Duration(cfg.AutoCommitInterval)
	}
	c.FailureRate, c.FailureHandling = cfg.FailureRate, cfg.FailureHandling
	c.Assignor, c.Static = cfg.Assignor, cfg.Static
	c.ProcessingTime, c.MaxPollRecords = history.Duration(cfg.ProcessingTime), cfg.MaxPollRecords
	c.MaxPollInterval = history.Duration(cfg.MaxPollInterval)
	if !fl.Changed("name") {
		test.Name = "group"
	}
}
