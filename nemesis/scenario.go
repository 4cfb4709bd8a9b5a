package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gregor/history"
	"gregor/internal/sleep"
)

// Scenario faults play one known failure story on one partition, phase by
// phase, within a single schedule step. Random single faults reach these
// stories only by luck (they need two faults in the right order, ms apart);
// a scenario makes them happen every time, which is what measuring the
// harness's detection rate needs (`gregor validate`). Each phase is written
// to the history as an info operation whose f is the scenario's name and
// whose value names the phase; the step ends with "end-<name>".
const (
	// StrandLeader cuts a partition's leader off from its followers (broker
	// links only: every node still reaches the controller quorum), waits
	// for the ISR to shrink to the leader, lets it acknowledge writes alone
	// for the hold, then kills it and heals the links. With min ISR 1 those
	// writes exist on the leader only: a clean election must keep the
	// partition offline until the leader returns; an unclean election (or a
	// controller that elects outside the ISR) loses them. With min ISR 2 a
	// correct leader refuses them (NOT_ENOUGH_REPLICAS).
	StrandLeader Kind = history.NemesisStrandLeader
	// KIP101 is the two-failure data-loss scenario of KIP-101: leader A,
	// followers X then Y (replica order). The leader's links are slowed,
	// then Y is cut off from the other
	// brokers (not from the controller) while writes flow, so it holds
	// acknowledged records above its own, lagging, high watermark. A is
	// killed and X elected; Y starts following X's epoch and must keep its
	// log (by leader epoch it has to ask X, which it cannot reach), where a
	// pre-KIP-101 broker truncates it to the HW. X is killed and the links
	// healed: Y, still in the ISR, leads. Needs replica.lag.time.max.ms
	// longer than the scenario (about 3 session timeouts) so Y stays in the
	// ISR, as in the KIP's own timeline.
	KIP101 Kind = history.NemesisKIP101
)

// kip101Lag is the link delay KIP101 puts on the leader before cutting Y
// off: well under replica.lag.time.max.ms and the session timeout, so
// nobody leaves the ISR or loses its session over it.
const kip101Lag = 150 * time.Millisecond

// isScenario reports whether k is a scenario fault.
func isScenario(k Kind) bool { return k == StrandLeader || k == KIP101 }

// phaseWait bounds one scenario phase that waits for the cluster (an ISR
// shrink, an election): long enough for replica.lag.time.max.ms or a
// session timeout of a few seconds, short enough that a correct cluster
// that rightly never elects (an offline partition) does not stall the run.
const defaultPhaseWait = 12 * time.Second

func (r *Runner) phaseWait() time.Duration {
	if r.PhaseWait > 0 {
		return r.PhaseWait
	}
	return defaultPhaseWait
}

