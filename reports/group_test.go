package reports

import (
	"cmp"
	"image/color"
	"slices"
	"strings"
	"testing"

	"gregor/checker"
	"gregor/history"
)

// groupHistory is a two-second group run: 2 partitions written every 10 ms,
// two consumers, one crashing (its last record processed again by the
// other after an eager rebalance), then a third consumer joining. The group
// is named with markup, which the report must escape.
func groupHistory() []history.Op {
	const ms = int64(1e6)
	group := "g" + hostile
	var ops []history.Op
	add := func(op history.Op) {
		op.Index = int64(len(ops))
		ops = append(ops, op)
	}
	reb := func(t int64, p history.Process, slot int, ev string, gen int32, keys ...string) {
		op := history.RebalanceOp(p, group, history.Rebalance{Event: ev, Keys: keys, Generation: gen, Slot: slot})
		op.Time = t
		add(op)
	}
	reb(0, 10, 0, history.RebalanceJoin, -1)
	reb(0, 11, 1, history.RebalanceJoin, -1)
	reb(20*ms, 10, 0, history.RebalanceAssigned, 1, "t/0")
	reb(20*ms, 11, 1, history.RebalanceAssigned, 1, "t/1")
	owner := map[string]history.Process{"t/0": 10, "t/1": 11}
	paused := func(t int64) bool { return t >= 900*ms && t < 1200*ms }
	var backlog []history.Op
	for i := int64(0); i < 200; i++ {
		t := 30*ms + i*10*ms
		for p, key := range []string{"t/0", "t/1"} {
			m := history.Send(key, i)
			add(history.Op{Time: t, Process: history.Process(p), Type: history.Invoke, F: history.FSend, Mops: []history.Mop{m}})
			m.Offset = i
			add(history.Op{Time: t + ms, Process: history.Process(p), Type: history.OK, F: history.FSend, Mops: []history.Mop{m}})
			proc := history.Op{Process: owner[key], Type: history.OK, F: history.FProcess, Group: group,
				Records: []history.KeyRecords{{Key: key, Records: []history.Record{{Offset: i, Value: i}}}}}
			if i == 87 && key == "t/0" {
				reb(900*ms, 10, 0, history.RebalanceRevoked, 1, "t/0")
				reb(1200*ms, 10, 0, history.RebalanceAssigned, 2, "t/0", "t/1")
				reb(1200*ms, 12, 1, history.RebalanceAssigned, 2)
			}
			if paused(t) {
				backlog = append(backlog, proc)
				continue
			}
			for _, b := range backlog {
				b.Time, b.Process = t+2*ms, owner[b.Records[0].Key]
				add(b)
			}
			backlog = nil
			proc.Time = t + 3*ms
			add(proc)
			if i == 80 && key == "t/1" {
				add(history.Op{Time: t + 4*ms, Process: history.Nemesis, Type: history.Info, F: "client-crash", Raw: []byte(`{"process":11}`)})
				add(history.Op{Time: t + 5*ms, Process: 11, Type: history.Info, F: history.FCrash})
				reb(t+6*ms, 12, 1, history.RebalanceJoin, -1)
				owner["t/1"] = 10 // processes it again after the rebalance
				add(history.Op{Time: 1200*ms + 1, Process: 10, Type: history.OK, F: history.FProcess, Group: group,
					Records: []history.KeyRecords{{Key: key, Records: []history.Record{{Offset: i, Value: i}}}}})
			}
		}
	}
	slices.SortStableFunc(ops, func(a, b history.Op) int { return cmp.Compare(a.Time, b.Time) })
	for i := range ops {
		ops[i].Index = int64(i)
	}
	return ops
}

// The run report of a group run shows the lag chart with its rebalance
// bands, the rebalance table and the crash's redeliveries, in chromium.
func TestGroupReportInBrowser(t *testing.T) {
	ops := groupHistory()
	cfg := &history.Config{Acks: "all", AutoCommit: true, Nemeses: []string{"client-crash"}, Workload: "group"}
	path, res := writeRunReport(t, ops, cfg)
	if len(res.Groups) != 1 {
		t.Fatalf("figures: %+v", res.Groups)
	}
	g := res.Groups[0]
	counted := 0
	for _, r := range g.Rebalances {
		if !r.Initial && !r.Shutdown {
			counted++
		}
	}
	if counted == 0 || g.TotalPause <= 0 || len(g.Ends) != 1 || g.Ends[0].Redelivered != 1 {
		t.Fatalf("the history should hold a counted rebalance with a pause and a crash with one redelivery: %+v", g)
	}
	dom, shot := render(t, path)
	if strings.Contains(dom, "<script") || strings.Contains(dom, "<img") {
		t.Fatal("markup from the group name was injected")
	}
	mustContain(t, dom, `class="lag-chart"`, `id="group-g&lt;script&gt;`, "Consumer group")
	if got := count(dom, `<rect class="rebalance"`); got != counted {
		t.Errorf("%d rebalance bands drawn, %d rebalances counted", got, counted)
	}
	if got := count(dom, `<path class="lag-processed" d="M`); got != 1 {
		t.Errorf("%d processing-lag paths", got)
	}
	if got := strings.Count(dom[strings.Index(dom, `class="lag-processed"`):], "L"); got < checker.LagSamples-1 {
		t.Errorf("processing-lag path has %d segments, want %d", got, checker.LagSamples-1)
	}
	table := dom[strings.Index(dom, `class="rebalances"`):]
	table = table[:strings.Index(table, "</table>")]
	if got := strings.Count(table, "<tr>") - 1; got != len(g.Rebalances) {
		t.Errorf("rebalance table has %d rows for %d rebalances", got, len(g.Rebalances))
	}
	mustContain(t, dom, `class="ends"`, "crash")
	// The rebalance band is drawn: pale purple pixels.
	if n := colours(shot, color.RGBA{0xdc, 0xcd, 0xe9, 0xff}); n < 50 {
		t.Errorf("screenshot has %d pixels of the rebalance band", n)
	}
}
