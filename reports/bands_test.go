package reports

import (
	"encoding/json"
	"reflect"
	"testing"

	"gregor/history"
)

func nemOp(t int64, f string, step *int) history.Op {
	raw, _ := json.Marshal(map[string]any{"step": step})
	if step == nil {
		raw = []byte(`{"nodes":[]}`)
	}
	return history.Op{Time: t, Process: history.Nemesis, Type: history.Info, F: f, Raw: raw}
}

func stepN(i int) *int { return &i }

// Fault bands pair each fault's start with its own end, by schedule step:
// two composed faults that overlap get a band each, not one band cut short
// at the first end. Traps: a scenario's phase operations extend their
// step's band without opening another; heal-all ends whatever is open; a
// fault never ended runs to the end; an old history without steps pairs
// serially.
func TestFaultBandsPairBySteps(t *testing.T) {
	type b struct {
		x, w  int64
		label string
	}
	got := func(ops []history.Op, end int64) []b {
		var out []b
		for _, x := range faultBands(ops, end) {
			out = append(out, b{int64(x.X), int64(x.W), x.Label})
		}
		return out
	}
	composed := []history.Op{
		nemOp(10, "kill", stepN(0)),
		nemOp(20, "partition", stepN(1)),
		nemOp(30, "start", stepN(0)), // the kill ends; the partition goes on
		nemOp(50, "heal", stepN(1)),
	}
	if g, want := got(composed, 100), []b{{10, 20, "kill"}, {20, 30, "partition"}}; !reflect.DeepEqual(g, want) {
		t.Errorf("composed: %v, want %v", g, want)
	}
	scenario := []history.Op{
		nemOp(10, "strand-leader", stepN(0)),
		nemOp(15, "partition", stepN(0)),
		nemOp(18, "kill", stepN(0)),
		nemOp(40, "end-strand-leader", stepN(0)),
		nemOp(60, "pause", stepN(1)),
		nemOp(70, "kill", stepN(2)),
		nemOp(80, history.VerbHealAll, nil),
		nemOp(90, "kill", stepN(3)),
	}
	want := []b{{10, 30, "strand-leader+partition+kill"}, {60, 20, "pause"}, {70, 10, "kill"}, {90, 10, "kill"}}
	if g := got(scenario, 100); !reflect.DeepEqual(g, want) {
		t.Errorf("scenario, heal-all, never ended: %v, want %v", g, want)
	}
	old := []history.Op{nemOp(10, "kill", nil), nemOp(20, "start", nil), nemOp(30, "pause", nil), nemOp(45, "resume", nil)}
	if g, want := got(old, 100), []b{{10, 10, "kill"}, {30, 15, "pause"}}; !reflect.DeepEqual(g, want) {
		t.Errorf("serial history without steps: %v, want %v", g, want)
	}
}
