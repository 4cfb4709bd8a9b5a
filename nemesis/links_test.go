package nemesis

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gregor/history"
	"gregor/runtime"
)

// A link step hits one broker (the target) and a drawn, non-empty set of
// the clients, the same for the same pick.
func TestLinkStepResolves(t *testing.T) {
	topo := StaticTopology{IDs: []int32{1, 2, 3}, Leaders: []int32{2, 3, 1}}
	for _, k := range []Kind{ClientReset, LoseResponses, DelayClient} {
		if !IsLinkKind(k) || IsClientKind(k) {
			t.Fatalf("%s: link %v client %v", k, IsLinkKind(k), IsClientKind(k))
		}
		for pick := range uint64(20) {
			a, err := Resolve(context.Background(), Step{Kind: k, Pick: pick}, TargetLeader, topo)
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Nodes) != 1 || a.Nodes[0] != topo.Leaders[a.Partition] {
				t.Fatalf("%s pick %d: nodes %v, partition %d", k, pick, a.Nodes, a.Partition)
			}
		}
	}
	clients := []int{4, 0, 7, 2, 9}
	seen := map[int]bool{}
	for pick := range uint64(50) {
		ps := linkProcs(pick, clients)
		if len(ps) == 0 || !slices.Equal(ps, linkProcs(pick, slices.Clone(clients))) {
			t.Fatalf("pick %d: %v", pick, ps)
		}
		for _, p := range ps {
			if !slices.Contains(clients, p) {
				t.Fatalf("pick %d: %d is no client", pick, p)
			}
			seen[p] = true
		}
	}
	if len(seen) != len(clients) {
		t.Fatalf("50 picks hit only %v of %v", seen, clients)
	}
	if linkProcs(1, nil) != nil {
		t.Fatal("no clients, yet processes drawn")
	}
}

// A delay-client step holds at least MinDelayHold (beyond the delivery
// timeout); other kinds keep their drawn holds; a client-reset has no end.
func TestDelayClientHold(t *testing.T) {
	o := PlanOptions{Kinds: []Kind{DelayClient, LoseResponses, ClientReset}, Interval: time.Second, Hold: time.Second,
		Limit: time.Minute, MinDelayHold: 7 * time.Second}
	s, err := Plan(3, o)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[Kind]int{}
	for _, st := range s {
		kinds[st.Kind]++
		if st.Kind == DelayClient && st.Hold < o.MinDelayHold {
			t.Fatalf("delay-client hold %v < %v", st.Hold, o.MinDelayHold)
		}
		if st.Kind != DelayClient && st.Hold >= 3*o.Hold/2 {
			t.Fatalf("%s hold %v beyond its draw", st.Kind, st.Hold)
		}
	}
	if len(kinds) != 3 {
		t.Fatalf("kinds drawn %v", kinds)
	}
	ops, err := Describe(context.Background(), s, TargetRandom, StaticTopology{IDs: []int32{1, 2, 3}, Leaders: []int32{1}})
	if err != nil {
		t.Fatal(err)
	}
	if want := 2*len(s) - kinds[ClientReset]; len(ops) != want {
		t.Fatalf("%d described ops for %v, want %d (client-reset has no end)", len(ops), kinds, want)
	}
}

type coordTopo struct {
	StaticTopology
	id  int32
	err error
}

func (c coordTopo) Coordinator(context.Context) (int32, error) { return c.id, c.err }

// TargetCoordinator hits the coordinator the topology names; without one it
// falls back to a random broker and says so.
func TestCoordinatorResolves(t *testing.T) {
	st := StaticTopology{IDs: []int32{1, 2, 3}, Leaders: []int32{1}}
	a, err := Resolve(context.Background(), Step{Kind: Kill, Pick: 7}, TargetCoordinator, coordTopo{st, 3, nil})
	if err != nil || !slices.Equal(a.Nodes, []int32{3}) || a.Note != "" {
		t.Fatalf("%+v %v", a, err)
	}
	a, err = Resolve(context.Background(), Step{Kind: Kill, Pick: 7}, TargetCoordinator, coordTopo{st, -1, context.DeadlineExceeded})
	if err != nil || len(a.Nodes) != 1 || a.Note == "" {
		t.Fatalf("no coordinator: %+v %v", a, err)
	}
	if _, err := ParseTarget("coordinator"); err != nil {
		t.Fatal(err)
	}
}

