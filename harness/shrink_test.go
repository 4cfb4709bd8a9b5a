package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gregor/checker"
	"gregor/history"
	"gregor/nemesis"
	"gregor/runtime/process"
)

// A planted bug (ack-before-isr: acks=all answered before the ISR has the
// batch) under isolate-leader partitions fails a short run; gregor shrink
// replays it with fewer faults and stores a smaller schedule that still
// shows one of the run's forbidden anomalies, as a new run with the same
// seed, linked both ways. Bounded: 4 replays, 5 minutes.
func TestShrinkPlantedBugToFewerFaults(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	if testing.Short() {
		t.Skip("a 14 s run and up to 4 replays")
	}
	store := t.TempDir()
	c := testCluster(3, 2)
	c.Controllers, c.Dedicated, c.Bugs = 1, true, []string{"ack-before-isr"}
	tc := Test{
		Config: Config{Name: "ackisr", Store: store, Cluster: c, Partitions: 3, RF: 3,
			Acks: "all", Idempotence: true, Retries: -1, DeliveryTimeout: 4 * time.Second, Rate: 400, Producers: 16, Consumers: 1,
			Nemeses: []string{string(nemesis.Partition)}, Target: string(nemesis.TargetLeader), Shapes: []string{string(nemesis.IsolateLeader)},
			Interval: 2 * time.Second, Hold: 3 * time.Second, Seed: 3,
			WarmUp: time.Second, TimeLimit: 14 * time.Second, RecoveryTimeout: 30 * time.Second, FinalReadTimeout: 30 * time.Second},
		Runtime: process.Runtime{Dir: t.TempDir()}, Binary: binary, CheckTimeout: 20 * time.Second,
	}
	rep, err := Run(context.Background(), tc)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if rep.Result.Valid != checker.ValidFalse {
		t.Fatalf("the planted bug was not caught (valid %s, counts %v): nothing to shrink", rep.Result.Valid, rep.Result.Counts)
	}
	if len(rep.Schedule) < 2 {
		t.Fatalf("the run drew %d faults: too few to show shrinking", len(rep.Schedule))
	}
	orig := history.RunDir(rep.Dir)
	origResults, _ := os.ReadFile(orig.Results())

	var log bytes.Buffer
	sr, err := Shrink(context.Background(), orig, ShrinkOptions{Runtime: tc.Runtime, Binary: binary,
		MaxReplays: 4, Budget: 5 * time.Minute, Tries: 1, Tail: 2 * time.Second, Log: &log, CheckTimeout: 20 * time.Second})
	t.Logf("shrink log:\n%s", log.String())
	if err != nil {
		t.Fatalf("shrink: %v", err)
	}
	l := sr.Links
	if sr.Shrunk == "" {
		t.Fatalf("no smaller failing schedule in %d replays (exhausted %v)", l.Replays, l.Exhausted)
	}
	if l.Before.Faults != len(rep.Schedule) || l.After.Faults >= l.Before.Faults || l.Replays > 4 {
		t.Fatalf("faults %d -> %d in %d replays: want fewer, within 4", l.Before.Faults, l.After.Faults, l.Replays)
	}
	// The shrunk run is a stored run of the same seed whose schedule has
	// After.Faults steps and whose result shows one of the anomalies.
	if got := filepath.Dir(string(sr.Shrunk)); got != filepath.Join(store, "ackisr-shrunk") {
		t.Errorf("shrunk run stored in %s, want under %s", got, filepath.Join(store, "ackisr-shrunk"))
	}
	sf, err := nemesis.ReadScheduleFile(sr.Shrunk.Schedule())
	if err != nil {
		t.Fatal(err)
	}
	if len(sf.Steps) != l.After.Faults || sf.Source != nemesis.SourceShrunk || sf.Seed != tc.Seed {
		t.Errorf("shrunk schedule.json: %d steps, source %s, seed %d", len(sf.Steps), sf.Source, sf.Seed)
	}
	res, err := checker.ReadResultFile(sr.Shrunk.Results())
	if err != nil {
		t.Fatal(err)
	}
	if !showsAny(*res, l.Anomalies) {
		t.Errorf("the shrunk run's result shows none of %v: %v", l.Anomalies, res.Counts)
	}
	st, err := ReadSettings(sr.Shrunk)
	if err != nil || st.Config.Seed != tc.Seed || st.Config.Schedule != absPath(sr.Shrunk.Schedule()) {
		t.Errorf("shrunk run.json: %+v (%v)", st, err)
	}
	// Linked both ways, in shrink.json and in the reports.
	to, err1 := history.ReadShrinkLinks(orig)
	from, err2 := history.ReadShrinkLinks(sr.Shrunk)
	if err1 != nil || err2 != nil || to == nil || from == nil {
		t.Fatalf("shrink.json: %v %v", err1, err2)
	}
	if got := filepath.Join(string(orig), filepath.FromSlash(to.ShrunkTo)); got != string(sr.Shrunk) {
		t.Errorf("the original links %s, want %s", got, sr.Shrunk)
	}
	if got := filepath.Join(string(sr.Shrunk), filepath.FromSlash(from.ShrunkFrom)); got != string(orig) {
		t.Errorf("the shrunk run links %s, want %s", got, orig)
	}
	for _, c := range []struct {
		dir  history.RunDir
		link string
	}{{orig, `id="shrunk-to" href="` + to.ShrunkTo}, {sr.Shrunk, `id="shrunk-from" href="` + from.ShrunkFrom}} {
		b, _ := os.ReadFile(c.dir.Report())
		if !strings.Contains(string(b), c.link) {
			t.Errorf("%s: no link %s", c.dir.Report(), c.link)
		}
	}
	// The original's result is left as it was; the replays are gone.
	if now, _ := os.ReadFile(orig.Results()); !bytes.Equal(now, origResults) {
		t.Error("shrink rewrote the original's results.json")
	}
	if m, _ := filepath.Glob(filepath.Join(store, ".shrink-*")); len(m) != 0 {
		t.Errorf("replays left behind: %v", m)
	}
}

