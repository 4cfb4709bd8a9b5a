package harness

import (
	"context"
	"errors"
	"time"

	"gregor/history"
	"gregor/runtime"
)

// MaxLinkDelay bounds --link-delay: beyond it a broker's heartbeats and
// fetches would miss the short session and lag timeouts the harness runs
// with, and the delay would become a fault of its own.
const MaxLinkDelay = 500 * time.Millisecond

// ProcessLinkDelay is `gregor run`'s standing link delay on the process
// runtime, the harness's own default (not Kafka's): brokers on one machine
// copy a record within a millisecond, so a leader rarely holds an
// acknowledged tail its followers lack, and the faults that need one find
// nothing (realistic bugs missed 2 of 2 runs without it were caught in 14
// of 18 with it and five records in flight; issue 28). 50 ms is a link
// between zones. The docker runtime has no per-link delay (no netem here),
// so it gets none.
const ProcessLinkDelay = 50 * time.Millisecond

// standingDelay is a cluster whose every link carries a fixed delay for
// the whole test, modelling brokers further apart (another rack or zone).
// It widens the window in which a leader has acknowledged records its
// followers have not fetched yet, the window acks=1 loses data in; on a
// single machine that window is a fraction of a millisecond.
//
// Healing a fault removes every network rule of a node, so the delay is put
// back after each Heal and Unslow (a restarted node keeps its rules: both
// runtimes reapply them on Start). Invariant: outside a fault's own rules,
// every node's links carry exactly d. Not checkable here: the rules live in
// the runtime's network (tc qdiscs in containers or namespaces), which only
// the runtime can read back.
type standingDelay struct {
	runtime.Cluster
	d time.Duration
}

// TakeCommands passes the wrapped cluster's fault commands on
// (runtime.CommandRecorder), so a standing delay does not hide them.
func (s standingDelay) TakeCommands() []history.NemesisCommand {
	if cr, ok := s.Cluster.(runtime.CommandRecorder); ok {
		return cr.TakeCommands()
	}
	return nil
}

func (s standingDelay) all(ctx context.Context) error {
	var errs []error
	for _, n := range s.Nodes() {
		errs = append(errs, s.Cluster.Slow(ctx, n.ID, s.d, 0, 0))
	}
	return errors.Join(errs...)
}

func (s standingDelay) Heal(ctx context.Context) error {
	return errors.Join(s.Cluster.Heal(ctx), s.all(ctx))
}

func (s standingDelay) Unslow(ctx context.Context, id int32) error {
	return errors.Join(s.Cluster.Unslow(ctx, id), s.Cluster.Slow(ctx, id, s.d, 0, 0))
}
