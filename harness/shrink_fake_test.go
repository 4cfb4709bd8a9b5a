package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"gregor/checker"
	"gregor/cluster/faultpoint"
	"gregor/history"
	"gregor/nemesis"
	"gregor/runtime/process"
)

// fakeRun stands in for Run: it stores a run whose history is the
// lost-write fixture when fails says the schedule fails on this try, and
// the clean fixture otherwise, and checks it as Run would.
type fakeRun struct {
	t     *testing.T
	fails func(s nemesis.Schedule, try int) bool
	tries map[string]int // runs per candidate
	runs  int
}

func (f *fakeRun) run(_ context.Context, tc Test) (*Report, error) {
	if err := tc.Validate(); err != nil {
		return nil, err
	}
	sched, sf, err := tc.schedule()
	if err != nil {
		return nil, err
	}
	f.runs++
	k := fmt.Sprint(sched)
	f.tries[k]++
	fixture := "clean.jsonl"
	if f.fails(sched, f.tries[k]) {
		fixture = "lost-write.jsonl"
	}
	dir := history.RunDir(filepath.Join(tc.Store, tc.Name, fmt.Sprintf("2026010%dT000000.%03dZ", 1, f.runs)))
	os.MkdirAll(string(dir), 0o755)
	b, err := os.ReadFile(filepath.Join("..", "checker", "testdata", fixture))
	if err != nil {
		f.t.Fatal(err)
	}
	os.WriteFile(dir.History(), b, 0o644)
	rec := tc.Record("process")
	history.WriteConfig(dir.Config(), &rec)
	writeSchedule(dir, sf)
	writeSettings(dir, &tc.Config, "process")
	_, res, err := CheckRun(dir.History(), CheckOptions{Store: true, Faults: "fake"})
	if err != nil {
		return nil, err
	}
	return &Report{Dir: string(dir), Checked: true, Result: res, Schedule: sched, Faults: "fake"}, nil
}

// The whole of gregor shrink without a cluster: a flaky failure (a
// candidate holding step 2 fails only on its second try) is found with
// --tries 2 and missed with --tries 1; the kept replay is stored as a run
// that replays itself, linked both ways; the original keeps its result.
func TestShrinkTriesAFlakyCandidateAgain(t *testing.T) {
	store := t.TempDir()
	orig := history.RunDir(filepath.Join(store, "queue", "20260101T000000.000Z"))
	os.MkdirAll(string(orig), 0o755)
	cfg := DefaultConfig()
	cfg.Cluster.MinISR, cfg.Idempotence = 2, true
	cfg.Nemeses, cfg.Target, cfg.Seed, cfg.TimeLimit = []string{"kill", "pause"}, "leader", 5, 30*time.Second
	sched := nemesis.Schedule{
		{At: 1 * time.Second, Kind: nemesis.Kill, Hold: 2 * time.Second, Pick: 1},
		{At: 6 * time.Second, Kind: nemesis.Pause, Hold: 4 * time.Second, Pick: 2},
		{At: 14 * time.Second, Kind: nemesis.Kill, Hold: 2 * time.Second, Pick: 3},
		{At: 20 * time.Second, Kind: nemesis.Pause, Hold: 2 * time.Second, Pick: 4}}
	sf := nemesis.RecordSchedule(sched, cfg.Seed, "leader", []int32{1, 2, 3}, nil, nil)
	writeSchedule(orig, &sf)
	writeSettings(orig, &cfg, "process")
	b, _ := os.ReadFile(filepath.Join("..", "checker", "testdata", "lost-write.jsonl"))
	os.WriteFile(orig.History(), b, 0o644)
	rec := cfg.Record("process")
	history.WriteConfig(orig.Config(), &rec)
	if _, res, err := CheckRun(orig.History(), CheckOptions{Store: true}); err != nil || res.Valid != checker.ValidFalse {
		t.Fatalf("the original: %v, %v", res.Valid, err)
	}
	origResults, _ := os.ReadFile(orig.Results())

	holds2 := func(s nemesis.Schedule) bool {
		return slices.ContainsFunc(s, func(st nemesis.Step) bool { return st.Pick == 2 && st.Hold >= time.Second })
	}
	flaky := func(s nemesis.Schedule, try int) bool { return holds2(s) && try >= 2 }
	o := ShrinkOptions{Runtime: process.Runtime{}, Binary: binary, MaxReplays: 20, Budget: time.Minute, Tries: 1, Tail: time.Second, Log: testWriter{t}}

	for _, tries := range []int{1, 2} {
		fake := &fakeRun{t: t, fails: flaky, tries: map[string]int{}}
		replay = fake.run
		o.Tries = tries
		rep, err := Shrink(context.Background(), orig, o)
		replay = Run
		if err != nil {
			t.Fatalf("tries %d: %v", tries, err)
		}
		if tries == 1 {
			if rep.Shrunk != "" || fake.runs != rep.Links.Replays {
				t.Fatalf("tries 1: a failure that needs a second try was found (%s), or %d runs for %d candidates", rep.Shrunk, fake.runs, rep.Links.Replays)
			}
			continue
		}
		if rep.Shrunk == "" {
			t.Fatalf("tries 2: nothing found in %d replays", rep.Links.Replays)
		}
		if len(rep.After) != 1 || rep.After[0].Pick != 2 || rep.After[0].Hold != time.Second || rep.After[0].At >= 6*time.Second {
			t.Fatalf("tries 2: shrunk to %v, want step 2 alone, held 1 s, earlier", rep.After.Steps())
		}
		for k, n := range fake.tries {
			if n > 2 {
				t.Errorf("candidate %s run %d times with --tries 2", k, n)
			}
		}
		if fake.runs > 2*rep.Links.Replays {
			t.Errorf("%d runs for %d candidates", fake.runs, rep.Links.Replays)
		}
		st, err := ReadSettings(rep.Shrunk)
		if err != nil || st.Config.Schedule != absPath(rep.Shrunk.Schedule()) || st.Config.Seed != 5 || st.Config.Name != "queue-shrunk" {
			t.Errorf("shrunk run.json: %+v %v", st, err)
		}
		to, _ := history.ReadShrinkLinks(orig)
		from, _ := history.ReadShrinkLinks(rep.Shrunk)
		if to == nil || from == nil || to.After.Faults != 1 || to.Before.Faults != 4 || from.ShrunkFrom != "../../queue/20260101T000000.000Z" {
			t.Errorf("shrink.json: %+v / %+v", to, from)
		}
	}
	if now, _ := os.ReadFile(orig.Results()); string(now) != string(origResults) {
		t.Error("the original's results.json was rewritten")
	}
}

