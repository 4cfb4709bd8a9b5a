package eos

import (
	"fmt"

	"gregor/history"
	"gregor/workloads/kit"
)

// Name is the eos workload's name (--workload, test.json's workload).
const Name = history.WorkloadEOS

// Descriptor is the eos workload as the layers above it see it
// (kit.Descriptor): --consumers are its pipelines, --rate its input.
type Descriptor struct{ kit.Base }

func (Descriptor) Name() string { return Name }
func (Descriptor) Usage() string {
	return "an input producer and --consumers consume-transform-produce pipelines in one group, GroupTransactSession"
}

// Offers the transaction faults but pause-producer: its producers are the
// pipelines' own, inside GroupTransactSession.
func (Descriptor) Offers(kind string) bool {
	return history.NemesisClasses(kind)&history.TxnFault != 0 && kind != history.NemesisPauseProducer
}

func (Descriptor) Coordinator() bool { return true }

// Validate refuses what transactional producers cannot be; they are
// idempotent, and test.json records what ran.
func (Descriptor) Validate(s *kit.Shared, _ any) error {
	if s.Acks != "all" {
		return fmt.Errorf("--workload eos with --acks %s: transactional producers need acks=all; use --acks all", s.Acks)
	}
	s.Idempotence = true
	e := config(*s, nil)
	if err := e.Validate(); err != nil {
		return err
	}
	p := *s // the producers' shared bounds, checked on a copy
	return p.Validate(0)
}

// New builds the pipelines; the coordinator target hits their group's
// coordinator, kill-txn-coordinator their transactional ids'.
func (Descriptor) New(s kit.Shared, _ any, env kit.Env) (kit.Workload, kit.Hooks, error) {
	wl, err := New(config(s, &env), env.History, env.Epoch)
	if err != nil {
		return nil, kit.Hooks{}, err
	}
	ids := TransactionalIDs(s.Consumers)
	return wl, kit.Hooks{Group: Group, TransactionalIDs: ids, TxnID: ids[0]}, nil
}

func config(s kit.Shared, env *kit.Env) Config {
	c := Config{Topic: s.Topic, Partitions: s.Partitions, RF: s.RF, MinISR: s.MinISR, Pipelines: s.Consumers, Rate: s.Rate, Seed: s.Seed}
	if env != nil {
		c.Bootstrap, c.Dial = env.Bootstrap, env.Dial
	}
	return c
}
