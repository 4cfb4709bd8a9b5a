package faultpoint

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestUnarmedHitDoesNothing(t *testing.T) {
	if current.Load() != nil {
		t.Fatal("a table is armed before anything was installed")
	}
	Hit(ISRExpandApplied, Attrs{Node: 1}) // must not panic or act
	Install(1, Handlers{Crash: func() { t.Fatal("crashed unarmed") }})
	defer Uninstall(1)
	if current.Load() != nil {
		t.Fatal("installing handlers armed something")
	}
	Hit(ISRExpandApplied, Attrs{Node: 1})
}

func TestArmFiresAtMostMaxOnItsNode(t *testing.T) {
	var mu sync.Mutex
	var got []Firing
	crashes := 0
	rec := func(f Firing) error { mu.Lock(); got = append(got, f); mu.Unlock(); return nil }
	Install(1, Handlers{Crash: func() { crashes++ }, Record: rec})
	Install(2, Handlers{Crash: func() { t.Error("node 2 crashed: not armed there") }, Record: rec})
	defer Uninstall(1)
	defer Uninstall(2)
	if err := Set(1, []Arm{{ID: "s0", Point: ISRExpandApplied, Action: Crash, Max: 2}}, map[string]int{}); err != nil {
		t.Fatal(err)
	}
	Hit(HWAdvanced, Attrs{Node: 1})                                 // another point
	Hit(ISRExpandApplied, Attrs{Node: 2, Topic: "t", Partition: 0}) // another node
	for range 3 {
		Hit(ISRExpandApplied, Attrs{Node: 1, Topic: "t", Partition: 3})
	}
	if crashes != 2 || len(got) != 2 {
		t.Fatalf("crashes %d, firings %v: want 2 (max 2)", crashes, got)
	}
	if f := got[1]; f.Point != ISRExpandApplied || f.Node != 1 || f.Key() != "t/3" || f.N != 2 || f.ID != "s0" {
		t.Fatalf("firing %+v", f)
	}
	// A restarted node's earlier firings count against Max.
	if err := Set(1, []Arm{{ID: "s1", Point: HWAdvanced, Action: Pause, Max: 1}}, map[string]int{"s1": 1}); err != nil {
		t.Fatal(err)
	}
	Hit(HWAdvanced, Attrs{Node: 1})
	if len(got) != 2 {
		t.Fatalf("fired past Max counted from the firings file: %v", got)
	}
	if err := Set(1, nil, nil); err != nil {
		t.Fatal(err)
	}
	if current.Load() != nil {
		t.Fatal("disarming every point left a table")
	}
}

func TestPauseBlocksTheHitter(t *testing.T) {
	Install(3, Handlers{Record: func(Firing) error { return nil }})
	defer Uninstall(3)
	if err := Set(3, []Arm{{ID: "p", Point: GenerationBumped, Action: Pause, ForMs: 50}}, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	Hit(GenerationBumped, Attrs{Group: "g"})
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("pause held the hitter %v, want >= 50ms", d)
	}
}

func TestProbabilityIsSeeded(t *testing.T) {
	count := func() int {
		n := 0
		Install(4, Handlers{Record: func(Firing) error { n++; return nil }})
		defer Uninstall(4)
		if err := Set(4, []Arm{{ID: "q", Point: HWAdvanced, Action: Hold, Probability: 0.3, Max: 1000, Seed: 7}}, nil); err != nil {
			t.Fatal(err)
		}
		for range 1000 {
			Hit(HWAdvanced, Attrs{Node: 4})
		}
		return n
	}
	a, b := count(), count()
	if a != b || a < 200 || a > 400 {
		t.Fatalf("fired %d and %d of 1000 at p=0.3 with one seed", a, b)
	}
}

