package nemesis

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"gregor/cluster/nodefault"
	"gregor/history"
	"gregor/runtime"
)

// A step's disk fault and skew are functions of its Pick: every fault is
// drawn by some pick, skews stay in bounds and go both ways.
func TestDrawNodeFaults(t *testing.T) {
	seen := map[string]bool{}
	var pos, neg int
	for p := range uint64(500) {
		if DrawDiskFault(p) != DrawDiskFault(p) || DrawSkew(p) != DrawSkew(p) {
			t.Fatal("a draw is not a function of the pick")
		}
		seen[DrawDiskFault(p)] = true
		d := DrawSkew(p)
		if a := max(d, -d); a < MinSkew || a > MaxSkew {
			t.Fatalf("pick %d: skew %v outside [%v, %v]", p, d, MinSkew, MaxSkew)
		}
		if d > 0 {
			pos++
		} else {
			neg++
		}
	}
	for _, f := range history.DiskFaults {
		if !seen[f] {
			t.Errorf("no pick in 500 draws %s", f)
		}
	}
	if pos < 150 || neg < 150 {
		t.Errorf("skews %d forward, %d back in 500", pos, neg)
	}
}

// nodeCluster plays a node's broker: an armed disk error halts it (a
// log-dir failure event), a flip is recorded.
type nodeCluster struct {
	fakeCluster
	nmu     sync.Mutex
	ctl     map[int32]nodefault.Control
	nevents map[int32][]nodefault.Event
	stopped map[int32]bool
	skews   []int64
}

func newNodeCluster() *nodeCluster {
	return &nodeCluster{ctl: map[int32]nodefault.Control{}, nevents: map[int32][]nodefault.Event{}, stopped: map[int32]bool{}}
}

func (c *nodeCluster) ArmNodeFaults(_ context.Context, id int32, nc nodefault.Control) error {
	if err := nc.Check(); err != nil {
		return err
	}
	c.nmu.Lock()
	defer c.nmu.Unlock()
	c.ctl[id] = nc
	c.skews = append(c.skews, nc.SkewMs)
	if len(nc.Disk) > 0 && !c.stopped[id] && nc.Disk[0].Op != "fsync" {
		c.nevents[id] = append(c.nevents[id], nodefault.Event{Kind: nodefault.EventLogDirFailure, Node: id, Error: "input/output error"})
		c.stopped[id] = true
	}
	if nc.Flip != nil {
		c.nevents[id] = append(c.nevents[id], nodefault.Event{Kind: nodefault.EventFlip, ID: nc.Flip.ID, Node: id, Topic: "t", Partition: 1, Offset: 42})
	}
	return nil
}

func (c *nodeCluster) NodeFaultEvents(_ context.Context, id int32) ([]nodefault.Event, error) {
	c.nmu.Lock()
	defer c.nmu.Unlock()
	return slices.Clone(c.nevents[id]), nil
}

func (c *nodeCluster) Status(_ context.Context, id int32) (runtime.NodeState, error) {
	c.nmu.Lock()
	defer c.nmu.Unlock()
	if c.stopped[id] {
		return runtime.StateStopped, nil
	}
	return runtime.StateRunning, nil
}

func (c *nodeCluster) Start(ctx context.Context, id int32) error {
	c.nmu.Lock()
	delete(c.stopped, id)
	c.nmu.Unlock()
	return c.note("start", id)
}

func pickFor(t *testing.T, fault string) uint64 {
	for p := range uint64(1000) {
		if DrawDiskFault(p) == fault {
			return p
		}
	}
	t.Fatalf("no pick draws %s", fault)
	return 0
}

func runNodeStep(t *testing.T, c *nodeCluster, st Step) []history.Op {
	t.Helper()
	var buf bytes.Buffer
	h := history.NewWriter(&buf, 0)
	r := &Runner{Cluster: c, Topo: StaticTopology{IDs: []int32{1, 2, 3}, Leaders: []int32{2}}, History: h, Epoch: time.Now(),
		Target: TargetLeader, UndoTimeout: 5 * time.Second}
	if err := r.Run(context.Background(), Schedule{st}); err != nil {
		t.Fatal(err)
	}
	h.Flush()
	ops, _, _, err := history.ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return ops
}

func verbsOf(t *testing.T, ops []history.Op) []string {
	var out []string
	for _, op := range ops {
		out = append(out, op.F)
		if op.Error != "" {
			t.Errorf("%s: %s", op.F, op.Error)
		}
	}
	return out
}