// A composed plan overlaps faults of different streams but never two of
// one stream (partition and slow share one), is in start order, and is the
// same for the same seed; a serial plan of the same kinds never overlaps.
func TestComposePlan(t *testing.T) {
	o := PlanOptions{Kinds: []Kind{Kill, Pause, Partition, Slow, RestartStorm}, Interval: time.Second, Hold: 2 * time.Second,
		Limit: time.Minute, Compose: true}
	s, err := Plan(11, o)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Plan(11, o)
	if !slices.Equal(s, again) {
		t.Fatal("the same seed drew another composed schedule")
	}
	if s.Serial() {
		t.Fatalf("composed schedule of %d steps has no overlap", len(s))
	}
	overlapKinds := map[[2]Kind]bool{}
	for i, a := range s {
		for _, b := range s[i+1:] {
			if b.At >= a.At+a.Hold {
				continue
			}
			if stream(a.Kind) == stream(b.Kind) {
				t.Fatalf("%s at %v and %s at %v overlap in one stream", a.Kind, a.At, b.Kind, b.At)
			}
			overlapKinds[[2]Kind{a.Kind, b.Kind}] = true
		}
	}
	if len(overlapKinds) < 3 {
		t.Fatalf("only %v overlap", overlapKinds)
	}
	o.Compose = false
	serial, err := Plan(11, o)
	if err != nil || !serial.Serial() {
		t.Fatalf("serial plan overlaps (%v)", err)
	}
	// A same-stream overlap is refused even in a composed schedule.
	bad := Schedule{{At: 0, Kind: Partition, Hold: 2 * time.Second}, {At: time.Second, Kind: Slow, Hold: time.Second}}
	if bad.Check() == nil {
		t.Fatal("partition and slow overlapping: not caught")
	}
}

// fakeCluster records faults; every fault succeeds.
type fakeCluster struct {
	runtime.Cluster
	mu     sync.Mutex
	events []string
	down   map[int32]bool
}

func (f *fakeCluster) note(s string, id int32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, fmt.Sprintf("%s %d", s, id))
	return nil
}
func (f *fakeCluster) Nodes() []runtime.NodeInfo {
	return []runtime.NodeInfo{{ID: 1}, {ID: 2}, {ID: 3}}
}
func (f *fakeCluster) Kill(_ context.Context, id int32) error  { return f.note("kill", id) }
func (f *fakeCluster) Start(_ context.Context, id int32) error { return f.note("start", id) }
func (f *fakeCluster) Pause(_ context.Context, id int32) error { return f.note("pause", id) }
func (f *fakeCluster) Resume(_ context.Context, id int32) error {
	return f.note("resume", id)
}
func (f *fakeCluster) Partition(context.Context, [][]int32) error { return f.note("partition", 0) }
func (f *fakeCluster) Heal(context.Context) error                 { return f.note("heal", 0) }

// The runner runs a composed schedule's overlapping steps at once (two
// faults in force together), and a restart storm restarts its target in
// rounds shorter than the session, every kill matched by a start.
func TestRunnerOverlapsAndStorms(t *testing.T) {
	fc := &fakeCluster{}
	var buf bytes.Buffer
	h := history.NewWriter(&buf, 0)
	r := &Runner{Cluster: fc, Topo: StaticTopology{IDs: []int32{1, 2, 3}, Leaders: []int32{2}}, History: h, Epoch: time.Now(),
		Target: TargetLeader, SessionTimeout: 500 * time.Millisecond}
	sched := Schedule{
		{At: 0, Kind: Partition, Shape: IsolateOne, Hold: 1500 * time.Millisecond, Pick: 1},
		{At: 100 * time.Millisecond, Kind: Pause, Hold: 300 * time.Millisecond, Pick: 2},
		{At: 500 * time.Millisecond, Kind: RestartStorm, Hold: 800 * time.Millisecond, Pick: 3},
	}
	maxActive := 0
	done := make(chan struct{})
	go func() { r.Run(context.Background(), sched); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-time.After(20 * time.Millisecond):
			maxActive = max(maxActive, r.Active())
		}
	}
	if maxActive < 2 {
		t.Fatalf("at most %d faults in force at once", maxActive)
	}
	kills, starts := 0, 0
	for _, e := range fc.events {
		switch e {
		case "kill 2":
			kills++
		case "start 2":
			starts++
		}
	}
	if kills < 2 || kills != starts {
		t.Fatalf("storm: %d kills, %d starts of the leader (events %v)", kills, starts, fc.events)
	}
	h.Flush()
	ops, _, _, err := history.ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var end map[string]any
	for _, op := range ops {
		if op.F == history.EndVerb(history.NemesisRestartStorm) {
			json.Unmarshal(op.Raw, &end)
		}
	}
	if n, _ := end["round"].(float64); int(n) != kills {
		t.Fatalf("storm's end says %v rounds, %d kills", end["round"], kills)
	}
}

