package txn

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"gregor/history"
	"gregor/workloads/kit"
)

// Name is the txn workload's name (--workload, test.json's workload).
const Name = history.WorkloadTxn

// Settings is how the txn workload finds its own settings in the run's one
// configuration (harness.Config implements it): --abort-rate and
// --txn-think.
type Settings interface {
	TxnSettings() (abortRate *float64, think *time.Duration)
}

func own(cfg any) (abortRate float64, think time.Duration) {
	a, t := cfg.(Settings).TxnSettings()
	return *a, *t
}

// Descriptor is the txn workload as the layers above it see it
// (kit.Descriptor).
type Descriptor struct{ kit.Base }

func (Descriptor) Name() string { return Name }
func (Descriptor) Usage() string {
	return "transactional producers, read_committed consumers and a read_uncommitted control; needs --partitions >= --concurrency"
}

func (Descriptor) Flags(fl *pflag.FlagSet, cfg, def any) {
	a, t := cfg.(Settings).TxnSettings()
	da, dt := own(def)
	fl.Float64Var(a, "abort-rate", da, "txn: share of transactions aborted on purpose (0..0.9)")
	fl.DurationVar(t, "txn-think", dt, "txn: pause between a transaction's micro-ops (an application processing between sends; keeps transactions open)")
}

// Offers the faults that act on transactions (their coordinator, their
// producers).
func (Descriptor) Offers(kind string) bool { return history.NemesisClasses(kind)&history.TxnFault != 0 }

func (Descriptor) Coordinator() bool { return true }

// Validate refuses what a transactional producer cannot be; its producers
// are idempotent, and test.json records what ran.
func (Descriptor) Validate(s *kit.Shared, cfg any) error {
	if s.Acks != "all" {
		return fmt.Errorf("--workload txn with --acks %s: a transactional producer is idempotent and needs acks=all (Kafka's ProducerConfig refuses anything else); use --acks all", s.Acks)
	}
	s.Idempotence = true
	t := config(*s, cfg, nil)
	if err := t.Validate(); err != nil {
		return err
	}
	p := *s // the producers' shared bounds, checked on a copy
	return p.Validate(0)
}

func (Descriptor) Unused(cfg any) error {
	if a, _ := own(cfg); a != 0 {
		return fmt.Errorf("--abort-rate %v without --workload txn: only transactions abort", a)
	}
	return nil
}

func (Descriptor) Record(cfg any, r *history.Config) { r.AbortRate, _ = own(cfg) }

// New builds the workload; its transactional producers dial through the
// client links, so the client-link faults act on them (the requests
// KIP-890 is about). The coordinator target and kill-txn-coordinator hit
// its transactional ids' coordinators; pause-producer freezes one of them.
func (Descriptor) New(s kit.Shared, cfg any, env kit.Env) (kit.Workload, kit.Hooks, error) {
	wl, err := New(config(s, cfg, &env), env.History, env.Epoch)
	if err != nil {
		return nil, kit.Hooks{}, err
	}
	ids := TransactionalIDs(s.Producers)
	return wl, kit.Hooks{TransactionalIDs: ids, TxnID: ids[0], PauseProducer: wl.PauseProducer}, nil
}

func config(s kit.Shared, cfg any, env *kit.Env) Config {
	abortRate, think := own(cfg)
	c := Config{Topic: s.Topic, Partitions: s.Partitions, Producers: s.Producers, Consumers: s.Consumers,
		AbortRate: abortRate, Think: think, Rate: s.Rate, RequestTimeout: s.DeliveryTimeout, Seed: s.Seed}
	if env != nil {
		c.Bootstrap, c.Dial = env.Bootstrap, env.Dial
	}
	return c
}