func TestWatchArmsFromTheControlFileAndRecordsFirings(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	crashed := make(chan struct{}, 1)
	go func() {
		defer close(done)
		Watch(ctx, 5, dir, Handlers{Crash: func() { crashed <- struct{}{} }}, 5*time.Millisecond, func(err error) { t.Error(err) })
	}()
	if err := WriteControl(filepath.Join(dir, FileName), Control{Arms: []Arm{{ID: "s2", Point: LeaderElected, Action: Crash}}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(Armed(5)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the control file was not picked up")
		}
		time.Sleep(5 * time.Millisecond)
	}
	Hit(LeaderElected, Attrs{Node: 5, Topic: "t", Partition: 1})
	<-crashed
	fs, err := ReadFirings(filepath.Join(dir, FiringsName))
	if err != nil || len(fs) != 1 || fs[0].Point != LeaderElected || fs[0].Key() != "t/1" {
		t.Fatalf("firings %v, %v", fs, err)
	}
	if err := Set(5, nil, nil); err != nil { // as a restart would: the file's arming again
		t.Fatal(err)
	}
	cancel()
	<-done
	if current.Load() != nil {
		t.Fatal("an ended watch left points armed")
	}
}

func TestArmCheck(t *testing.T) {
	for _, a := range []Arm{{Point: "nope", Action: Crash}, {Point: HWAdvanced, Action: "explode"}, {Point: HWAdvanced, Action: Pause, Probability: 2}} {
		if a.Check() == nil {
			t.Errorf("%+v accepted", a)
		}
	}
}

//go:noinline
func plainCall(p Point, a Attrs) { _ = p }

var sinkAttrs = Attrs{Node: 1, Topic: "t", Partition: 2}

// BenchmarkHitUnarmed is Hit with nothing armed, beside a plain
// (non-inlined) call with the same arguments: the cost a point adds to a
// protocol step when the harness armed none. Run with
// `go test -bench Hit -run XXX ./cluster/faultpoint/`; the ratio is
// reported (hit/plain), not asserted.
func BenchmarkHitUnarmed(b *testing.B) {
	b.Run("hit", func(b *testing.B) {
		for range b.N {
			Hit(ISRExpandApplied, sinkAttrs)
		}
	})
	b.Run("plain-call", func(b *testing.B) {
		for range b.N {
			plainCall(ISRExpandApplied, sinkAttrs)
		}
	})
}

// An action with AfterMs runs later on its own goroutine; the hitter goes on.
func TestAfterDelaysTheAction(t *testing.T) {
	crashed := make(chan time.Time, 1)
	Install(6, Handlers{Crash: func() { crashed <- time.Now() }, Record: func(Firing) error { return nil }})
	defer Uninstall(6)
	if err := Set(6, []Arm{{ID: "a", Point: ISRExpandRequested, Action: Crash, AfterMs: 60}}, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	Hit(ISRExpandRequested, Attrs{Node: 6})
	if d := time.Since(start); d > 40*time.Millisecond {
		t.Fatalf("the hitter was held %v", d)
	}
	if at := <-crashed; at.Sub(start) < 60*time.Millisecond {
		t.Fatalf("crashed %v after the hit, want >= 60ms", at.Sub(start))
	}
}

func TestEveryPointHasAScope(t *testing.T) {
	var all []Point
	for _, s := range []Scope{Replication, Controller, Storage, Coordinators, Groups, Transactions} {
		all = append(all, PointsIn(s)...)
	}
	if len(all) != len(Points) {
		t.Fatalf("scopes cover %d of %d points: give every point a scope (%v)", len(all), len(Points), all)
	}
}

// An arm aimed at the node a step is about fires on that node, at hits made
// by another (the leader applying the expansion of follower 3), with the
// hitter kept in the firing; an arm aimed at the hitter does not.
func TestAimAboutActsOnTheNodeTheHitIsAbout(t *testing.T) {
	var mu sync.Mutex
	var got []Firing
	crashed := map[int32]int{}
	for _, id := range []int32{1, 2, 3} {
		Install(id, Handlers{
			Crash:  func() { mu.Lock(); crashed[id]++; mu.Unlock() },
			Record: func(f Firing) error { mu.Lock(); got = append(got, f); mu.Unlock(); return nil }})
		defer Uninstall(id)
	}
	if err := Set(3, []Arm{{ID: "about", Point: ISRExpandApplied, Action: Crash, Max: 5, Aim: AimAbout}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := Set(2, []Arm{{ID: "hit", Point: ISRExpandApplied, Action: Crash, Max: 5}}, nil); err != nil {
		t.Fatal(err)
	}
	Hit(ISRExpandApplied, Attrs{Node: 1, Topic: "t", Partition: 0, Broker: 3}) // about 3: node 3 acts
	Hit(ISRExpandApplied, Attrs{Node: 1, Topic: "t", Partition: 0, Broker: 2}) // about 2: 2's arm is aimed at its own hits
	Hit(ISRExpandApplied, Attrs{Node: 3, Topic: "t", Partition: 1})            // about nobody: about the hitter, 3
	mu.Lock()
	defer mu.Unlock()
	if crashed[3] != 2 || crashed[1] != 0 || crashed[2] != 0 || len(got) != 2 {
		t.Fatalf("crashes %v, firings %+v: want node 3 twice", crashed, got)
	}
	if f := got[0]; f.Node != 3 || f.HitBy != 1 || f.Broker != 3 || f.ID != "about" {
		t.Fatalf("firing %+v: want node 3 hit by 1", f)
	}
	if f := got[1]; f.Node != 3 || f.HitBy != 0 {
		t.Fatalf("firing %+v: want node 3's own hit", f)
	}
	if (Arm{ID: "x", Point: HWAdvanced, Action: Crash, Aim: "elsewhere"}).Check() == nil {
		t.Fatal("an unknown aim passed the check")
	}
}

// A node with a Pause handler (the simulation's freeze) carries out pause
// and hold through it, and the hitting goroutine returns.
func TestPauseHandlerCarriesOutPauseAndHold(t *testing.T) {
	var paused []time.Duration
	Install(1, Handlers{Pause: func(d time.Duration) { paused = append(paused, d) }})
	defer Uninstall(1)
	if err := Set(1, []Arm{{ID: "p", Point: HWAdvanced, Action: Pause, ForMs: 60000},
		{ID: "h", Point: LeaderElected, Action: Hold, ForMs: 30000}}, nil); err != nil {
		t.Fatal(err)
	}
	Hit(HWAdvanced, Attrs{Node: 1})    // a minute's sleep here would time the test out
	Hit(LeaderElected, Attrs{Node: 1}) // as would half a minute here
	if len(paused) != 2 || paused[0] != time.Minute || paused[1] != 30*time.Second {
		t.Fatalf("pauses %v: want 1m and 30s through the handler", paused)
	}
}
