package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"gregor/cluster/faultpoint"
	"gregor/history"
	"gregor/internal/sleep"
	"gregor/runtime"
)

// FaultPoints arms a named fault point of gregor's own brokers
// (cluster/faultpoint) on the step's target nodes for its hold: the broker
// crashes, stalls, cuts its links or holds a response exactly at that
// protocol step (issue 29, FoundationDB's BUGGIFY).
const FaultPoints Kind = history.NemesisFaultPoints

// PointArm is what a fault-points step arms, drawn from the seed with the
// rest of the schedule: the point, the action, the probability that a hit
// fires, the most firings, and the action's duration (a pause, cut or
// hold; a crash's downtime before the harness restarts the node).
type PointArm struct {
	Point       faultpoint.Point
	Action      faultpoint.Action
	Probability float64
	Max         int
	For         time.Duration
	// After delays the action after the hit (faultpoint.Arm.AfterMs).
	After time.Duration
	// Aim is which node acts ("": the one that reached the point).
	Aim faultpoint.Aim
}

// PointSpan is how long a fault-points step keeps its point armed.
type PointSpan string

const (
	// SpanPhase (the default): from the step's start to the end of the
	// fault phase, at a probability per hit drawn from 1 down to 0.01
	// (phaseProbabilities) and at most Max firings, so a point whose window opens only a few times a run (an
	// ISR re-admission in the second after a restart) is armed whenever it
	// opens. Steps of the fault-points stream overlap; the runner arms the
	// union of those in force on a node.
	SpanPhase PointSpan = "phase"
	// SpanHold: for the step's drawn hold (0.5 to 1.5 times
	// --nemesis-duration), at probability 1, 1/2 or 1/4, one step after
	// another.
	SpanHold PointSpan = "hold"
)

// PointSpans lists every span.
var PointSpans = []PointSpan{SpanPhase, SpanHold}

// phaseProbabilities are a phase-long arming's chances per hit, spaced
// by factors of about 3 to 10 because the points' hit rates are: a point
// hit a few times a run (leader-elected: 9 hits in a 15 s queue run with
// leader kills, most at boot; isr-expand-applied a few after each
// restart) fires at the next window or two at 1 or 0.3, and may not fire
// at all at 0.01; one hit on every acknowledged batch (hw-advanced: ~10^3
// a run) fires at once at 1 and spread over the phase at 0.01.
var phaseProbabilities = []float64{1, 0.3, 0.1, 0.01}

// DefaultPointActions are the actions a fault-points step draws from when
// PlanOptions.PointActions is empty.
var DefaultPointActions = []faultpoint.Action{faultpoint.Crash, faultpoint.Pause, faultpoint.Cut}

// drawPoint draws a step's arming. It consumes rng only for fault-points
// steps, so schedules without them are drawn as before.
// With more than one of o.PointAims it draws the aim last, so schedules
// with one aim are drawn as before.
func drawPoint(rng *rand.Rand, o PlanOptions) PointArm {
	points, actions := o.Points, o.PointActions
	if len(points) == 0 {
		points = faultpoint.Points
	}
	if len(actions) == 0 {
		actions = DefaultPointActions
	}
	probs := phaseProbabilities
	if o.PointSpan == SpanHold {
		probs = []float64{1, 0.5, 0.25}
	}
	p := PointArm{
		Point:       points[rng.IntN(len(points))],
		Action:      actions[rng.IntN(len(actions))],
		Probability: probs[rng.IntN(len(probs))],
		Max:         1 + rng.IntN(3),
		For:         500*time.Millisecond + time.Duration(rng.Int64N(int64(2500*time.Millisecond))),
		After:       o.PointAfter,
	}
	switch len(o.PointAims) {
	case 0:
	case 1:
		p.Aim = o.PointAims[0]
	default:
		p.Aim = o.PointAims[rng.IntN(len(o.PointAims))]
	}
	if p.Aim == faultpoint.AimHit {
		p.Aim = ""
	}
	return p
}

// Check validates an arming read back from a schedule file.
func (p PointArm) Check() error {
	return p.arm("", 0).Check()
}

func (p PointArm) arm(id string, seed uint64) faultpoint.Arm {
	return faultpoint.Arm{ID: id, Point: p.Point, Action: p.Action, Probability: p.Probability, Max: p.Max,
		ForMs: p.For.Milliseconds(), Seed: seed, AfterMs: p.After.Milliseconds(), Aim: p.Aim}
}

// value is the step's fields in its operations.
func (p PointArm) value() history.FaultPointValue {
	return history.FaultPointValue{Point: string(p.Point), Action: string(p.Action), Probability: p.Probability,
		Max: p.Max, For: p.For.String(), After: durationOrEmpty(p.After), Aim: string(p.Aim)}
}

