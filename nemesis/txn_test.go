package nemesis

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// txnTopo is StaticTopology with transactional ids and their coordinators.
type txnTopo struct {
	StaticTopology
	coord map[string]int32
}

func (t txnTopo) TxnIDs() []string {
	var ids []string
	for _, id := range []string{"a", "b", "c"} {
		if _, ok := t.coord[id]; ok {
			ids = append(ids, id)
		}
	}
	return ids
}

func (t txnTopo) TxnCoordinator(_ context.Context, id string) (int32, error) {
	n, ok := t.coord[id]
	if !ok || n < 0 {
		return -1, errors.New("COORDINATOR_NOT_AVAILABLE")
	}
	return n, nil
}

// kill-txn-coordinator hits the coordinator of a drawn transactional id,
// names the id, and falls back to a random broker, saying so, when the
// coordinator is unknown or the topology knows no ids.
func TestResolveKillTxnCoordinator(t *testing.T) {
	ctx := context.Background()
	topo := txnTopo{StaticTopology{IDs: []int32{1, 2, 3, 4, 5}, Leaders: []int32{1}}, map[string]int32{"a": 2, "b": 4, "c": 5}}
	seen := map[string]bool{}
	for pick := range uint64(40) {
		a, err := Resolve(ctx, Step{Kind: KillTxnCoordinator, Pick: pick}, TargetRandom, topo)
		if err != nil {
			t.Fatal(err)
		}
		id := strings.TrimPrefix(a.Note, "coordinator of transactional id ")
		if len(a.Nodes) != 1 || a.Nodes[0] != topo.coord[id] {
			t.Fatalf("pick %d: %+v, want the coordinator of %q (%d)", pick, a, id, topo.coord[id])
		}
		seen[id] = true
	}
	if len(seen) != 3 {
		t.Errorf("ids drawn: %v, want all three", seen)
	}
	unknown := txnTopo{topo.StaticTopology, map[string]int32{"a": -1}}
	a, _ := Resolve(ctx, Step{Kind: KillTxnCoordinator}, TargetRandom, unknown)
	if len(a.Nodes) != 1 || !strings.Contains(a.Note, "unknown") {
		t.Errorf("unknown coordinator: %+v", a)
	}
	a, _ = Resolve(ctx, Step{Kind: KillTxnCoordinator}, TargetRandom, topo5)
	if len(a.Nodes) != 1 || !strings.Contains(a.Note, "no transactional ids") {
		t.Errorf("no ids: %+v", a)
	}
	if !TxnOnly(KillTxnCoordinator) || !TxnOnly(PauseProducer) || !IsClientKind(PauseProducer) || IsClientKind(KillTxnCoordinator) || TxnOnly(Kill) {
		t.Error("classes of the txn nemeses")
	}
}
