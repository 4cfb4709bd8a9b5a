package reports

import (
	"image/color"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gregor/checker"
	"gregor/history"
)

// readExposureRun reads testdata/exposure: a hand-made run of two
// partitions at acks=1. Broker 1 leads queue/0 and is killed at 1.1 s (the
// nemesis recorded HW 7 just before; consumers had read below 5; offsets
// 0-9 were acknowledged, 7-9 above the HW, and 8-9 never read again); the
// samples show no leader at 1.125 s, then broker 2 at epoch 2. At 3.5 s
// broker 2, leading both partitions, is cut off (a line without led, as
// histories before it was recorded: the leaders come from the sample at
// 3.375 s); queue/1's ISR had been broker 2 alone since 1.875 s, and
// consumers had read it below 2 before then.
func readExposureRun(t *testing.T) *history.Run {
	t.Helper()
	run, err := history.ReadRun(filepath.Join("testdata", "exposure", "history.jsonl"), "")
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func TestExposuresFromFixture(t *testing.T) {
	run := readExposureRun(t)
	hits := Exposures(run.Ops, run.Metadata, run.Config)
	if len(hits) != 2 {
		t.Fatalf("%d faults, want 2: %+v", len(hits), hits)
	}
	kill, part := hits[0], hits[1]
	if kill.Kind != "kill" || kill.Step != 0 || kill.Start != 1100e6 || kill.End != 3000e6 || kill.LedFrom != "nemesis" ||
		!strings.Contains(kill.LedNote, "ListOffsets") || !reflect.DeepEqual(kill.Nodes, []int32{1}) {
		t.Fatalf("kill: %+v", kill)
	}
	if part.Kind != "partition" || part.Step != 1 || part.Start != 3500e6 || part.End != 4500e6 || part.LedFrom != "metadata" ||
		part.LedNote != "leaders as sampled at 3.375 s" || !reflect.DeepEqual(part.Partitions[1].Side, []int32{2}) || kill.Partitions[0].Side != nil {
		t.Fatalf("partition: %+v", part)
	}
	type figures struct {
		Partition                     int32
		Leader, Epoch                 int32
		Replicated                    int64
		Since                         int64
		Acked, Exposed, ExposedUnread int
		Moved                         bool
		LeaderlessAt                  int64
		After, AfterEpoch             int32
		AfterAt                       int64
	}
	fig := func(p PartitionHit) figures {
		return figures{p.Partition, p.Leader, p.LeaderEpoch, p.Replicated, p.Since, p.Acked, p.Exposed, p.ExposedUnread,
			p.Moved, p.LeaderlessAt, p.After, p.AfterEpoch, p.AfterAt}
	}
	for _, tc := range []struct {
		name string
		hit  FaultHit
		want []figures
		how  []string
	}{
		{"kill", kill, []figures{
			// HW 7 beats the reads' 5: offsets 7, 8, 9 exposed, 8 and 9
			// (values 9, 10) never read.
			{Partition: 0, Leader: 1, Epoch: 0, Replicated: 7, Since: -1, Acked: 10, Exposed: 3, ExposedUnread: 2,
				Moved: true, LeaderlessAt: 1125e6, After: 2, AfterEpoch: 2, AfterAt: 1375e6},
		}, []string{"HW 7 its leader answered at 1.090 s"}},
		{"partition", part, []figures{
			// Broker 2 led since after 1.125 s (the sample of epoch 1):
			// only value 11 at offset 8 counts, and consumers had read
			// below 8. The stale sample at 3.875 s (epoch 2) is skipped.
			{Partition: 0, Leader: 2, Epoch: 2, Replicated: 8, Since: 1125e6, Acked: 1, Exposed: 1, ExposedUnread: 0,
				Moved: true, LeaderlessAt: -1, After: 3, AfterEpoch: 3, AfterAt: 3625e6},
			// ISR the leader alone: only the read before 1.625 s counts
			// (below 2); offsets 2-7 exposed, all read at the end.
			{Partition: 1, Leader: 2, Epoch: 0, Replicated: 2, Since: -1, Acked: 8, Exposed: 6, ExposedUnread: 0,
				Moved: true, LeaderlessAt: 3625e6, After: 2, AfterEpoch: 2, AfterAt: 4625e6},
		}, []string{"offsets below 8 read by consumers", "the ISR was the leader alone: evidence from before 1.625 s"}},
	} {
		var got []figures
		for i, p := range tc.hit.Partitions {
			got = append(got, fig(p))
			if !strings.Contains(p.ReplicatedHow, tc.how[i]) {
				t.Errorf("%s: partition %d replicated %q, want it to say %q", tc.name, p.Partition, p.ReplicatedHow, tc.how[i])
			}
			if p.Key != "queue/"+string(rune('0'+p.Partition)) {
				t.Errorf("%s: key %q", tc.name, p.Key)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// Under acks=all the same history counts acknowledged offsets as
// replicated (an acknowledgement waits for the ISR): nothing is exposed
// where the ISR had followers; where it was the leader alone, only
// acknowledgements from before it shrank count.
func TestExposuresAcksAll(t *testing.T) {
	run := readExposureRun(t)
	cfg := *run.Config
	cfg.Acks = "all"
	hits := Exposures(run.Ops, run.Metadata, &cfg)
	if p := hits[0].Partitions[0]; p.Exposed != 0 || p.Replicated != 10 {
		t.Fatalf("acks=all kill: replicated %d, exposed %d (%s)", p.Replicated, p.Exposed, p.ReplicatedHow)
	}
	if p := hits[1].Partitions[0]; p.Exposed != 0 {
		t.Fatalf("acks=all partition, queue/0: exposed %d (%s)", p.Exposed, p.ReplicatedHow)
	}
	// queue/1: acknowledged below 5 before 1.625 s; 106-108 (offsets 5-7)
	// were acknowledged by the leader alone.
	if p := hits[1].Partitions[1]; p.Replicated != 5 || p.Exposed != 3 {
		t.Fatalf("acks=all partition, queue/1: replicated %d, exposed %d (%s)", p.Replicated, p.Exposed, p.ReplicatedHow)
	}
	cfg.Acks = "0"
	for _, p := range Exposures(run.Ops, run.Metadata, &cfg)[0].Partitions {
		if !p.NoOffsets {
			t.Fatal("acks=0 not marked")
		}
	}
}

// Without metadata a fault the runner recorded still shows its leader and
// exposure; one it did not says nothing is known; no leader move is
// claimed.
func TestExposuresWithoutMetadata(t *testing.T) {
	run := readExposureRun(t)
	hits := Exposures(run.Ops, nil, run.Config)
	if p := hits[0].Partitions[0]; p.Exposed != 3 || p.Moved || p.AfterWhy != "no metadata samples" {
		t.Fatalf("kill without metadata: %+v", p)
	}
	if len(hits[1].Partitions) != 0 || hits[1].LedNote != "no metadata sample before it began" {
		t.Fatalf("partition without metadata: %+v", hits[1])
	}
}

// The section renders the figures in the fault table, escaped.
func TestFaultsSectionHTML(t *testing.T) {
	path := writeExposureReport(t)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	sec := page[strings.Index(page, `id="faults-hit"`):]
	sec = sec[:strings.Index(sec, "</table>")]
	for _, want := range []string{`id="faults-exposed-total">10<`, `<td class="exposed some">3</td>`, `<td class="unread some">2</td>`,
		`<td class="exposed some">6</td>`, `<td class="unread">0</td>`, "no leader at 1.12 s; broker 2 (epoch 2) at 1.38 s", "leaders as sampled at 3.375 s",
		"&lt;img src=x onerror=alert(1)&gt;"} {
		if !strings.Contains(sec, want) {
			t.Errorf("fault table lacks %q", want)
		}
	}
	if strings.Contains(page, "<img") {
		t.Fatal("markup from the history injected")
	}
}

func writeExposureReport(t *testing.T) string {
	t.Helper()
	run := readExposureRun(t)
	res, err := checker.Check(run.Ops, run.Config, checker.Options{Metadata: run.Metadata})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := WriteRun(f, RunInput{Title: "exposure", Config: run.Config, Ops: run.Ops, Result: &res, Metadata: run.Metadata}); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFaultsSectionInBrowser renders the fixture's report in headless
// chromium: the fault table has one row per partition a fault hit (the
// fault's cells spanning them), the figures as computed, exposed cells
// shaded, and nothing the history held became markup.
func TestFaultsSectionInBrowser(t *testing.T) {
	path := writeExposureReport(t)
	dom, shot := render(t, path)
	i := strings.Index(dom, `<table id="faults"`)
	if i < 0 {
		t.Fatal("no fault table in the page")
	}
	table := dom[i : i+strings.Index(dom[i:], "</table>")]
	for _, c := range []struct {
		re   string
		want int
	}{
		{`<tr id="fault-`, 2},            // two faults
		{`<td rowspan="2"`, 4},           // the partition's cells span its two rows
		{`<td class="exposed some">`, 3}, // 3, 1, 6
		{`<td class="unread some">`, 1},  // 2 of the kill's
		{`<td class="after">moved: `, 3}, // every leader moved
		{`<code>queue/[01]</code>`, 3},   // kill: queue/0; partition: both
		{`<td class="repl">`, 3},
	} {
		if got := count(table, c.re); got != c.want {
			t.Errorf("fault table: %d matches of %s, want %d", got, c.re, c.want)
		}
	}
	mustContain(t, table, "broker 1 (0)", "[1, 2, 3]", "HW 7 its leader answered at 1.090 s",
		"no leader at 3.62 s; broker 2 (epoch 2) at 4.62 s", "broker 3 (epoch 3) at 3.62 s",
		"the ISR was the leader alone: evidence from before 1.625 s", "since 1.12 s", "its side of the partition: 2<")
	mustContain(t, dom, `id="faults-exposed-total">10<`, "<b>2</b> of them never read")
	if strings.Contains(dom, "<img") || strings.Contains(dom, "<script") {
		t.Fatal("markup from the history injected")
	}
	// The shaded exposed cells (orange) and the never-read cell (red) show.
	if n := colours(shot, color.RGBA{0xf7, 0xb2, 0x67, 0xff}); n < 100 {
		t.Fatalf("screenshot has %d orange pixels: the exposed cells did not render", n)
	}
	if n := colours(shot, color.RGBA{0xf0, 0x80, 0x80, 0xff}); n < 30 {
		t.Fatalf("screenshot has %d pink pixels: the never-read cell did not render", n)
	}
}

// A storm's kill rounds (and a scenario's kill phases) that recorded what
// they hit are rows of their own, each ending with the step.
func TestExposuresStormRounds(t *testing.T) {
	hw := func(n int64) *int64 { return &n }
	round := func(n int) *int { return &n }
	step := 0
	var ops []history.Op
	nem := func(t int64, f string, v history.NemesisValue) {
		v.Step = &step
		op := history.NemesisOp(t, f, v, nil)
		op.Index = int64(len(ops))
		ops = append(ops, op)
	}
	send := func(t int64, off int64) {
		m := history.Send("q/0", off+1)
		ops = append(ops, history.Op{Index: int64(len(ops)), Time: t, Process: 0, Type: history.Invoke, F: history.FSend, Mops: []history.Mop{m}})
		m.Offset = off
		ops = append(ops, history.Op{Index: int64(len(ops)), Time: t + 1, Process: 0, Type: history.OK, F: history.FSend, Mops: []history.Mop{m}})
	}
	for i := int64(0); i < 5; i++ {
		send(10+i*10, i)
	}
	one := history.NemesisAction{Nodes: []int32{1}, Partition: 0}
	nem(100, history.NemesisRestartStorm, history.NemesisValue{NemesisAction: one})
	nem(110, history.NemesisRestartStorm, history.NemesisValue{NemesisAction: one, Phase: "kill", Round: round(0),
		Led: []history.LedPartition{{Partition: 0, Leader: 1, ISR: []int32{1, 2, 3}, HW: hw(3), At: 105}}})
	nem(150, history.NemesisRestartStorm, history.NemesisValue{NemesisAction: one, Phase: "start", Round: round(0)})
	send(160, 5)
	nem(200, history.NemesisRestartStorm, history.NemesisValue{NemesisAction: history.NemesisAction{Nodes: []int32{2}, Partition: 0}, Phase: "kill", Round: round(1),
		Led: []history.LedPartition{{Partition: 0, Leader: 2, LeaderEpoch: 1, ISR: []int32{1, 2, 3}, HW: hw(6), At: 195}}})
	nem(300, history.EndVerb(history.NemesisRestartStorm), history.NemesisValue{NemesisAction: one, Round: round(2)})
	hits := Exposures(ops, nil, &history.Config{Acks: "1"})
	if len(hits) != 3 {
		t.Fatalf("%d rows, want the storm's start and its 2 kill rounds: %+v", len(hits), hits)
	}
	for i, h := range hits {
		if h.End != 300 {
			t.Errorf("row %d ends at %d, want the storm's end", i, h.End)
		}
	}
	if hits[0].LedFrom != "" || len(hits[0].Partitions) != 0 || hits[0].LedNote != "no metadata sample before it began" {
		t.Errorf("storm start: %+v", hits[0])
	}
	if p := hits[1].Partitions[0]; *hits[1].Round != 0 || p.Replicated != 3 || p.Acked != 5 || p.Exposed != 2 {
		t.Errorf("round 0: %+v", p)
	}
	if p := hits[2].Partitions[0]; *hits[2].Round != 1 || p.Leader != 2 || p.Replicated != 6 || p.Acked != 6 || p.Exposed != 0 {
		t.Errorf("round 1: %+v", p)
	}
	v := faultsSection(ops, nil, &history.Config{Acks: "1"})
	if got := v.Rows[1].Fault; got != "restart-storm (step 0, round 0, kill)" {
		t.Errorf("round 0 labelled %q", got)
	}
}

// A table of more rows than maxFaultRows stops at a whole fault and says
// so; the totals count every fault.
func TestFaultsSectionBounded(t *testing.T) {
	var ops []history.Op
	step := 0
	for i := range maxFaultRows + 10 {
		v := history.NemesisValue{NemesisAction: history.NemesisAction{Nodes: []int32{1}, Partition: 0}, Step: &step,
			Led: []history.LedPartition{{Partition: 0, Leader: 1, ISR: []int32{1}}, {Partition: 1, Leader: 1, ISR: []int32{1}}}}
		op := history.NemesisOp(int64(i), history.NemesisKill, v, nil)
		op.Index = int64(i)
		ops = append(ops, op)
		step++
	}
	v := faultsSection(ops, nil, nil)
	if len(v.Rows) != maxFaultRows || !v.Rows[len(v.Rows)-2].First || v.Note == "" {
		t.Fatalf("%d rows, note %q", len(v.Rows), v.Note)
	}
}
