package nemesis

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Oracle replays a candidate schedule and reports whether the run still
// fails the same way. An error is a replay that could not be judged (a
// crashed run): it counts as not failing.
type Oracle func(ctx context.Context, s Schedule) (fails bool, err error)

// ShrinkOptions bound and shape a shrink.
type ShrinkOptions struct {
	// MaxReplays bounds the oracle's calls (> 0). The wall-clock budget is
	// ctx's deadline: when ctx ends, Shrink returns the smallest failing
	// schedule found so far.
	MaxReplays int
	// MinHold is the shortest hold, and MinGap the shortest quiet time
	// before a step, that halving tries (defaults 250 ms).
	MinHold, MinGap time.Duration
	// Log, if set, receives a line per replay.
	Log func(string)
}

// ShrinkResult is what Shrink found.
type ShrinkResult struct {
	// Schedule is the smallest schedule that failed; Found is false when no
	// candidate failed (Schedule is then the input).
	Schedule Schedule
	Found    bool
	// Replays counts the oracle's calls; Exhausted says the budget (replays
	// or ctx) ended the search before it was done.
	Replays   int
	Exhausted bool
}

// Shrink looks for a smaller schedule than s that still fails: first
// delta debugging over its steps (Zeller and Hildebrandt's ddmin: remove
// chunks of steps, then complements, at finer and finer granularity, down
// to a schedule from which no single step can be removed), then halving
// each remaining step's hold and the quiet time before it while the run
// still fails. Steps keep their start times when others are removed, so
// every candidate keeps the schedule's invariants (Schedule.Check).
//
// s is assumed to fail (it is the failing run's schedule); it is not
// replayed. A candidate is never replayed twice. Faults are
// nondeterministic: one failing replay is taken as proof, and the oracle
// may replay a candidate several times before saying it does not fail.
func Shrink(ctx context.Context, s Schedule, oracle Oracle, o ShrinkOptions) (ShrinkResult, error) {
	if o.MaxReplays <= 0 {
		return ShrinkResult{}, fmt.Errorf("shrink: a replay budget of %d: give at least 1", o.MaxReplays)
	}
	if err := s.Check(); err != nil {
		return ShrinkResult{}, err
	}
	if o.MinHold <= 0 {
		o.MinHold = 250 * time.Millisecond
	}
	if o.MinGap <= 0 {
		o.MinGap = 250 * time.Millisecond
	}
	sh := &shrinker{oracle: oracle, o: o, seen: map[string]bool{}, res: ShrinkResult{Schedule: slices.Clone(s)}}
	cur := sh.ddmin(ctx, slices.Clone(s))
	cur = sh.shorten(ctx, cur)
	return sh.res, nil
}

type shrinker struct {
	oracle Oracle
	o      ShrinkOptions
	seen   map[string]bool // candidates replayed, by key, and their verdict
	res    ShrinkResult
}

// key identifies a candidate: its steps with their times.
func key(s Schedule) string {
	var b strings.Builder
	for _, st := range s {
		fmt.Fprintf(&b, "%d/%s/%s/%d/%d/%v;", st.At, st.Kind, st.Shape, st.Hold, st.Pick, st.Point)
	}
	return b.String()
}

// test replays c (once) and records it as the best when it fails. false
// when the budget is spent (res.Exhausted).
func (sh *shrinker) test(ctx context.Context, c Schedule) bool {
	k := key(c)
	if v, ok := sh.seen[k]; ok {
		return v
	}
	if c.Check() != nil {
		return false // not a schedule a run would take: not replayed
	}
	if sh.res.Replays >= sh.o.MaxReplays || ctx.Err() != nil {
		sh.res.Exhausted = true
		return false
	}
	sh.res.Replays++
	fails, err := sh.oracle(ctx, c)
	if ctx.Err() != nil {
		// A replay cut short by the budget proves nothing either way.
		sh.res.Exhausted = true
		return false
	}
	if err != nil {
		fails = false
	}
	sh.seen[k] = fails
	if sh.o.Log != nil {
		verdict := "passes"
		switch {
		case err != nil:
			verdict = "not judged: " + err.Error()
		case fails:
			verdict = "still fails"
		}
		sh.o.Log(fmt.Sprintf("replay %d: %s (%s): %s", sh.res.Replays, c.Size(), kinds(c), verdict))
	}
	if fails && smaller(c, sh.res) {
		sh.res.Schedule, sh.res.Found = slices.Clone(c), true
	}
	return fails
}

