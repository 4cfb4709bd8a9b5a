package nemesis

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gregor/history"
)

// A drawn schedule survives schedule.json: written, read back, the same
// steps (picks above 2^53 included), and Describe resolves them the same.
func TestScheduleFileRoundTrip(t *testing.T) {
	s, err := Plan(7, planOpts())
	if err != nil {
		t.Fatal(err)
	}
	s = s[:40]
	big := false
	for _, st := range s {
		big = big || st.Pick > 1<<53
	}
	if !big {
		t.Fatal("no pick above 2^53 in 40 steps: the test would not show the pick survives JSON")
	}
	params := func(k Kind) map[string]string {
		if k == Slow {
			return map[string]string{"delay": "5s", "loss": "0"}
		}
		return nil
	}
	f := RecordSchedule(s, 7, TargetLeader, topo5.IDs, []int32{6}, params)
	path := filepath.Join(t.TempDir(), history.ScheduleFile)
	if err := os.WriteFile(path, f.JSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := ReadScheduleFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := back.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("read back %v\nwant %v", got, s)
	}
	a, _ := Describe(context.Background(), s, TargetLeader, topo5)
	b, _ := Describe(context.Background(), got, TargetLeader, topo5)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the read-back schedule resolves differently")
	}
	for i, r := range back.Steps {
		if (r.Kind == string(Slow)) != (r.Params != nil) {
			t.Errorf("step %d %s: params %v", i, r.Kind, r.Params)
		}
		if IsClientKind(Kind(r.Kind)) != (r.Target == "") {
			t.Errorf("step %d %s: target %q (client faults hit no node)", i, r.Kind, r.Target)
		}
	}
	if back.Seed != 7 || back.Source != SourceDrawn || !reflect.DeepEqual(back.Voters, []int32{6}) {
		t.Errorf("header: %+v", back)
	}
}

// Damaged or foreign files are refused naming the step and what is wrong.
func TestScheduleFileRefusesBadSteps(t *testing.T) {
	base := RecordSchedule(Schedule{{At: time.Second, Kind: Kill, Hold: time.Second, Pick: 1},
		{At: 3 * time.Second, Kind: Partition, Shape: Halves, Hold: time.Second, Pick: 2}}, 1, TargetRandom, []int32{1, 2, 3}, nil, nil)
	cases := []struct {
		name string
		edit func(f *ScheduleFile)
		want string
	}{
		{"kind", func(f *ScheduleFile) { f.Steps[0].Kind = "explode" }, `step 0: unknown nemesis kind "explode"`},
		{"shape", func(f *ScheduleFile) { f.Steps[1].Shape = "triangle" }, `step 1: partition shape "triangle"`},
		{"pick", func(f *ScheduleFile) { f.Steps[0].Pick = "-1" }, `step 0: pick "-1"`},
		{"overlap", func(f *ScheduleFile) {
			// Two kills overlap (one stream); a kill may overlap a partition.
			f.Steps[0].Hold = history.Duration(5 * time.Second)
			f.Steps[1].Kind, f.Steps[1].Shape = string(Kill), ""
		}, "starts before step 0"},
		{"version", func(f *ScheduleFile) { f.Version = 9 }, "version 9"},
	}
	for _, c := range cases {
		f := base
		f.Steps = append([]StepRecord(nil), base.Steps...)
		c.edit(&f)
		path := filepath.Join(t.TempDir(), "s.json")
		os.WriteFile(path, f.JSON(), 0o644)
		if _, err := ReadScheduleFile(path); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: got %v, want an error naming %s and %q", c.name, err, path, c.want)
		}
	}
}

// Fits refuses a schedule that names kinds, a target or nodes the run
// does not have, with the flag that fixes it; it accepts one that fits.
func TestScheduleFits(t *testing.T) {
	f := RecordSchedule(Schedule{{At: time.Second, Kind: Kill, Hold: time.Second, Pick: 1},
		{At: 3 * time.Second, Kind: PowerLoss, Hold: time.Second, Pick: 2}}, 1, TargetLeader, []int32{1, 2, 3}, nil, nil)
	if err := f.Fits([]Kind{Kill, PowerLoss}, TargetLeader, []int32{1, 2, 3}, nil); err != nil {
		t.Fatalf("a fitting schedule refused: %v", err)
	}
	cases := []struct {
		kinds   []Kind
		target  Target
		brokers []int32
		want    string
	}{
		{[]Kind{Kill}, TargetLeader, []int32{1, 2, 3}, "step 1 is power-loss, which --nemesis does not name"},
		{[]Kind{Kill, PowerLoss}, TargetRandom, []int32{1, 2, 3}, "give --nemesis-target leader"},
		{[]Kind{Kill, PowerLoss}, TargetLeader, []int32{1, 2}, "give --nodes 3"},
	}
	for _, c := range cases {
		if err := f.Fits(c.kinds, c.target, c.brokers, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %s %v: got %v, want %q", c.kinds, c.target, c.brokers, err, c.want)
		}
	}
	g := f
	g.Steps = append([]StepRecord(nil), f.Steps...)
	g.Steps[0].Resolved = []int32{7}
	if err := g.Fits([]Kind{Kill, PowerLoss}, TargetLeader, []int32{1, 2, 3}, []int32{4}); err == nil || !strings.Contains(err.Error(), "hit node 7") {
		t.Errorf("a step that hit node 7 on a 4-node run: got %v", err)
	}
}

// Resolve reads each step's nodes from the run's nemesis operations: the
// fault's start, not its end, not a failed start, not another process.
func TestScheduleResolve(t *testing.T) {
	s := Schedule{{At: time.Second, Kind: Kill, Hold: time.Second, Pick: 1},
		{At: 3 * time.Second, Kind: Pause, Hold: time.Second, Pick: 2},
		{At: 5 * time.Second, Kind: Kill, Hold: time.Second, Pick: 3}}
	f := RecordSchedule(s, 1, TargetRandom, topo5.IDs, nil, nil)
	ops, err := Describe(context.Background(), s, TargetRandom, topo5)
	if err != nil {
		t.Fatal(err)
	}
	var want [][]int32
	for _, op := range ops {
		if !history.IsEndVerb(op.F) {
			v, err := history.ParseNemesis(&op)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, v.Nodes)
		}
	}
	// The last step failed to start: it stays unresolved.
	ops[len(ops)-2].Error = "boom"
	f.Resolve(ops)
	for i := range 2 {
		if !reflect.DeepEqual(f.Steps[i].Resolved, want[i]) || len(want[i]) == 0 {
			t.Errorf("step %d resolved %v, want %v", i, f.Steps[i].Resolved, want[i])
		}
	}
	if f.Steps[2].Resolved != nil {
		t.Errorf("a step that failed resolved to %v", f.Steps[2].Resolved)
	}
}
