package nemesis

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"gregor/cluster/faultpoint"
	"gregor/history"
	"gregor/runtime"
)

// A fault-points step is drawn only where the kind is, from the seed, and
// schedules without the kind are drawn as before.
func TestPlanDrawsFaultPoints(t *testing.T) {
	o := PlanOptions{Kinds: []Kind{Kill, Pause}, Interval: time.Second, Hold: time.Second, Limit: 30 * time.Second}
	before, err := Plan(7, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range before {
		if st.Point != (PointArm{}) {
			t.Fatalf("a %s step carries a fault point", st.Kind)
		}
	}
	o.Kinds = []Kind{FaultPoints}
	o.Points = []faultpoint.Point{faultpoint.ISRExpandApplied, faultpoint.HWAdvanced}
	a, _ := Plan(7, o)
	b, _ := Plan(7, o)
	if len(a) == 0 || !slices.Equal(a, b) {
		t.Fatalf("same seed, different schedules:\n%v\n%v", a, b)
	}
	for _, st := range a {
		if !slices.Contains(o.Points, st.Point.Point) || !slices.Contains(DefaultPointActions, st.Point.Action) || st.Point.Check() != nil {
			t.Fatalf("drew %+v", st.Point)
		}
	}
	// The schedule file keeps the arming, and reads it back.
	f := RecordSchedule(a, 7, TargetLeader, []int32{1, 2, 3}, nil, nil)
	back, err := f.Schedule()
	if err != nil || !slices.Equal(back, a) {
		t.Fatalf("schedule.json round trip: %v\n%v\n%v", err, a, back)
	}
	f.Steps[0].FaultPoint = nil
	if _, err := f.Schedule(); err == nil {
		t.Fatal("a fault-points step without its arming read back")
	}
	if k1, k2 := key(a[:1]), key(Schedule{{At: a[0].At, Kind: a[0].Kind, Hold: a[0].Hold, Pick: a[0].Pick}}); k1 == k2 {
		t.Fatal("shrinking's key ignores the armed point")
	}
}

// pointCluster carries fault points in this process: every node's handlers
// are the registry's, a crash stops the node.
type pointCluster struct {
	fakeCluster
	pmu     sync.Mutex
	firings map[int32][]faultpoint.Firing
	stopped map[int32]bool
}

func newPointCluster() *pointCluster {
	c := &pointCluster{firings: map[int32][]faultpoint.Firing{}, stopped: map[int32]bool{}}
	for _, n := range c.Nodes() {
		id := n.ID
		faultpoint.Install(id, faultpoint.Handlers{
			Crash: func() { c.pmu.Lock(); c.stopped[id] = true; c.pmu.Unlock() },
			Record: func(f faultpoint.Firing) error {
				c.pmu.Lock()
				defer c.pmu.Unlock()
				c.firings[id] = append(c.firings[id], f)
				return nil
			},
		})
	}
	return c
}

func (c *pointCluster) close() {
	for _, n := range c.Nodes() {
		faultpoint.Uninstall(n.ID)
	}
}

func (c *pointCluster) ArmFaultPoints(_ context.Context, id int32, arms []faultpoint.Arm) error {
	c.pmu.Lock()
	fired := faultpoint.Counts(c.firings[id])
	c.pmu.Unlock()
	return faultpoint.Set(id, arms, fired)
}

func (c *pointCluster) FaultPointFirings(_ context.Context, id int32) ([]faultpoint.Firing, error) {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	return slices.Clone(c.firings[id]), nil
}

func (c *pointCluster) Status(_ context.Context, id int32) (runtime.NodeState, error) {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.stopped[id] {
		return runtime.StateStopped, nil
	}
	return runtime.StateRunning, nil
}

func (c *pointCluster) Start(ctx context.Context, id int32) error {
	c.pmu.Lock()
	delete(c.stopped, id)
	c.pmu.Unlock()
	return c.note("start", id)
}

// The runner arms the drawn point on the target (the leader), writes each
// firing with what it fired for, restarts a node a crash took down, and
// disarms at the end; a cluster without points refuses the step.
func TestRunnerArmsFaultPoints(t *testing.T) {
	c := newPointCluster()
	defer c.close()
	var buf bytes.Buffer
	h := history.NewWriter(&buf, 0)
	r := &Runner{Cluster: c, Topo: StaticTopology{IDs: []int32{1, 2, 3}, Leaders: []int32{2}}, History: h, Epoch: time.Now(),
		Target: TargetLeader, UndoTimeout: 5 * time.Second}
	st := Step{At: 0, Kind: FaultPoints, Hold: 800 * time.Millisecond, Pick: 9,
		Point: PointArm{Point: faultpoint.ISRExpandApplied, Action: faultpoint.Crash, Max: 1, For: 50 * time.Millisecond}}
	done := make(chan struct{})
	go func() { r.Run(context.Background(), Schedule{st}); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for len(faultpoint.Armed(2)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the point was not armed on the leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(faultpoint.Armed(1)) != 0 || len(faultpoint.Armed(3)) != 0 {
		t.Fatal("armed on a node the step did not target")
	}
	faultpoint.Hit(faultpoint.ISRExpandApplied, faultpoint.Attrs{Node: 2, Topic: "t", Partition: 0})
	faultpoint.Hit(faultpoint.ISRExpandApplied, faultpoint.Attrs{Node: 2, Topic: "t", Partition: 0}) // Max 1
	<-done
	if len(faultpoint.Armed(2)) != 0 {
		t.Fatal("the step's end left the point armed")
	}
	h.Flush()
	ops, _, _, err := history.ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, op := range ops {
		verbs = append(verbs, op.F)
		v, _ := history.ParseNemesis(&op)
		if op.F == history.VerbFaultPointFired && (v.Point != string(faultpoint.ISRExpandApplied) || v.Key != "t/0" || !slices.Equal(v.Nodes, []int32{2}) || v.Action != "crash") {
			t.Errorf("firing %s", op.Raw)
		}
		if op.F == "end-fault-points" && (v.Fired == nil || *v.Fired != 1) {
			t.Errorf("end %s", op.Raw)
		}
		if op.Error != "" {
			t.Errorf("%s: %s", op.F, op.Error)
		}
	}
	want := []string{"fault-points", "fault-point-fired", "fault-point-restart", "end-fault-points"}
	if !slices.Equal(verbs, want) || !slices.Contains(c.events, "start 2") {
		t.Fatalf("verbs %v, want %v; events %v", verbs, want, c.events)
	}

	// A cluster without points: the step is written with the refusal.
	buf.Reset()
	r2 := &Runner{Cluster: &fakeCluster{}, Topo: StaticTopology{IDs: []int32{1}, Leaders: []int32{1}}, History: h, Epoch: time.Now()}
	r2.Run(context.Background(), Schedule{st})
	if r2.Failed() != 1 {
		t.Fatal("a cluster without fault points took a fault-points step")
	}
}

// By default a fault-points step keeps its point armed to the end of the
// fault phase at a small probability: the stream's steps overlap (the
// schedule is not serial, and still checks), the other kinds' steps are
// drawn as with held points, and the aims drawn are the ones given.
func TestPlanPointSpanPhase(t *testing.T) {
	o := PlanOptions{Kinds: []Kind{Kill, FaultPoints}, Interval: time.Second, Hold: time.Second, Limit: 30 * time.Second, Compose: true,
		PointAims: []faultpoint.Aim{faultpoint.AimHit, faultpoint.AimAbout}}
	s, err := Plan(3, o)
	if err != nil {
		t.Fatal(err)
	}
	held := o
	held.PointSpan = SpanHold
	h, _ := Plan(3, held)
	var points, kills, heldKills []Step
	aims := map[faultpoint.Aim]int{}
	for _, st := range s {
		if st.Kind != FaultPoints {
			kills = append(kills, st)
			continue
		}
		points = append(points, st)
		aims[st.Point.Aim]++
		if st.At+st.Hold < o.Limit || !slices.Contains(phaseProbabilities, st.Point.Probability) {
			t.Fatalf("step %+v: not armed to the phase's end at a phase probability", st)
		}
	}
	for _, st := range h {
		if st.Kind == Kill {
			heldKills = append(heldKills, st)
		}
	}
	if len(points) < 5 || s.Serial() || !slices.Equal(kills, heldKills) {
		t.Fatalf("%d fault-points steps (serial %v); kills %v, with held points %v", len(points), s.Serial(), kills, heldKills)
	}
	if aims[""] == 0 || aims[faultpoint.AimAbout] == 0 {
		t.Fatalf("aims drawn %v: want both", aims)
	}
	f := RecordSchedule(s, 3, TargetAll, []int32{1, 2, 3}, nil, nil)
	back, err := f.Schedule()
	if err != nil || !slices.Equal(back, s) {
		t.Fatalf("schedule.json round trip: %v", err)
	}
	// One aim given is every step's, drawn without consuming the seed.
	o.PointAims = []faultpoint.Aim{faultpoint.AimAbout}
	one, _ := Plan(3, o)
	o.PointAims = nil
	none, _ := Plan(3, o)
	for i := range one {
		if one[i].Kind == FaultPoints && one[i].Point.Aim != faultpoint.AimAbout {
			t.Fatalf("step %d aim %q", i, one[i].Point.Aim)
		}
		one[i].Point.Aim = ""
	}
	if !slices.Equal(one, none) {
		t.Fatal("one aim changed the rest of the draw")
	}
}

// Two fault-points steps in force on one node are armed together, and the
// first one's end leaves the second's point armed.
func TestRunnerArmsOverlappingPoints(t *testing.T) {
	c := newPointCluster()
	defer c.close()
	h := history.NewWriter(&bytes.Buffer{}, 0)
	r := &Runner{Cluster: c, Topo: StaticTopology{IDs: []int32{1, 2, 3}, Leaders: []int32{2}}, History: h, Epoch: time.Now(),
		Target: TargetLeader, UndoTimeout: 5 * time.Second}
	pa := PointArm{Point: faultpoint.LeaderElected, Action: faultpoint.Cut, Probability: 0.1, Max: 1, For: time.Millisecond}
	pb := PointArm{Point: faultpoint.HWAdvanced, Action: faultpoint.Cut, Probability: 0.1, Max: 1, For: time.Millisecond}
	sched := Schedule{{At: 0, Kind: FaultPoints, Hold: time.Second, Pick: 1, Point: pa},
		{At: 50 * time.Millisecond, Kind: FaultPoints, Hold: 10 * time.Second, Pick: 2, Point: pb}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx, sched); close(done) }()
	wait := func(what string, ok func([]faultpoint.Arm) bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !ok(faultpoint.Armed(2)); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: armed %+v", what, faultpoint.Armed(2))
			}
		}
	}
	wait("both steps armed together", func(a []faultpoint.Arm) bool { return len(a) == 2 })
	wait("the first step's end", func(a []faultpoint.Arm) bool { return len(a) == 1 && a[0].Point == faultpoint.HWAdvanced })
	cancel()
	<-done
	if len(faultpoint.Armed(2)) != 0 || r.Failed() != 0 {
		t.Fatalf("armed after the run: %+v; %d failed", faultpoint.Armed(2), r.Failed())
	}
}
