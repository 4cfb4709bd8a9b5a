package nemesis

import (
	"context"
	"slices"
	"testing"
	"time"
)

// sixteen is a schedule of 16 kills, one every 5 s, each held 4 s; step i
// has Pick i.
func sixteen() Schedule {
	var s Schedule
	for i := range 16 {
		s = append(s, Step{At: time.Duration(i)*5*time.Second + time.Second, Kind: Kill, Hold: 4 * time.Second, Pick: uint64(i)})
	}
	return s
}

func picks(s Schedule) []uint64 {
	var out []uint64
	for _, st := range s {
		out = append(out, st.Pick)
	}
	return out
}

// find returns the step with pick p.
func find(s Schedule, p uint64) (Step, bool) {
	for _, st := range s {
		if st.Pick == p {
			return st, true
		}
	}
	return Step{}, false
}

// A synthetic bug that needs two faults, steps 3 and 11, the first held at
// least 1 s: ddmin finds exactly those two, halving shortens step 3's hold
// to 1 s (4 s -> 2 s -> 1 s; 0.5 s passes) and step 11's to the minimum, and
// halving the quiet times moves both earlier. Every candidate the oracle
// saw was a valid schedule, and none twice.
func TestShrinkFindsTheTwoFaultsThatMatter(t *testing.T) {
	seen := map[string]bool{}
	oracle := func(_ context.Context, s Schedule) (bool, error) {
		if err := s.Check(); err != nil {
			t.Fatalf("candidate breaks the schedule's invariants: %v", err)
		}
		k := key(s)
		if seen[k] {
			t.Fatalf("candidate replayed twice: %v", picks(s))
		}
		seen[k] = true
		a, ok3 := find(s, 3)
		_, ok11 := find(s, 11)
		return ok3 && ok11 && a.Hold >= time.Second, nil
	}
	orig := sixteen()
	res, err := Shrink(context.Background(), orig, oracle, ShrinkOptions{MaxReplays: 200})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Found || res.Exhausted {
		t.Fatalf("found %v, exhausted %v after %d replays", res.Found, res.Exhausted, res.Replays)
	}
	if got := picks(res.Schedule); !slices.Equal(got, []uint64{3, 11}) {
		t.Fatalf("shrunk to steps %v, want [3 11]", got)
	}
	a, _ := find(res.Schedule, 3)
	b, _ := find(res.Schedule, 11)
	if a.Hold != time.Second || b.Hold != 250*time.Millisecond {
		t.Errorf("holds %v and %v, want 1s and 250ms", a.Hold, b.Hold)
	}
	before, after := orig.Size(), res.Schedule.Size()
	if after.End >= before.End/2 || a.At >= 16*time.Second {
		t.Errorf("the quiet times were not shortened: %s (step 3 at %v), from %s", after, a.At, before)
	}
	t.Logf("%d replays: %s -> %s", res.Replays, before, after)
}

// The replay budget ends the search: the result is the smallest schedule
// that failed within it (still failing), and says the budget ran out.
func TestShrinkStopsAtItsBudget(t *testing.T) {
	calls := 0
	oracle := func(_ context.Context, s Schedule) (bool, error) {
		calls++
		_, ok := find(s, 5)
		return ok, nil
	}
	res, err := Shrink(context.Background(), sixteen(), oracle, ShrinkOptions{MaxReplays: 3})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 3 || res.Replays != 3 || !res.Exhausted {
		t.Fatalf("%d oracle calls, %d replays, exhausted %v: want 3, 3, true", calls, res.Replays, res.Exhausted)
	}
	if !res.Found || len(res.Schedule) >= 16 {
		t.Fatalf("found %v, %d steps: want a smaller failing schedule", res.Found, len(res.Schedule))
	}
	if _, ok := find(res.Schedule, 5); !ok {
		t.Fatalf("the result %v does not fail", picks(res.Schedule))
	}
	// A cancelled context ends it the same way, with what it had.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, _ = Shrink(ctx, sixteen(), oracle, ShrinkOptions{MaxReplays: 100})
	if res.Found || !res.Exhausted || res.Replays != 0 {
		t.Fatalf("cancelled: %+v", res)
	}
}

// A replay that errs (a crashed run) counts as not failing; a run that
// fails without faults shrinks to the empty schedule; nothing failing
// leaves Found false and the input.
func TestShrinkEdges(t *testing.T) {
	crash := func(_ context.Context, s Schedule) (bool, error) { return true, context.DeadlineExceeded }
	res, _ := Shrink(context.Background(), sixteen(), crash, ShrinkOptions{MaxReplays: 50})
	if res.Found || len(res.Schedule) != 16 {
		t.Fatalf("crashing replays: found %v, %d steps", res.Found, len(res.Schedule))
	}
	always := func(context.Context, Schedule) (bool, error) { return true, nil }
	res, _ = Shrink(context.Background(), sixteen(), always, ShrinkOptions{MaxReplays: 50})
	if !res.Found || len(res.Schedule) != 0 {
		t.Fatalf("a run that fails without faults: %d steps left", len(res.Schedule))
	}
	if _, err := Shrink(context.Background(), sixteen(), always, ShrinkOptions{}); err == nil {
		t.Fatal("no replay budget accepted")
	}
}

// A composed schedule (faults of different streams overlap) shrinks
// through valid schedules only: every candidate the oracle sees passes
// Check, and the step that matters is found and moved earlier.
func TestShrinkComposedSchedule(t *testing.T) {
	s, err := Plan(3, PlanOptions{Kinds: []Kind{Kill, Pause, Partition}, Interval: 2 * time.Second, Hold: 3 * time.Second,
		Limit: 40 * time.Second, Compose: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Serial() || len(s) < 6 {
		t.Fatalf("the plan is not composed (%d steps, serial %v): the test would show nothing", len(s), s.Serial())
	}
	target := s[len(s)-2]
	oracle := func(_ context.Context, c Schedule) (bool, error) {
		if err := c.Check(); err != nil {
			t.Fatalf("invalid candidate: %v", err)
		}
		_, ok := find(c, target.Pick)
		return ok, nil
	}
	res, err := Shrink(context.Background(), s, oracle, ShrinkOptions{MaxReplays: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Schedule) != 1 || res.Schedule[0].Pick != target.Pick || res.Schedule[0].At >= target.At {
		t.Fatalf("shrunk to %v, want the step at %v alone, earlier", res.Schedule.Steps(), target.At)
	}
}