func durationOrEmpty(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// firingPoll is how often a fault-points step reads its nodes' firings.
const firingPoll = 100 * time.Millisecond

// faultPoints runs a FaultPoints step: arm the point on the target nodes,
// write each firing as it is read, restart a node a crash took down after
// the firing's duration, disarm at the end of the hold.
func (r *Runner) faultPoints(ctx context.Context, i int, st Step, v history.NemesisValue) {
	if r.PointTarget != "" {
		a, err := Resolve(ctx, st, r.PointTarget, r.Topo)
		if err != nil {
			r.write(string(st.Kind), v, err)
			return
		}
		v.NemesisAction, v.Target = a, string(r.PointTarget)
	}
	c, ok := r.Cluster.(runtime.FaultPointer)
	fp := pointer{c}
	if !ok {
		r.write(string(st.Kind), v, errors.New("the cluster has no fault points: only gregor's own brokers on a runtime with their control channel do (--runtime process)"))
		return
	}
	arm := st.Point.arm(fmt.Sprintf("step-%d-%x", i, st.Pick), st.Pick)
	seen := map[int32]int{}
	for _, id := range v.Nodes {
		fs, _ := fp.FaultPointFirings(ctx, id)
		seen[id] = len(fs)
	}
	r.active.Add(1)
	defer r.active.Add(-1)
	r.done.Add(1)
	err := eachNode(ctx, v.Nodes, func(ctx context.Context, id int32) error {
		return r.pointArms.update(ctx, id, func(a *pointSet) { a.add(arm) }, fp.armSet)
	})
	r.write(string(st.Kind), v, err)
	fired := 0
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.undoTimeout())
	defer cancel()
	poll := func(ctx context.Context) {
		for _, id := range v.Nodes {
			fs, err := fp.FaultPointFirings(ctx, id)
			if err != nil {
				continue
			}
			for _, f := range fs[min(seen[id], len(fs)):] {
				if f.ID != arm.ID {
					continue
				}
				fired++
				r.writeFiring(i, st, v, f)
				if f.Action == faultpoint.Crash {
					r.restartCrashed(ctx, i, st, v, id, time.Duration(f.ForMs)*time.Millisecond)
				}
			}
			seen[id] = len(fs)
		}
	}
	if err == nil {
		end := time.Now().Add(st.Hold)
		for time.Now().Before(end) && sleep.For(ctx, min(firingPoll, time.Until(end))) {
			poll(ctx)
		}
	}
	derr := eachNode(uctx, v.Nodes, func(ctx context.Context, id int32) error {
		return r.pointArms.update(ctx, id, func(a *pointSet) { a.remove(arm.ID) }, fp.armSet)
	})
	// A firing between the last poll and the disarm is still written.
	time.Sleep(firingPoll)
	poll(uctx)
	v.Fired = &fired
	r.write(undoVerb(st.Kind), v, derr)
}

// pointSet is the arms of the fault-points steps in force on one node, in
// the order they were armed: a node's arming replaces what it had, so each
// step arms the union (SpanPhase steps overlap).
type pointSet []faultpoint.Arm

func (s *pointSet) add(a faultpoint.Arm) { *s = append(*s, a) }

func (s *pointSet) remove(id string) {
	*s = slices.DeleteFunc(*s, func(a faultpoint.Arm) bool { return a.ID == id })
}

// pointer is the cluster's fault points as perNode arms them.
type pointer struct{ runtime.FaultPointer }

func (p pointer) armSet(ctx context.Context, id int32, s pointSet) error {
	return p.ArmFaultPoints(ctx, id, slices.Clone(s))
}

// writeFiring records firing f of step i as a nemesis operation.
func (r *Runner) writeFiring(i int, st Step, v history.NemesisValue, f faultpoint.Firing) {
	fv := v
	fv.Nodes = []int32{f.Node}
	fv.Key, fv.Group, fv.Txn, fv.AboutBroker, fv.HitBy = f.Key(), f.Group, f.Txn, f.Broker, f.HitBy
	at := f.Time - r.Epoch.UnixNano()
	fv.FiredAt = &at
	fv.Action = string(f.Action)
	r.write(history.VerbFaultPointFired, fv, nil)
}

// restartCrashed waits for node id, which a crash at a point took down, to
// be stopped, keeps it down for d, and starts it again.
func (r *Runner) restartCrashed(ctx context.Context, i int, st Step, v history.NemesisValue, id int32, d time.Duration) {
	rv := v
	rv.Nodes = []int32{id}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := r.Cluster.Status(ctx, id)
		if err == nil && s == runtime.StateStopped {
			break
		}
		if time.Now().After(deadline) {
			r.write(history.VerbFaultPointRestart, rv, fmt.Errorf("node %d did not stop after its crash point fired (status %v, %v)", id, s, err))
			return
		}
		if !sleep.For(ctx, 50*time.Millisecond) {
			break
		}
	}
	sleep.For(ctx, d)
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.undoTimeout())
	defer cancel()
	r.write(history.VerbFaultPointRestart, rv, r.Cluster.Start(uctx, id))
}

// ParsePoints parses --fault-points values (nothing: every point).
func ParsePoints(names []string) ([]faultpoint.Point, error) {
	var out []faultpoint.Point
	for _, n := range names {
		p := faultpoint.Point(n)
		if n == "" {
			continue
		}
		if !faultpoint.Known(p) {
			return nil, fmt.Errorf("unknown fault point %q: choose from %v", n, faultpoint.Points)
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}
