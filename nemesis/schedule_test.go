package nemesis

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"gregor/runtime"
)

var topo5 = StaticTopology{IDs: []int32{1, 2, 3, 4, 5}, Leaders: []int32{2, 4, 1}, ControlID: 3}

func planOpts() PlanOptions {
	return PlanOptions{Kinds: Kinds, Interval: 3 * time.Second, Hold: 2 * time.Second, Limit: 30 * time.Minute}
}

func describe(t *testing.T, seed int64, target Target) string {
	t.Helper()
	s, err := Plan(seed, planOpts())
	if err != nil {
		t.Fatal(err)
	}
	ops, err := Describe(context.Background(), s, target, topo5)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The same seed gives the same nemesis operations; another seed does not.
func TestSameSeedSameSchedule(t *testing.T) {
	for _, target := range Targets {
		a, b := describe(t, 42, target), describe(t, 42, target)
		if a != b {
			t.Fatalf("target %s: seed 42 gave two schedules", target)
		}
		if c := describe(t, 43, target); c == a {
			t.Fatalf("target %s: seeds 42 and 43 gave the same schedule", target)
		}
	}
}

// Steps start in order, never overlap, start before the limit, and every
// kind and shape is drawn over a long schedule.
func TestPlanShape(t *testing.T) {
	o := planOpts()
	o.PointSpan = SpanHold // phase-long fault points overlap: TestPlanPointSpanPhase
	s, err := Plan(1, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(s) < 20 {
		t.Fatalf("only %d steps in %v at a %v interval", len(s), o.Limit, o.Interval)
	}
	kinds, shapes := map[Kind]bool{}, map[Shape]bool{}
	var end time.Duration
	for i, st := range s {
		if st.At < end {
			t.Fatalf("step %d at %v starts before the previous fault ended at %v", i, st.At, end)
		}
		if st.At >= o.Limit {
			t.Fatalf("step %d at %v is past the limit", i, st.At)
		}
		if st.Hold < o.Hold/2 || st.Hold >= 3*o.Hold/2 {
			t.Fatalf("step %d hold %v outside [%v, %v)", i, st.Hold, o.Hold/2, 3*o.Hold/2)
		}
		if (st.Kind == Partition) != (st.Shape != "") {
			t.Fatalf("step %d: kind %s with shape %q", i, st.Kind, st.Shape)
		}
		end = st.At + st.Hold
		kinds[st.Kind], shapes[st.Shape] = true, true
	}
	for _, k := range Kinds {
		if !kinds[k] {
			t.Errorf("kind %s never drawn", k)
		}
	}
	for _, sh := range Shapes {
		if !shapes[sh] {
			t.Errorf("shape %s never drawn", sh)
		}
	}
	if s, _ := Plan(1, PlanOptions{Interval: time.Second, Hold: time.Second, Limit: time.Minute}); s != nil {
		t.Fatalf("no kinds gave %d steps", len(s))
	}
}

func TestParse(t *testing.T) {
	ks, err := ParseKinds([]string{"kill", "pause", "kill", " partition"})
	if err != nil || !slices.Equal(ks, []Kind{Kill, Pause, Partition}) {
		t.Fatalf("got %v, %v", ks, err)
	}
	if ks, err := ParseKinds([]string{"none"}); err != nil || ks != nil {
		t.Fatalf("none: %v, %v", ks, err)
	}
	if _, err := ParseKinds([]string{"kil"}); err == nil || !strings.Contains(err.Error(), "choose from kill") {
		t.Fatalf("unknown kind: %v", err)
	}
	if _, err := ParseTarget("leeder"); err == nil || !strings.Contains(err.Error(), "leader") {
		t.Fatalf("unknown target: %v", err)
	}
}

// connected reports whether a and b can talk under groups (runtime.Cuts).
func connected(groups [][]int32, a, b int32) bool {
	return !runtime.Cuts(groups)[a][b]
}

func TestResolveTargets(t *testing.T) {
	ctx := context.Background()
	st := Step{Kind: Kill, Pick: 7}
	cases := []struct {
		target Target
		want   int
	}{{TargetRandom, 1}, {TargetMinority, 2}, {TargetMajority, 3}, {TargetAll, 5}}
	for _, c := range cases {
		a, err := Resolve(ctx, st, c.target, topo5)
		if err != nil || len(a.Nodes) != c.want {
			t.Errorf("%s: nodes %v (%v), want %d", c.target, a.Nodes, err, c.want)
		}
	}
	a, _ := Resolve(ctx, st, TargetLeader, topo5)
	if len(a.Nodes) != 1 || a.Nodes[0] != topo5.Leaders[a.Partition] {
		t.Errorf("leader: %+v", a)
	}
	a, _ = Resolve(ctx, st, TargetController, topo5)
	if !slices.Equal(a.Nodes, []int32{3}) {
		t.Errorf("controller: %+v", a)
	}
	// An unknown leader falls back to a random broker, and says so.
	a, _ = Resolve(ctx, st, TargetLeader, StaticTopology{IDs: []int32{1, 2, 3}, Leaders: []int32{-1}})
	if len(a.Nodes) != 1 || a.Note == "" {
		t.Errorf("unknown leader: %+v", a)
	}
}

func TestResolveShapes(t *testing.T) {
	ctx := context.Background()
	all := topo5.IDs
	for pick := uint64(0); pick < 20; pick++ {
		// isolate-leader: the leader talks to nobody, the rest to each other.
		a, err := Resolve(ctx, Step{Kind: Partition, Shape: IsolateLeader, Pick: pick}, TargetRandom, topo5)
		if err != nil {
			t.Fatal(err)
		}
		leader := topo5.Leaders[a.Partition]
		for _, x := range all {
			for _, y := range all {
				want := x == y || (x != leader && y != leader)
				if connected(a.Groups, x, y) != want {
					t.Fatalf("isolate-leader %d: %d-%d connected=%v", leader, x, y, !want)
				}
			}
		}
		// halves: a side of 2 and a side of 3.
		a, _ = Resolve(ctx, Step{Kind: Partition, Shape: Halves, Pick: pick}, TargetRandom, topo5)
		if len(a.Groups) != 2 || len(a.Groups[0])+len(a.Groups[1]) != 5 || min(len(a.Groups[0]), len(a.Groups[1])) != 2 {
			t.Fatalf("halves: %v", a.Groups)
		}
		// majorities-ring: every node talks to exactly a majority (itself
		// included), and no two nodes see the same set.
		a, _ = Resolve(ctx, Step{Kind: Partition, Shape: MajoritiesRing, Pick: pick}, TargetRandom, topo5)
		views := map[string]bool{}
		for _, x := range all {
			var view []int32
			for _, y := range all {
				if connected(a.Groups, x, y) {
					view = append(view, y)
				}
			}
			if len(view) != 3 {
				t.Fatalf("ring %v: node %d sees %v", a.Groups, x, view)
			}
			b, _ := json.Marshal(view)
			views[string(b)] = true
		}
		if len(views) != 5 {
			t.Fatalf("ring %v: only %d distinct views", a.Groups, len(views))
		}
		// bridge: one node talks to all; the others only to their side.
		a, _ = Resolve(ctx, Step{Kind: Partition, Shape: Bridge, Pick: pick}, TargetRandom, topo5)
		bridges := 0
		for _, x := range all {
			n := 0
			for _, y := range all {
				if connected(a.Groups, x, y) {
					n++
				}
			}
			if n == 5 {
				bridges++
			} else if n != 3 {
				t.Fatalf("bridge %v: node %d sees %d nodes", a.Groups, x, n)
			}
		}
		if bridges != 1 {
			t.Fatalf("bridge %v: %d bridge nodes", a.Groups, bridges)
		}
	}
}

// Controller-only voters go with the majority side of a partition, so an
// isolated leader loses the controller quorum too and is deposed; the ring
// leaves them unlisted (they reach every node). A scenario fault resolves
// to a partition's leader.
func TestResolveVotersAndScenarios(t *testing.T) {
	ctx := context.Background()
	topo := StaticTopology{IDs: []int32{1, 2, 3}, Leaders: []int32{2}, VoterIDs: []int32{4, 5}}
	for pick := uint64(0); pick < 20; pick++ {
		for _, shape := range []Shape{IsolateOne, IsolateLeader, Halves, Bridge} {
			a, err := Resolve(ctx, Step{Kind: Partition, Shape: shape, Pick: pick}, TargetRandom, topo)
			if err != nil {
				t.Fatal(err)
			}
			// The voters' side holds a majority of the brokers (isolate-*:
			// the rest; halves and bridge: the larger side).
			for _, g := range a.Groups {
				if !slices.Contains(g, 4) {
					continue
				}
				if !slices.Contains(g, 5) {
					t.Fatalf("%s: voters split: %v", shape, a.Groups)
				}
				brokers := 0
				for _, id := range g {
					if id <= 3 {
						brokers++
					}
				}
				if brokers < 2 {
					t.Fatalf("%s: voters on a minority side: %v", shape, a.Groups)
				}
			}
			if !connected(a.Groups, 4, 5) {
				t.Fatalf("%s: voters not in any group: %v", shape, a.Groups)
			}
			if shape == IsolateLeader && (connected(a.Groups, 2, 4) || !connected(a.Groups, 1, 4)) {
				t.Fatalf("isolate-leader: leader 2 must be cut from the voters, the rest not: %v", a.Groups)
			}
		}
		a, _ := Resolve(ctx, Step{Kind: Partition, Shape: MajoritiesRing, Pick: pick}, TargetRandom, topo)
		for _, g := range a.Groups {
			if slices.Contains(g, 4) || slices.Contains(g, 5) {
				t.Fatalf("ring lists a voter: %v", a.Groups)
			}
		}
		for _, k := range []Kind{StrandLeader, KIP101} {
			a, err := Resolve(ctx, Step{Kind: k, Pick: pick}, TargetRandom, topo)
			if err != nil || !slices.Equal(a.Nodes, []int32{2}) || a.Partition != 0 {
				t.Fatalf("%s resolves to %+v (%v), want partition 0's leader 2", k, a, err)
			}
		}
	}
}

// TestScheduleCheckCatchesOverlap: a step starting before the previous
// one's hold ended, or a negative time, is refused; Plan's own schedules
// pass.
func TestScheduleCheckCatchesOverlap(t *testing.T) {
	s, err := Plan(7, PlanOptions{Kinds: []Kind{Kill, Partition}, Interval: time.Second, Hold: time.Second, Limit: time.Minute})
	if err != nil || len(s) < 2 {
		t.Fatalf("plan: %d steps, %v", len(s), err)
	}
	for name, bad := range map[string]Schedule{
		"overlap":       {{At: 0, Kind: Kill, Hold: 2 * time.Second}, {At: time.Second, Kind: Kill, Hold: time.Second}},
		"negative hold": {{At: 0, Kind: Kill, Hold: -time.Second}},
	} {
		if bad.Check() == nil {
			t.Errorf("%s: not caught", name)
		}
		if (&Runner{}).Run(context.Background(), bad) == nil {
			t.Errorf("%s: Run accepted it", name)
		}
	}
}