// scenario runs one scenario step. v carries the resolved action (the
// partition and its leader). Every node it kills is restarted and every
// link it cut is healed before it returns, even when ctx ends.
func (r *Runner) scenario(ctx context.Context, st Step, v history.NemesisValue) {
	c := r.Cluster
	rt, ok := r.Topo.(replicaTopology)
	if !ok || v.Partition < 0 || len(v.Nodes) != 1 {
		r.write(string(st.Kind), v, fmt.Errorf("scenario %s needs the partition's replicas and leader (got %v)", st.Kind, v.NemesisAction))
		return
	}
	ps, err := rt.PartitionState(ctx, v.Partition)
	if err != nil || ps.Leader != v.Nodes[0] {
		r.write(string(st.Kind), v, fmt.Errorf("partition %d state: leader %d, want %d (%v)", v.Partition, ps.Leader, v.Nodes[0], err))
		return
	}
	leader := ps.Leader
	var followers []int32
	for _, id := range ps.Replicas {
		if id != leader {
			followers = append(followers, id)
		}
	}
	if len(followers) == 0 || (st.Kind == KIP101 && len(followers) < 2) {
		r.write(string(st.Kind), v, fmt.Errorf("partition %d has replicas %v: %s needs more", v.Partition, ps.Replicas, st.Kind))
		return
	}
	r.active.Add(1)
	defer r.active.Add(-1)
	r.done.Add(1)

	var killed []int32
	// phase writes a phase's operation; it reports false once ctx ended
	// (the fault phase is over): the story stops there and is undone.
	phase := func(name string, nodes []int32, groups [][]int32, err error) bool {
		if ctx.Err() != nil {
			return false
		}
		pv := v
		pv.Phase, pv.Nodes, pv.Groups = name, nodes, groups
		r.write(string(st.Kind), pv, err)
		return true
	}
	hold := func(d time.Duration) bool { return sleep.For(ctx, d) }
	kill := func(id int32) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		killed = append(killed, id) // even if Kill errs: it may have happened
		return c.Kill(ctx, id)
	}
	// killPhase kills id in phase name, recording first what it led
	// (history.NemesisValue.Led).
	killPhase := func(name string, id int32) bool {
		if ctx.Err() != nil {
			return false
		}
		pv := v
		pv.Phase, pv.Nodes, pv.Groups = name, []int32{id}, nil
		pv.Led, pv.LedError = r.led(ctx, pv.Nodes)
		r.write(string(st.Kind), pv, kill(id))
		return true
	}
	// waitState polls the partition until ok holds or the phase bound ends;
	// it returns the last state seen and whether ok held.
	waitState := func(ok func(PartitionState) bool) (PartitionState, bool) {
		deadline := time.Now().Add(r.phaseWait())
		var last PartitionState
		for time.Now().Before(deadline) && ctx.Err() == nil {
			qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			s, err := rt.PartitionState(qctx, v.Partition)
			cancel()
			if err == nil {
				last = s
				if ok(s) {
					return s, true
				}
			}
			sleep.For(ctx, 200*time.Millisecond)
		}
		return last, false
	}
	defer func() {
		// Undo whatever ran, whatever ctx says: the next step (or the heal
		// phase) must find every node up and every link whole.
		uctx, cancel := r.undoContext(ctx)
		defer cancel()
		err := errors.Join(c.Heal(uctx), eachNode(uctx, killed, c.Start))
		ev := v
		ev.Nodes = killed
		r.write(undoVerb(st.Kind), ev, err)
	}()

	// A story starts from a whole ISR: its steps assume every follower in
	// it (KIP-101's X must be electable when A dies; a stranded leader's
	// followers are what the ISR shrinks away). A follower the previous
	// story restarted may still be catching up; a story begun then finds
	// no one to elect and proves nothing, so wait for it (bounded).
	if s, whole := waitState(func(s PartitionState) bool { return len(s.ISR) == len(s.Replicas) }); !whole || s.Leader != leader {
		phase("isr-not-whole", s.ISR, nil, fmt.Errorf("partition %d: ISR %v of replicas %v, leader %d (was %d) after %v: story not begun",
			v.Partition, s.ISR, s.Replicas, s.Leader, leader, r.phaseWait()))
		return
	}

	switch st.Kind {
	case StrandLeader:
		groups := [][]int32{{leader}, sorted(followers)}
		if !phase("cut", append([]int32{leader}, followers...), groups, c.Partition(ctx, groups)) {
			return
		}
		s, shrunk := waitState(func(s PartitionState) bool { return slices.Equal(s.ISR, []int32{leader}) })
		if !shrunk && !phase("isr-not-shrunk", []int32{leader}, nil, fmt.Errorf("ISR %v after %v (replica.lag.time.max.ms longer than the wait?)", s.ISR, r.phaseWait())) {
			return
		}
		if !hold(st.Hold) || // the leader acknowledges alone
			!killPhase("kill-leader", leader) ||
			!phase("heal-links", followers, nil, c.Heal(ctx)) {
			return
		}
		s, elected := waitState(func(s PartitionState) bool { return s.Leader >= 0 && s.Leader != leader })
		if elected {
			phase("elected", []int32{s.Leader}, nil, nil)
		} else {
			phase("offline", nil, nil, nil)
		}
		hold(st.Hold)
	case KIP101:
		x, y := followers[0], followers[1]
		// A follower learns the new HW from the response to the fetch
		// that advanced it, so at full speed Y's HW trails the records it
		// holds by one round trip, a record or two. A delay on the leader's
		// links (egress: its fetch responses) keeps every response carrying
		// a new HW in flight for kip101Lag: a cut then almost always finds
		// Y holding acknowledged records above its own HW.
		if !phase("slow-leader", []int32{leader}, nil, c.Slow(ctx, leader, kip101Lag, 0, 0)) || !hold(time.Second) {
			return
		}
		groups := [][]int32{{y}, sorted([]int32{leader, x})}
		if !phase("cut-follower", []int32{y}, groups, c.Partition(ctx, groups)) ||
			!killPhase("kill-leader", leader) {
			return
		}
		if _, ok := waitState(func(s PartitionState) bool { return s.Leader == x }); !ok &&
			!phase("next-not-elected", []int32{x}, nil, fmt.Errorf("%d not elected within %v", x, r.phaseWait())) {
			return
		}
		// Y now follows X's epoch and reconciles its log, unable to reach X.
		if !hold(time.Second) ||
			!killPhase("kill-next", x) ||
			!phase("heal-links", []int32{y}, nil, c.Heal(ctx)) {
			return
		}
		if _, ok := waitState(func(s PartitionState) bool { return s.Leader == y }); ok {
			phase("elected", []int32{y}, nil, nil)
		} else {
			phase("last-not-elected", []int32{y}, nil, fmt.Errorf("%d not elected within %v", y, r.phaseWait()))
		}
		hold(st.Hold)
	}
}

// undoContext is the context of a step's undo: it outlives ctx (the
// time limit's deadline ends the step, whose undo must still run), for at
// most the undo timeout, and ends with Interrupt (the run cut short).
func (r *Runner) undoContext(ctx context.Context) (context.Context, context.CancelFunc) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.undoTimeout())
	if r.Interrupt == nil {
		return uctx, cancel
	}
	if r.Interrupt.Err() != nil {
		cancel() // AfterFunc would cancel asynchronously: a command could start
	}
	stop := context.AfterFunc(r.Interrupt, cancel)
	return uctx, func() { stop(); cancel() }
}

func (r *Runner) undoTimeout() time.Duration {
	if r.UndoTimeout > 0 {
		return r.UndoTimeout
	}
	return 60 * time.Second
}
