package nemesis

import (
	"fmt"
	"math/rand/v2"
	"time"
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
}

// Schedule is a test's faults in start order. Invariant (Check: Plan's
// output and Runner.Run's input): steps do not overlap (each starts after
// the previous one's hold ended), so at most one fault is active at a time
// and every fault is undone before the next.
type Schedule []Step

// Check returns the first broken invariant of s, or nil.
func (s Schedule) Check() error {
	if len(s) > MaxSteps {
		return fmt.Errorf("nemesis schedule of %d steps, at most %d", len(s), MaxSteps)
	}
	for i, st := range s {
		if st.At < 0 || st.Hold < 0 {
			return fmt.Errorf("nemesis step %d: at %v, hold %v: both must be >= 0", i, st.At, st.Hold)
		}
		if i > 0 && st.At < s[i-1].At+s[i-1].Hold {
			return fmt.Errorf("nemesis step %d (%s at %v) starts before step %d (%s) ends at %v",
				i, st.Kind, st.At, i-1, s[i-1].Kind, s[i-1].At+s[i-1].Hold)
		}
	}
	return nil
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
	jitter := func(mean time.Duration) time.Duration {
		return mean/2 + time.Duration(rng.Int64N(int64(mean)))
	}
	var s Schedule
	t := jitter(o.Interval)
	for t < o.Limit && len(s) < MaxSteps {
		st := Step{At: t, Kind: o.Kinds[rng.IntN(len(o.Kinds))], Hold: jitter(o.Hold), Pick: rng.Uint64()}
		if st.Kind == DelayClient {
			st.Hold = max(st.Hold, o.MinDelayHold)
		}
		if st.Kind == Partition {
			shapes := o.Shapes
			if len(shapes) == 0 {
				shapes = Shapes
			}
			st.Shape = shapes[rng.IntN(len(shapes))]
		}
		s = append(s, st)
		t += st.Hold + jitter(o.Interval)
	}
	return s, s.Check()
}
