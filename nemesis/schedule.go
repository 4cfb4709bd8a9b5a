package nemesis

import (
	"fmt"
	"math/rand/v2"
	"time"

	"gregor/cluster/faultpoint"
)

// Step is one planned fault. Everything random about it is drawn when the
// schedule is planned, so a seed fixes the whole schedule; only the answers
// of the cluster (who leads a partition now) are read when it runs.
type Step struct {
	// At is when the fault starts, from the start of the fault phase.
	At   time.Duration
	Kind Kind
	// Shape is set for Partition steps only.
	Shape Shape
	// Hold is how long the fault lasts before it is undone.
	Hold time.Duration
	// Pick seeds the choice of nodes (and of the partition whose leader is
	// targeted), so Resolve is a pure function of Pick and the topology.
	Pick uint64
	// Point is what a FaultPoints step arms (faultpoints.go).
	Point PointArm
}

// Schedule is a test's faults in start order. Invariant (Check: Plan's
// output and Runner.Run's input): steps are in start order, and steps of
// one stream (stream: the network faults share one, every other kind is
// its own) do not overlap, so no fault undoes another's effect half-way (a
// partition's heal would lift a slow link's rules). A serial schedule
// (Serial: no two steps overlap at all, Plan without Compose) has at most
// one fault in force at a time, each undone before the next; a composed
// one (PlanOptions.Compose) overlaps faults of different streams, as
// Jepsen's composed nemeses do. Fault-points steps are the exception: they
// add up rather than replace one another (the runner arms the union of the
// steps in force on a node), so theirs may overlap (SpanPhase).
type Schedule []Step

// Check returns the first broken invariant of s, or nil.
func (s Schedule) Check() error {
	if len(s) > MaxSteps {
		return fmt.Errorf("nemesis schedule of %d steps, at most %d", len(s), MaxSteps)
	}
	end := map[string]time.Duration{} // stream -> when its last step ends
	last := map[string]int{}
	for i, st := range s {
		if st.At < 0 || st.Hold < 0 {
			return fmt.Errorf("nemesis step %d: at %v, hold %v: both must be >= 0", i, st.At, st.Hold)
		}
		if i > 0 && st.At < s[i-1].At {
			return fmt.Errorf("nemesis step %d (%s at %v) starts before step %d (%s at %v): steps go in start order",
				i, st.Kind, st.At, i-1, s[i-1].Kind, s[i-1].At)
		}
		k := stream(st.Kind)
		if e, ok := end[k]; ok && st.At < e && st.Kind != FaultPoints {
			j := last[k]
			return fmt.Errorf("nemesis step %d (%s at %v) starts before step %d (%s) ends at %v",
				i, st.Kind, st.At, j, s[j].Kind, e)
		}
		end[k], last[k] = max(end[k], st.At+st.Hold), i
	}
	return nil
}

// Serial reports whether no two steps of s overlap.
func (s Schedule) Serial() bool {
	for i := 1; i < len(s); i++ {
		if s[i].At < s[i-1].At+s[i-1].Hold {
			return false
		}
	}
	return true
}

// MaxSteps bounds a schedule whatever the interval and limit.
const MaxSteps = 10000

// PlanOptions shape a schedule.
type PlanOptions struct {
	Kinds []Kind
	// Interval is the mean quiet gap between one fault's end and the next
	// fault's start; each gap is drawn uniformly from [Interval/2, 3*Interval/2).
	Interval time.Duration
	// Hold is the mean duration of a fault, drawn the same way.
	Hold time.Duration
	// Limit: no fault starts at or after it.
	Limit time.Duration
	// Shapes a partition step draws from (nil: every shape).
	Shapes []Shape
	// MinDelayHold is the shortest hold of a delay-client step: beyond the
	// producers' delivery timeout, so that the held requests arrive after
	// their clients gave up on them.
	MinDelayHold time.Duration
	// Compose lets faults of different streams overlap (a kill during a
	// partition, a pause during a restart): each stream draws its own
	// timeline of Interval gaps and Hold durations (composeTimelines).
	Compose bool
	// Points and PointActions are what a fault-points step draws from
	// (nil: every point; DefaultPointActions).
	Points       []faultpoint.Point
	PointActions []faultpoint.Action
	// PointAfter delays every fault-points step's action after its hit.
	PointAfter time.Duration
	// PointSpan is how long a fault-points step keeps its point armed
	// ("": SpanPhase).
	PointSpan PointSpan
	// PointAims are the aims a fault-points step draws from (nil: the node
	// that reaches the point acts).
	PointAims []faultpoint.Aim
}

// Plan draws a schedule from seed. The same seed and options give the same
// schedule, on any machine (math/rand/v2's PCG is specified).
func Plan(seed int64, o PlanOptions) (Schedule, error) {
	if o.Interval <= 0 || o.Hold <= 0 {
		return nil, fmt.Errorf("nemesis interval %v and hold %v must be positive", o.Interval, o.Hold)
	}
	if len(o.Kinds) == 0 {
		return nil, nil
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6e656d65736973)) // "nemesis"
	if o.Compose {
		s := composeTimelines(rng, o)
		return s, s.Check()
	}
	s := timeline(rng, o, o.Kinds, MaxSteps)
	return s, s.Check()
}

// timeline draws one serial run of steps of kinds from rng: quiet gap,
// fault, quiet gap, ... until o.Limit or max steps.
func timeline(rng *rand.Rand, o PlanOptions, kinds []Kind, maxSteps int) Schedule {
	jitter := func(mean time.Duration) time.Duration {
		return mean/2 + time.Duration(rng.Int64N(int64(mean)))
	}
	var s Schedule
	t := jitter(o.Interval)
	for t < o.Limit && len(s) < maxSteps {
		st := Step{At: t, Kind: kinds[rng.IntN(len(kinds))], Hold: jitter(o.Hold), Pick: rng.Uint64()}
		if st.Kind == DelayClient {
			st.Hold = max(st.Hold, o.MinDelayHold)
		}
		next := st.Hold
		if st.Kind == FaultPoints {
			st.Point = drawPoint(rng, o)
			if o.PointSpan != SpanHold {
				st.Hold, next = max(o.Limit-t, st.Hold), 0 // armed to the phase's end; the next step overlaps it
			}
		}
		if st.Kind == Partition {
			shapes := o.Shapes
			if len(shapes) == 0 {
				shapes = Shapes
			}
			st.Shape = shapes[rng.IntN(len(shapes))]
		}
		s = append(s, st)
		t += next + jitter(o.Interval)
	}
	return s
}
