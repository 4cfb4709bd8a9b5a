package harness

import (
	"context"
	"fmt"
	"time"

	"gregor/history"
	"gregor/nemesis"
	"gregor/workloads/group"
	"gregor/workloads/queue"
)

// Workload is what a test drives: clients that write the history while the
// nemesis runs, then a final read of every key.
type Workload interface {
	// Run drives the clients until ctx ends, then waits for the operations
	// in flight.
	Run(ctx context.Context) error
	// FinalRead reads every key from offset 0 to its high watermark.
	FinalRead(ctx context.Context) error
	// Ops counts completed operations, for the progress line.
	Ops() int64
	// Crash is the client-crash nemesis's hook (nemesis.Runner.Crash).
	Crash() (process int, tearDown func(), ok bool)
}

// clientSteps runs the group-only nemesis steps on a workload
// (nemesis.Runner.Clients); nil for workloads without consumer groups.
type clientSteps func(ctx context.Context, k nemesis.Kind) ([]int, error)

// workloadName is the workload test.json records.
func (t *Test) workloadName() string {
	if t.Group != nil {
		return "group"
	}
	return "queue"
}

// validateWorkload refuses nemeses the workload cannot take.
func (t *Test) validateWorkload() error {
	for _, k := range t.Nemesis.Kinds {
		if nemesis.GroupOnly(k) && t.Group == nil {
			return fmt.Errorf("--nemesis %s acts on a consumer group: add --workload group", k)
		}
	}
	return nil
}

// newWorkload builds the test's workload on wcfg (the producers', with
// bootstrap and topic filled in): the group workload when t.Group is set.
func (t *Test) newWorkload(wcfg queue.Config, h *history.Writer, epoch time.Time) (Workload, clientSteps, error) {
	if t.Group == nil {
		wl, err := queue.New(wcfg, h, epoch)
		return wl, nil, err
	}
	gcfg := *t.Group
	gcfg.Queue = wcfg
	wl, err := group.New(gcfg, h, epoch)
	if err != nil {
		return nil, nil, err
	}
	return wl, func(ctx context.Context, k nemesis.Kind) ([]int, error) {
		switch k {
		case nemesis.ConsumerRestart:
			return wl.RollingRestart(ctx)
		case nemesis.ConsumerJoin:
			p, err := wl.Join(ctx)
			if err != nil {
				return nil, err
			}
			return []int{p}, nil
		}
		return nil, fmt.Errorf("nemesis %s is not a consumer step", k)
	}, nil
}