// testWriter logs each write.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

// A fault-point failure shrinks to one point and one action: the original
// composes leader kills with three fault-points steps, and the failure
// needs the step that crashes at isr-expand-applied; the shrunk schedule
// is that one step, its arming (point, action, probability, firings)
// kept through schedule.json, the kills and the other armings gone.
func TestShrinkFaultPointFailureToOnePointAndAction(t *testing.T) {
	crash := nemesis.PointArm{Point: faultpoint.ISRExpandApplied, Action: faultpoint.Crash, Probability: 0.5, Max: 2, For: 2 * time.Second}
	shrinkToOnePoint(t, crash, nemesis.Schedule{
		{At: 1 * time.Second, Kind: nemesis.Kill, Hold: 2 * time.Second, Pick: 1},
		{At: 2 * time.Second, Kind: nemesis.FaultPoints, Hold: 3 * time.Second, Pick: 2,
			Point: nemesis.PointArm{Point: faultpoint.HWAdvanced, Action: faultpoint.Cut, Probability: 1, Max: 1, For: time.Second}},
		{At: 7 * time.Second, Kind: nemesis.Kill, Hold: 2 * time.Second, Pick: 3},
		{At: 8 * time.Second, Kind: nemesis.FaultPoints, Hold: 4 * time.Second, Pick: 4, Point: crash},
		{At: 14 * time.Second, Kind: nemesis.FaultPoints, Hold: 3 * time.Second, Pick: 5,
			Point: nemesis.PointArm{Point: faultpoint.ISRExpandApplied, Action: faultpoint.Cut, Probability: 1, Max: 1, For: time.Second}},
		{At: 20 * time.Second, Kind: nemesis.Kill, Hold: 2 * time.Second, Pick: 6}})
}