// smaller: fewer faults, else less fault time, else an earlier end.
func smaller(c Schedule, r ShrinkResult) bool {
	if !r.Found {
		return true
	}
	a, b := c.Size(), r.Schedule.Size()
	if a.Faults != b.Faults {
		return a.Faults < b.Faults
	}
	if a.FaultTime != b.FaultTime {
		return a.FaultTime < b.FaultTime
	}
	return a.End < b.End
}

// ddmin reduces c to a 1-minimal failing subset of its steps (within the
// budget), and last tries no fault at all.
func (sh *shrinker) ddmin(ctx context.Context, c Schedule) Schedule {
	n := 2
	for len(c) >= 2 && !sh.res.Exhausted {
		chunks := split(c, n)
		reduced := false
		for _, ch := range chunks {
			if sh.test(ctx, ch) {
				c, n, reduced = ch, 2, true
				break
			}
		}
		if !reduced && n > 2 {
			for i := range chunks {
				comp := complement(chunks, i)
				if sh.test(ctx, comp) {
					c, n, reduced = comp, max(n-1, 2), true
					break
				}
			}
		}
		if !reduced {
			if n >= len(c) {
				break
			}
			n = min(2*n, len(c))
		}
	}
	if len(c) == 1 && sh.test(ctx, Schedule{}) {
		c = Schedule{} // the run fails without any fault
	}
	return c
}

// split cuts c into n chunks of (nearly) equal length, in order.
func split(c Schedule, n int) []Schedule {
	var out []Schedule
	start := 0
	for i := range n {
		end := start + (len(c)-start)/(n-i)
		if end > start {
			out = append(out, slices.Clone(c[start:end]))
		}
		start = end
	}
	return out
}

// complement is every chunk but chunks[skip], in order.
func complement(chunks []Schedule, skip int) Schedule {
	var out Schedule
	for i, ch := range chunks {
		if i != skip {
			out = append(out, ch...)
		}
	}
	return out
}

// shorten halves each step's hold, then the quiet time before each step
// (moving it and every later step earlier), while the schedule still fails.
// Both keep a valid schedule valid, composed ones too: shorter holds end
// sooner, and a step moves only into time no earlier step holds.
func (sh *shrinker) shorten(ctx context.Context, c Schedule) Schedule {
	for i := range c {
		for c[i].Hold/2 >= sh.o.MinHold && !sh.res.Exhausted {
			cand := slices.Clone(c)
			cand[i].Hold /= 2
			if !sh.test(ctx, cand) {
				break
			}
			c = cand
		}
	}
	for i := range c {
		for !sh.res.Exhausted {
			// The quiet time before step i: since every earlier step
			// ended (a composed schedule's steps overlap; a step moved
			// into one would break Check, or change the story).
			prevEnd := time.Duration(0)
			for _, p := range c[:i] {
				prevEnd = max(prevEnd, p.At+p.Hold)
			}
			gap := c[i].At - prevEnd
			if gap/2 < sh.o.MinGap {
				break
			}
			cand := slices.Clone(c)
			for j := i; j < len(cand); j++ {
				cand[j].At -= gap / 2
			}
			if !sh.test(ctx, cand) {
				break
			}
			c = cand
		}
	}
	return c
}

// kinds lists c's step kinds in order.
func kinds(c Schedule) string {
	var ks []string
	for _, st := range c {
		ks = append(ks, string(st.Kind))
	}
	return strings.Join(ks, ", ")
}
