package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"gregor/history"
)

// RestartStorm kills and restarts a broker many times within one step
// (history.NemesisRestartStorm): each round resolves the target again (a
// partition's leader now, under TargetLeader), kills it, restarts it after
// a downtime shorter than the session timeout (so it is back before the
// controller fences it: a restart that races its own registration, KIP-631
// broker epochs), and waits for every partition's full ISR before the next
// round, so each cut (a power cut on lazyfs) hits a fully replicated log.
const RestartStorm Kind = history.NemesisRestartStorm

// maxStormRounds bounds one storm whatever its hold.
const maxStormRounds = 1000

// defaultSessionTimeout is the session a storm's downtimes are drawn
// against when the runner was not told the cluster's (gregor run's 3 s).
const defaultSessionTimeout = 3 * time.Second

func (r *Runner) sessionTimeout() time.Duration {
	if r.SessionTimeout > 0 {
		return r.SessionTimeout
	}
	return defaultSessionTimeout
}

// stormDowntime draws a round's downtime: a tenth to a half of the session
// timeout.
func stormDowntime(rng *rand.Rand, session time.Duration) time.Duration {
	return session/10 + time.Duration(rng.Int64N(int64(session*4/10)))
}

// storm runs one restart-storm step. Every node it kills is restarted
// before it returns, even when ctx ends.
func (r *Runner) storm(ctx context.Context, st Step, v history.NemesisValue) {
	kind := string(st.Kind)
	c := r.Cluster
	rng := rand.New(rand.NewPCG(st.Pick, 0x73746f726d)) // "storm"
	r.active.Add(1)
	defer r.active.Add(-1)
	r.done.Add(1)
	r.write(kind, v, nil)
	deadline := time.Now().Add(st.Hold)
	rounds := 0
	for rounds < maxStormRounds && ctx.Err() == nil && (rounds == 0 || time.Now().Before(deadline)) {
		a, err := Resolve(ctx, Step{Kind: Kill, Pick: rng.Uint64()}, r.Target, r.Topo)
		down := stormDowntime(rng, r.sessionTimeout())
		round := rounds
		rounds++
		pv := v
		pv.NemesisAction, pv.Round, pv.Hold = a, &round, down.String()
		if err != nil {
			pv.Phase = "resolve"
			r.write(kind, pv, err)
			break
		}
		pv.Phase = "kill"
		pv.Led, pv.LedError = r.led(ctx, a.Nodes)
		r.write(kind, pv, eachNode(ctx, a.Nodes, c.Kill))
		pv.Led, pv.LedError = nil, ""
		// The node comes back whatever ctx says: a storm leaves no node down.
		time.Sleep(down)
		uctx, cancel := r.undoContext(ctx)
		pv.Phase = "start"
		r.write(kind, pv, eachNode(uctx, a.Nodes, c.Start))
		cancel()
		if err := r.waitFullISR(ctx); err != nil {
			pv.Phase = "isr-not-full"
			r.write(kind, pv, err)
		}
	}
	ev := v
	ev.Round = &rounds
	r.write(undoVerb(st.Kind), ev, nil)
}

// waitFullISR waits, bounded by the phase wait, until every partition has
// a leader and its ISR holds every replica; without replica state it
// returns at once.
func (r *Runner) waitFullISR(ctx context.Context) error {
	rt, ok := r.Topo.(replicaTopology)
	if !ok {
		return nil
	}
	deadline := time.Now().Add(r.phaseWait())
	var last error
	for ctx.Err() == nil && time.Now().Before(deadline) {
		last = nil
		for p := range int32(r.Topo.Partitions()) {
			s, err := rt.PartitionState(ctx, p)
			if err != nil {
				last = err
				break
			}
			isr, reps := slices.Clone(s.ISR), slices.Clone(s.Replicas)
			slices.Sort(isr)
			slices.Sort(reps)
			if s.Leader < 0 || !slices.Equal(isr, reps) {
				last = fmt.Errorf("partition %d: leader %d, ISR %v of replicas %v", p, s.Leader, s.ISR, s.Replicas)
				break
			}
		}
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	if last == nil {
		last = ctx.Err()
	}
	return fmt.Errorf("no full ISR within %v: %w", r.phaseWait(), last)
}