// The same with points armed to the end of the fault phase (SpanPhase, the
// default): the fault-points steps overlap, one is aimed at the node its
// hits are about, and the failure needs that aimed crash; the shrunk step
// keeps its aim.
func TestShrinkPhaseLongAimedFaultPointToOnePoint(t *testing.T) {
	crash := nemesis.PointArm{Point: faultpoint.ISRExpandApplied, Action: faultpoint.Crash, Probability: 0.1, Max: 3, For: 2 * time.Second,
		Aim: faultpoint.AimAbout}
	hit := crash
	hit.Aim = ""
	shrinkToOnePoint(t, crash, nemesis.Schedule{
		{At: 1 * time.Second, Kind: nemesis.Kill, Hold: 2 * time.Second, Pick: 1},
		{At: 2 * time.Second, Kind: nemesis.FaultPoints, Hold: 28 * time.Second, Pick: 2,
			Point: nemesis.PointArm{Point: faultpoint.HWAdvanced, Action: faultpoint.Cut, Probability: 0.05, Max: 1, For: time.Second}},
		{At: 4 * time.Second, Kind: nemesis.FaultPoints, Hold: 26 * time.Second, Pick: 3, Point: hit},
		{At: 6 * time.Second, Kind: nemesis.FaultPoints, Hold: 24 * time.Second, Pick: 4, Point: crash},
		{At: 7 * time.Second, Kind: nemesis.Kill, Hold: 2 * time.Second, Pick: 5},
		{At: 9 * time.Second, Kind: nemesis.FaultPoints, Hold: 21 * time.Second, Pick: 6,
			Point: nemesis.PointArm{Point: faultpoint.LeaderElected, Action: faultpoint.Pause, Probability: 0.2, Max: 2, For: time.Second}},
		{At: 20 * time.Second, Kind: nemesis.Kill, Hold: 2 * time.Second, Pick: 7}})
}

// shrinkToOnePoint shrinks a failing run of sched whose failure needs the
// fault-points step arming crash (its point, action and aim, however
// short; its step's pick is 4) and checks the shrunk run is that step alone, its arming kept
// through schedule.json.
func shrinkToOnePoint(t *testing.T, crash nemesis.PointArm, sched nemesis.Schedule) {
	t.Helper()
	store := t.TempDir()
	orig := history.RunDir(filepath.Join(store, "queue", "20260101T000000.000Z"))
	os.MkdirAll(string(orig), 0o755)
	cfg := DefaultConfig()
	cfg.Cluster.MinISR, cfg.Idempotence, cfg.Compose = 2, true, true
	cfg.Nemeses, cfg.Target, cfg.PointTarget, cfg.Seed, cfg.TimeLimit = []string{"kill", "fault-points"}, "leader", "all", 5, 30*time.Second
	if err := sched.Check(); err != nil {
		t.Fatal(err)
	}
	sf := nemesis.RecordSchedule(sched, cfg.Seed, "leader", []int32{1, 2, 3}, nil, nil)
	writeSchedule(orig, &sf)
	writeSettings(orig, &cfg, "process")
	b, _ := os.ReadFile(filepath.Join("..", "checker", "testdata", "lost-write.jsonl"))
	os.WriteFile(orig.History(), b, 0o644)
	rec := cfg.Record("process")
	history.WriteConfig(orig.Config(), &rec)
	if _, res, err := CheckRun(orig.History(), CheckOptions{Store: true}); err != nil || res.Valid != checker.ValidFalse {
		t.Fatalf("the original: %v, %v", res.Valid, err)
	}
	same := func(p nemesis.PointArm) bool {
		return p.Point == crash.Point && p.Action == crash.Action && p.Aim == crash.Aim
	}
	fails := func(s nemesis.Schedule, _ int) bool {
		return slices.ContainsFunc(s, func(st nemesis.Step) bool { return st.Kind == nemesis.FaultPoints && same(st.Point) })
	}
	fake := &fakeRun{t: t, fails: fails, tries: map[string]int{}}
	replay = fake.run
	defer func() { replay = Run }()
	o := ShrinkOptions{Runtime: process.Runtime{}, Binary: binary, MaxReplays: 40, Budget: time.Minute, Tries: 1, Tail: time.Second, Log: testWriter{t}}
	rep, err := Shrink(context.Background(), orig, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Shrunk == "" || len(rep.After) != 1 {
		t.Fatalf("shrunk to %v (stored %q), want one step", rep.After.Steps(), rep.Shrunk)
	}
	got := rep.After[0]
	if got.Kind != nemesis.FaultPoints || !same(got.Point) || got.Point.Probability != crash.Probability || got.Point.Max != crash.Max || got.Pick != 4 {
		t.Fatalf("shrunk to %+v, want the arming %+v", got, crash)
	}
	// The stored schedule replays that arming.
	f, err := nemesis.ReadScheduleFile(rep.Shrunk.Schedule())
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Schedule()
	if err != nil || len(s) != 1 || !same(s[0].Point) {
		t.Fatalf("stored schedule %v (%v), want the one crash at %s", s, err, crash.Point)
	}
}