// slowKillCluster's kill takes until release is closed, or its context
// ends: a kill the engine is slow to answer.
type slowKillCluster struct {
	fakeCluster
	started chan struct{}
	release chan struct{}
}

func (s *slowKillCluster) Kill(ctx context.Context, id int32) error {
	close(s.started)
	select {
	case <-s.release:
		return s.note("kill", id)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A step begun is applied whole: the fault phase's deadline passing during
// a slow kill does not abandon it (the kill succeeds and is undone); a
// run's cancellation still ends it at once.
func TestStepBegunIsAppliedWhole(t *testing.T) {
	run := func(t *testing.T, ctx context.Context, end func(), fc *slowKillCluster) string {
		t.Helper()
		var buf bytes.Buffer
		h := history.NewWriter(&buf, 0)
		r := &Runner{Cluster: fc, Topo: StaticTopology{IDs: []int32{1, 2, 3}, Leaders: []int32{2}}, History: h, Epoch: time.Now(), Target: TargetLeader}
		done := make(chan struct{})
		go func() { r.Run(ctx, Schedule{{At: 0, Kind: Kill, Hold: time.Hour, Pick: 1}}); close(done) }()
		<-fc.started
		end()
		<-done
		h.Flush()
		ops, _, _, err := history.ReadAll(&buf)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			if op.F == history.NemesisKill {
				return op.Error
			}
		}
		t.Fatal("no kill in the history")
		return ""
	}
	t.Run("phase deadline", func(t *testing.T) {
		fc := &slowKillCluster{started: make(chan struct{}), release: make(chan struct{})}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		// The kill is answered only once the deadline has passed.
		if e := run(t, ctx, func() { <-ctx.Done(); close(fc.release) }, fc); e != "" {
			t.Fatalf("the phase's end abandoned a kill begun: %s", e)
		}
	})
	t.Run("run cancelled", func(t *testing.T) {
		fc := &slowKillCluster{started: make(chan struct{}), release: make(chan struct{})}
		ctx, cancel := context.WithCancel(context.Background())
		if e := run(t, ctx, cancel, fc); !strings.Contains(e, "canceled") {
			t.Fatalf("a cancelled run's kill: error %q, want it cancelled", e)
		}
	})
}

// shareTopo names a share coordinator per partition (coord[p]).
type shareTopo struct {
	StaticTopology
	coord []int32
}

func (s shareTopo) ShareCoordinator(_ context.Context, p int32) (int32, error) {
	if int(p) >= len(s.coord) {
		return -1, context.DeadlineExceeded
	}
	return s.coord[p], nil
}

// TargetShareCoordinator hits the share coordinator of the drawn
// partition, records that partition, and falls back to a random broker
// with a note when the topology has no share group or cannot say; a kill
// and an isolating partition both take it.
func TestShareCoordinatorResolves(t *testing.T) {
	st := StaticTopology{IDs: []int32{1, 2, 3}, Leaders: []int32{1, 1, 1, 1}}
	topo := shareTopo{st, []int32{2, 3, 1, 2}}
	seen := map[int32]bool{}
	for pick := range uint64(40) {
		a, err := Resolve(context.Background(), Step{Kind: Kill, Pick: pick}, TargetShareCoordinator, topo)
		if err != nil || a.Partition < 0 || !slices.Equal(a.Nodes, []int32{topo.coord[a.Partition]}) || a.Note == "" {
			t.Fatalf("pick %d: %+v %v", pick, a, err)
		}
		seen[a.Partition] = true
		p, err := Resolve(context.Background(), Step{Kind: Partition, Shape: IsolateOne, Pick: pick}, TargetShareCoordinator, topo)
		if err != nil || len(p.Groups) != 2 || !slices.Equal(p.Groups[0], []int32{topo.coord[p.Partition]}) {
			t.Fatalf("pick %d: isolate the share coordinator: %+v %v", pick, p, err)
		}
	}
	if len(seen) < 2 {
		t.Errorf("40 picks drew partitions %v: the partition is not drawn", seen)
	}
	a, err := Resolve(context.Background(), Step{Kind: Kill, Pick: 3}, TargetShareCoordinator, shareTopo{st, nil})
	if err != nil || len(a.Nodes) != 1 || !strings.Contains(a.Note, "unknown") {
		t.Fatalf("unknown share coordinator: %+v %v", a, err)
	}
	a, err = Resolve(context.Background(), Step{Kind: Kill, Pick: 3}, TargetShareCoordinator, st)
	if err != nil || len(a.Nodes) != 1 || !strings.Contains(a.Note, "no share coordinator") {
		t.Fatalf("no share topology: %+v %v", a, err)
	}
	if _, err := ParseTarget("share-coordinator"); err != nil {
		t.Fatal(err)
	}
}