// The runner arms the drawn disk fault on the target, writes the node's
// log-dir failure, disarms, and starts the halted node; a flipped batch
// never read is met by a kill and a start (the node's recovery finds it);
// a skew is set for the hold and set back; a cluster without node faults
// refuses the step.
func TestRunnerNodeFaults(t *testing.T) {
	c := newNodeCluster()
	ops := runNodeStep(t, c, Step{Kind: DiskFault, Hold: 300 * time.Millisecond, Pick: pickFor(t, history.DiskEIOWrite)})
	if got, want := verbsOf(t, ops), []string{"disk-fault", "log-dir-failed", "disk-fault-restart", "end-disk-fault"}; !slices.Equal(got, want) {
		t.Fatalf("eio-write: verbs %v, want %v", got, want)
	}
	if v, _ := history.ParseNemesis(&ops[0]); v.DiskFault != history.DiskEIOWrite || !slices.Equal(v.Nodes, []int32{2}) {
		t.Fatalf("start %s", ops[0].Raw)
	}
	if len(c.ctl[2].Disk) != 0 || !slices.Contains(c.events, "start 2") || c.stopped[2] {
		t.Fatalf("after the step: control %+v, events %v", c.ctl[2], c.events)
	}

	c = newNodeCluster()
	ops = runNodeStep(t, c, Step{Kind: DiskFault, Hold: 300 * time.Millisecond, Pick: pickFor(t, history.DiskBitFlip)})
	if got, want := verbsOf(t, ops), []string{"disk-fault", "disk-bit-flipped", "disk-fault-restart", "end-disk-fault"}; !slices.Equal(got, want) {
		t.Fatalf("bit-flip: verbs %v, want %v", got, want)
	}
	if v, _ := history.ParseNemesis(&ops[1]); v.Key != "t/1" || v.FlippedOffset == nil || *v.FlippedOffset != 42 {
		t.Fatalf("flip %s", ops[1].Raw)
	}
	if !slices.Equal(c.events, []string{"kill 2", "start 2"}) || c.ctl[2].Flip != nil {
		t.Fatalf("bit-flip: events %v, control %+v", c.events, c.ctl[2])
	}

	c = newNodeCluster()
	ops = runNodeStep(t, c, Step{Kind: ClockSkew, Hold: 200 * time.Millisecond, Pick: 5})
	if got, want := verbsOf(t, ops), []string{"clock-skew", "end-clock-skew"}; !slices.Equal(got, want) {
		t.Fatalf("clock-skew: verbs %v, want %v", got, want)
	}
	if want := []int64{DrawSkew(5).Milliseconds(), 0}; !slices.Equal(c.skews, want) {
		t.Fatalf("skews armed %v, want %v", c.skews, want)
	}
	if v, _ := history.ParseNemesis(&ops[0]); v.Skew != DrawSkew(5).String() {
		t.Fatalf("start %s", ops[0].Raw)
	}

	r := &Runner{Cluster: &fakeCluster{}, Topo: StaticTopology{IDs: []int32{1}, Leaders: []int32{1}}, History: history.NewWriter(&bytes.Buffer{}, 0), Epoch: time.Now()}
	r.Run(context.Background(), Schedule{{Kind: ClockSkew, Hold: time.Millisecond}})
	if r.Failed() != 1 {
		t.Fatal("a cluster without node faults took a clock-skew step")
	}
}

// A disk fault and a skew composed on one node keep each other: the node's
// one control holds both.
func TestNodeControlsCompose(t *testing.T) {
	c := newNodeCluster()
	var n nodeControls
	ctx := context.Background()
	_ = n.update(ctx, 1, func(x *nodefault.Control) { x.SkewMs = 5000 }, c.ArmNodeFaults)
	_ = n.update(ctx, 1, func(x *nodefault.Control) { x.Flip = &nodefault.Flip{ID: "a"} }, c.ArmNodeFaults)
	_ = n.update(ctx, 1, func(x *nodefault.Control) { x.SkewMs = 0 }, c.ArmNodeFaults)
	if got := c.ctl[1]; got.Flip == nil || got.SkewMs != 0 {
		t.Fatalf("control %+v: the skew's end dropped the flip", got)
	}
}

// A free per-node control is taken even once the step's context ended (a
// step that starts as the fault phase ends still arms and disarms cleanly);
// only a wait for a held one gives up with the context.
func TestPerNodeUpdateTakesAFreeLockAfterTheContextEnded(t *testing.T) {
	c := newNodeCluster()
	var n nodeControls
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 50 { // a select of two ready cases would pick the ended context about half the time
		if err := n.update(ctx, 1, func(x *nodefault.Control) { x.SkewMs = int64(i) }, c.ArmNodeFaults); err != nil {
			t.Fatalf("update %d with the lock free: %v", i, err)
		}
	}
	n.lock <- struct{}{} // held
	if err := n.update(ctx, 1, func(*nodefault.Control) {}, c.ArmNodeFaults); err == nil {
		t.Fatal("a wait for a held control outlived its context")
	}
}
