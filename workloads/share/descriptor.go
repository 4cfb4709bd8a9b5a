// Package share is the share-group workload (KIP-932, --workload share): the
// queue workload's producers, and share consumers that accept, release or
// reject each record (drawn from the seed), crash mid-batch, or stall past
// their acquisition lock, each record's fate in the history
// (history/share.go), checked by checker/share.go.
package share

import (
	"gregor/history"
	"gregor/workloads/kit"
	"gregor/workloads/queue"
)

// Name is the share workload's name (--workload, test.json's workload).
const Name = history.WorkloadShare

// Descriptor is the share workload as the layers above it see it
// (kit.Descriptor): the queue producers and a share group of --consumers.
type Descriptor struct{ kit.Base }

func (Descriptor) Name() string { return Name }
func (Descriptor) Usage() string {
	return "producers + a share group (KIP-932) whose consumers accept, release, reject, crash and stall"
}
func (Descriptor) Pipelines() bool   { return true }
func (Descriptor) Coordinator() bool { return true }

// Offers the share-consumer faults (pause-share-consumer).
func (Descriptor) Offers(kind string) bool {
	return history.NemesisClasses(kind)&history.ShareFault != 0
}

// Validate checks the producers on a copy; the share consumers need one.
func (Descriptor) Validate(s *kit.Shared, _ any) error {
	q := queue.Producers(*s, nil, 0)
	return q.Validate()
}

func (Descriptor) New(s kit.Shared, _ any, env kit.Env) (kit.Workload, kit.Hooks, error) {
	q := queue.Producers(s, env.Bootstrap, 0)
	q.Dial = env.Dial
	w, err := New(q, max(1, s.Consumers), env.History, env.Epoch)
	if err != nil {
		return nil, kit.Hooks{}, err
	}
	return w, kit.Hooks{Group: w.group, ShareGroup: w.group, Clients: w.step}, nil
}
