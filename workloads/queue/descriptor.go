package queue

import (
	"time"

	"gregor/workloads/kit"
)

// Name is the queue workload's name (--workload, test.json's workload).
const Name = "queue"

// Descriptor is the queue workload as the layers above it see it
// (kit.Descriptor): producers and assign-based readers, on the run's shared
// settings alone.
type Descriptor struct{ kit.Base }

func (Descriptor) Name() string    { return Name }
func (Descriptor) Usage() string   { return "producers + assign-based readers" }
func (Descriptor) Pipelines() bool { return true }

// Validate checks the producers and the readers (--consumers) on a copy:
// test.json records the settings as given (max_in_flight 0 stays 0).
func (Descriptor) Validate(s *kit.Shared, _ any) error {
	q := Producers(*s, nil, s.Consumers)
	return q.Validate()
}

func (Descriptor) New(s kit.Shared, _ any, env kit.Env) (kit.Workload, kit.Hooks, error) {
	q := Producers(s, env.Bootstrap, s.Consumers)
	q.Dial = env.Dial
	wl, err := New(q, env.History, env.Epoch)
	return wl, kit.Hooks{}, err
}

// LinkResponseTimeout is the producers' response timeout in a run with
// client-link faults: below the faults' holds, so a producer whose answer
// was lost gives up on its connection and retries to the same broker while
// the fault lasts, the path the faults are there to exercise.
const LinkResponseTimeout = 3 * time.Second

// Producers is the queue producers' config made from the run's shared
// settings, with readers queue readers beside them (the group workload
// builds on these producers with none), seeded from bootstrap.
func Producers(s kit.Shared, bootstrap []string, readers int) Config {
	q := Config{Bootstrap: bootstrap, Topic: s.Topic, Partitions: s.Partitions, Acks: s.Acks,
		Idempotence: s.Idempotence, Retries: s.Retries, MaxInFlight: s.MaxInFlight, DeliveryTimeout: s.DeliveryTimeout, Rate: s.Rate,
		Producers: s.Producers, Consumers: readers, Seed: s.Seed}
	if s.LinkFaults {
		q.ResponseTimeout = max(MinResponseTimeout, min(LinkResponseTimeout, s.DeliveryTimeout))
	}
	return q
}
