package group

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"gregor/history"
	"gregor/workloads/kit"
	"gregor/workloads/queue"
)

// Name is the group workload's name (--workload, test.json's workload).
const Name = "group"

// Settings is how the group workload finds its own settings in the run's
// one configuration (harness.Config implements it): a Config whose
// Consumers field is ignored, the run's --consumers counts them.
type Settings interface{ GroupConfig() *Config }

func own(cfg any) Config { return *cfg.(Settings).GroupConfig() }

// Descriptor is the group workload as the layers above it see it
// (kit.Descriptor): the queue producers and a consumer group.
type Descriptor struct{ kit.Base }

func (Descriptor) Name() string { return Name }
func (Descriptor) Usage() string {
	return "producers + a consumer group that processes, fails and commits"
}

// ownFlags are the flags that only mean something with --workload group.
var ownFlags = []string{"processing-time", "failure-rate", "failure-handling", "commit-mode",
	"auto-commit-interval", "group-protocol", "assignor", "static", "max-poll-records", "max-poll-interval", "group-session-timeout"}

func (Descriptor) OwnFlags() []string { return ownFlags }

func (Descriptor) Flags(fl *pflag.FlagSet, cfg, def any) {
	g, d := cfg.(Settings).GroupConfig(), own(def)
	fl.DurationVar(&g.ProcessingTime, "processing-time", d.ProcessingTime, "group: time to process one record")
	fl.Float64Var(&g.FailureRate, "failure-rate", d.FailureRate, "group: probability that processing a record fails")
	fl.StringVar(&g.FailureHandling, "failure-handling", d.FailureHandling, "group: swallow (catch and go on, as in seed 002's incident) | retry")
	fl.StringVar(&g.CommitMode, "commit-mode", d.CommitMode, "group: auto (enable.auto.commit as the Java consumer: at the next poll, what the previous polls returned) | auto-greedy (everything polled, on a timer, as seed 002 describes) | before | after (processing) | on-revoked")
	fl.DurationVar(&g.AutoCommitInterval, "auto-commit-interval", d.AutoCommitInterval, "group: auto.commit.interval.ms")
	fl.StringVar(&g.GroupProtocol, "group-protocol", d.GroupProtocol, "group: classic | consumer (KIP-848: the broker assigns)")
	fl.StringVar(&g.Assignor, "assignor", d.Assignor, "group: range | sticky | cooperative-sticky (consumer protocol: range | sticky, the broker's uniform)")
	fl.BoolVar(&g.Static, "static", d.Static, "group: static membership (group.instance.id per consumer, KIP-345)")
	fl.IntVar(&g.MaxPollRecords, "max-poll-records", d.MaxPollRecords, "group: max.poll.records")
	fl.DurationVar(&g.MaxPollInterval, "max-poll-interval", d.MaxPollInterval, "group: max.poll.interval.ms (a slower batch leaves the group)")
	fl.DurationVar(&g.SessionTimeout, "group-session-timeout", d.SessionTimeout, "group: the consumers' session.timeout.ms")
}

// Offers the faults that act on a consumer group's members.
func (Descriptor) Offers(kind string) bool {
	return history.NemesisClasses(kind)&history.GroupFault != 0
}

func (Descriptor) Coordinator() bool { return true }
func (Descriptor) Pipelines() bool   { return true }

// SafeBrokersSuffice is false: a commit mode allows skips and
// redeliveries on any brokers.
func (Descriptor) SafeBrokersSuffice() bool { return false }

// config is the group's settings with the run's consumers, validated on a
// copy: run.json keeps what was given, the defaults are filled each time.
func config(s kit.Shared, cfg any) (Config, error) {
	g := own(cfg)
	g.Consumers = s.Consumers
	return g, g.Validate()
}

func (Descriptor) Validate(s *kit.Shared, cfg any) error {
	if _, err := config(*s, cfg); err != nil {
		return err
	}
	q := queue.Producers(*s, nil, 0)
	return q.Validate()
}

func (Descriptor) Record(cfg any, r *history.Config) {
	g := own(cfg)
	g.Validate() // fills what is unset; cfg is validated
	r.AutoCommit, r.CommitMode = g.HistoryMode()
	if r.AutoCommit {
		r.AutoCommitInterval = history.Duration(g.AutoCommitInterval)
	}
	r.FailureRate, r.FailureHandling = g.FailureRate, g.FailureHandling
	r.GroupProtocol, r.Assignor, r.Static = g.GroupProtocol, g.Assignor, g.Static
	r.ProcessingTime, r.MaxPollRecords = history.Duration(g.ProcessingTime), g.MaxPollRecords
	r.MaxPollInterval = history.Duration(g.MaxPollInterval)
}

// New builds the producers (queue producers without readers: the group's
// consumers take their place) and the group; the coordinator target hits
// the group's coordinator, and the consumer steps restart or add members.
func (Descriptor) New(s kit.Shared, cfg any, env kit.Env) (kit.Workload, kit.Hooks, error) {
	producers := queue.Producers(s, env.Bootstrap, 0)
	producers.Dial = env.Dial
	g, _ := config(s, cfg) // validated with the run
	wl, err := New(producers, g, env.History, env.Epoch)
	if err != nil {
		return nil, kit.Hooks{}, err
	}
	return wl, kit.Hooks{Group: g.Group, Clients: wl.step}, nil
}

// step runs a consumer step of the nemesis (kit.Hooks.Clients).
func (w *Workload) step(ctx context.Context, kind string) ([]int, error) {
	switch kind {
	case history.NemesisConsumerRestart:
		return w.RollingRestart(ctx)
	case history.NemesisConsumerJoin:
		p, err := w.Join(ctx)
		if err != nil {
			return nil, err
		}
		return []int{p}, nil
	}
	return nil, fmt.Errorf("nemesis %s is not a consumer step", kind)
}