// A run that did not fail, or one without run.json, is refused before any
// replay, naming why.
func TestShrinkRefusesWhatItCannotShrink(t *testing.T) {
	dir := history.RunDir(filepath.Join(t.TempDir(), "queue", "20260101T000000.000Z"))
	os.MkdirAll(string(dir), 0o755)
	o := ShrinkOptions{Runtime: process.Runtime{}, MaxReplays: 1, Budget: time.Minute, Tries: 1, Tail: time.Second}
	if _, err := Shrink(context.Background(), dir, o); err == nil || !strings.Contains(err.Error(), "has no run.json") {
		t.Fatalf("no run.json: got %v", err)
	}
	cfg := DefaultConfig()
	cfg.Nemeses = []string{"kill"}
	if err := writeSettings(dir, &cfg, "process"); err != nil {
		t.Fatal(err)
	}
	f := nemesis.RecordSchedule(nemesis.Schedule{{At: time.Second, Kind: nemesis.Kill, Hold: time.Second, Pick: 1}}, 1, nemesis.TargetRandom, []int32{1, 2, 3}, nil, nil)
	if err := writeSchedule(dir, &f); err != nil {
		t.Fatal(err)
	}
	valid := checker.Result{Valid: checker.ValidTrue}
	os.WriteFile(dir.Results(), valid.JSON(), 0o644)
	if _, err := Shrink(context.Background(), dir, o); !errors.Is(err, ErrNothingToShrink) {
		t.Fatalf("a valid run: got %v, want ErrNothingToShrink", err)
	}
	failed := checker.Result{Valid: checker.ValidFalse, Forbidden: map[string]string{checker.LostWrite: "x"}, Counts: map[string]int{checker.LostWrite: 1}}
	os.WriteFile(dir.Results(), failed.JSON(), 0o644)
	o.Anomalies = []string{checker.Duplicate}
	if _, err := Shrink(context.Background(), dir, o); err == nil || !strings.Contains(err.Error(), "choose from them") {
		t.Fatalf("an anomaly the run did not show: got %v", err)
	}
}

// A step's overrun is the time it took beyond its hold, from its first
// nemesis operation to its end: a scenario's story, a restart.
func TestShrinkOverruns(t *testing.T) {
	s := int64(time.Second)
	sched := nemesis.Schedule{{At: time.Second, Kind: nemesis.StrandLeader, Hold: 3 * time.Second, Pick: 7},
		{At: 20 * time.Second, Kind: nemesis.Kill, Hold: 2 * time.Second, Pick: 9}}
	op := func(at int64, f string, step int) history.Op {
		return history.Op{Time: at, Process: history.Nemesis, F: f, Raw: []byte(`{"step":` + strconv.Itoa(step) + `}`)}
	}
	ops := []history.Op{
		op(1*s, "strand-leader", 0), op(5*s, "strand-leader", 0), op(11*s, "end-strand-leader", 0),
		op(20*s, "kill", 1), op(22*s+s/2, "start", 1),
		{Time: 30 * s, Process: history.Nemesis, F: history.VerbHealAll, Raw: []byte(`{"nodes":[]}`)},
	}
	got := overruns(sched, ops)
	if got[7] != 7*time.Second || got[9] != 500*time.Millisecond || len(got) != 2 {
		t.Fatalf("overruns %v, want 7s for the story, 500ms for the restart", got)
	}
}

// schedule.json and run.json are written before the cluster boots: a run
// that dies at boot leaves both, the schedule as drawn, nothing resolved.
func TestScheduleWrittenBeforeBoot(t *testing.T) {
	tc := leaderKillTest(t, "noboot", "all", 2)
	tc.Binary = filepath.Join(t.TempDir(), "no-such-gregor")
	rep, err := Run(context.Background(), tc)
	if err == nil || rep == nil || rep.Dir == "" {
		t.Fatalf("a run without a binary booted: %v", err)
	}
	sf, err := nemesis.ReadScheduleFile(history.RunDir(rep.Dir).Schedule())
	if err != nil {
		t.Fatalf("no schedule.json after a failed boot: %v", err)
	}
	s, err := sf.Schedule()
	if err != nil || len(s) == 0 || fmt.Sprint(s) != fmt.Sprint(rep.Schedule) {
		t.Fatalf("schedule.json %v (%v), want the drawn %v", s, err, rep.Schedule)
	}
	for i, r := range sf.Steps {
		if r.Resolved != nil {
			t.Errorf("step %d resolved before any fault ran: %v", i, r.Resolved)
		}
	}
	if st, err := ReadSettings(history.RunDir(rep.Dir)); err != nil || st.Config.Seed != tc.Seed {
		t.Fatalf("run.json after a failed boot: %+v %v", st, err)
	}
}
