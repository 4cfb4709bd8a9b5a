package nemesis

import (
	"bytes"
	"context"
	"reflect"
	"testing"
	"time"

	"gregor/history"
)

// A node fault's start records the partitions the nodes hit led just before
// it was applied (their ISR from the topology); its end does not.
func TestRunnerRecordsLed(t *testing.T) {
	fc := &fakeCluster{}
	var buf bytes.Buffer
	h := history.NewWriter(&buf, 0)
	topo := StaticTopology{IDs: []int32{1, 2, 3}, Leaders: []int32{2, 1, 2}, ISRs: [][]int32{{3, 2}, {1, 2, 3}, {2}}}
	r := &Runner{Cluster: fc, Topo: topo, History: h, Epoch: time.Now(), Target: TargetLeader}
	if err := r.Run(context.Background(), Schedule{{Kind: Kill, Hold: time.Millisecond, Pick: 1}}); err != nil {
		t.Fatal(err)
	}
	h.Flush()
	ops, _, _, err := history.ReadAll(&buf)
	if err != nil || len(ops) != 2 {
		t.Fatalf("%d ops, %v", len(ops), err)
	}
	start, _ := history.ParseNemesis(&ops[0])
	end, _ := history.ParseNemesis(&ops[1])
	if len(start.Nodes) != 1 {
		t.Fatalf("kill hit %v", start.Nodes)
	}
	var want []history.LedPartition
	for p, l := range topo.Leaders {
		if l == start.Nodes[0] {
			want = append(want, history.LedPartition{Partition: int32(p), Leader: l, ISR: sorted(topo.ISRs[p])})
		}
	}
	for i := range start.Led {
		if start.Led[i].At <= 0 || start.Led[i].At > ops[0].Time {
			t.Fatalf("led sampled at %d, the fault written at %d", start.Led[i].At, ops[0].Time)
		}
		start.Led[i].At = 0
	}
	if !reflect.DeepEqual(start.Led, want) || start.LedError != "" {
		t.Fatalf("led %+v (%q), want %+v", start.Led, start.LedError, want)
	}
	if end.Led != nil {
		t.Fatalf("the fault's end records led %+v", end.Led)
	}
}

// A restart storm's every kill round records what the node it kills led;
// its start, restarts and end do not.
func TestStormRoundsRecordLed(t *testing.T) {
	fc := &fakeCluster{}
	var buf bytes.Buffer
	h := history.NewWriter(&buf, 0)
	topo := StaticTopology{IDs: []int32{1, 2, 3}, Leaders: []int32{2}}
	r := &Runner{Cluster: fc, Topo: topo, History: h, Epoch: time.Now(), Target: TargetLeader, SessionTimeout: 200 * time.Millisecond}
	if err := r.Run(context.Background(), Schedule{{Kind: RestartStorm, Hold: 300 * time.Millisecond, Pick: 1}}); err != nil {
		t.Fatal(err)
	}
	h.Flush()
	ops, _, _, err := history.ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	kills := 0
	for _, op := range ops {
		v, _ := history.ParseNemesis(&op)
		if v.Phase == "kill" {
			kills++
			if len(v.Led) != 1 || v.Led[0].Leader != 2 || v.Led[0].Partition != 0 {
				t.Fatalf("round %v's kill led %+v", v.Round, v.Led)
			}
		} else if v.Led != nil {
			t.Fatalf("%s (phase %q) records led %+v", op.F, v.Phase, v.Led)
		}
	}
	if kills == 0 {
		t.Fatal("no kill round")
	}
}
