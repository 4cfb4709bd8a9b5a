package nemesis

import (
	"context"
	"slices"
	"testing"
	"time"
)

// A link step hits one broker (the target) and a drawn, non-empty set of
// the clients, the same for the same pick.
func TestLinkStepResolves(t *testing.T) {
	topo := StaticTopology{IDs: []int32{1, 2, 3}, Leaders: []int32{2, 3, 1}}
	for _, k := range []Kind{ClientReset, LoseResponses, DelayClient} {
		if !IsLinkKind(k) || IsClientKind(k) {
			t.Fatalf("%s: link %v client %v", k, IsLinkKind(k), IsClientKind(k))
		}
		for pick := range uint64(20) {
			a, err := Resolve(context.Background(), Step{Kind: k, Pick: pick}, TargetLeader, topo)
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Nodes) != 1 || a.Nodes[0] != topo.Leaders[a.Partition] {
				t.Fatalf("%s pick %d: nodes %v, partition %d", k, pick, a.Nodes, a.Partition)
			}
		}
	}
	clients := []int{4, 0, 7, 2, 9}
	seen := map[int]bool{}
	for pick := range uint64(50) {
		ps := linkProcs(pick, clients)
		if len(ps) == 0 || !slices.Equal(ps, linkProcs(pick, slices.Clone(clients))) {
			t.Fatalf("pick %d: %v", pick, ps)
		}
		for _, p := range ps {
			if !slices.Contains(clients, p) {
				t.Fatalf("pick %d: %d is no client", pick, p)
			}
			seen[p] = true
		}
	}
	if len(seen) != len(clients) {
		t.Fatalf("50 picks hit only %v of %v", seen, clients)
	}
	if linkProcs(1, nil) != nil {
		t.Fatal("no clients, yet processes drawn")
	}
}

// A delay-client step holds at least MinDelayHold (beyond the delivery
// timeout); other kinds keep their drawn holds; a client-reset has no end.
func TestDelayClientHold(t *testing.T) {
	o := PlanOptions{Kinds: []Kind{DelayClient, LoseResponses, ClientReset}, Interval: time.Second, Hold: time.Second,
		Limit: time.Minute, MinDelayHold: 7 * time.Second}
	s, err := Plan(3, o)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[Kind]int{}
	for _, st := range s {
		kinds[st.Kind]++
		if st.Kind == DelayClient && st.Hold < o.MinDelayHold {
			t.Fatalf("delay-client hold %v < %v", st.Hold, o.MinDelayHold)
		}
		if st.Kind != DelayClient && st.Hold >= 3*o.Hold/2 {
			t.Fatalf("%s hold %v beyond its draw", st.Kind, st.Hold)
		}
	}
	if len(kinds) != 3 {
		t.Fatalf("kinds drawn %v", kinds)
	}
	ops, err := Describe(context.Background(), s, TargetRandom, StaticTopology{IDs: []int32{1, 2, 3}, Leaders: []int32{1}})
	if err != nil {
		t.Fatal(err)
	}
	if want := 2*len(s) - kinds[ClientReset]; len(ops) != want {
		t.Fatalf("%d described ops for %v, want %d (client-reset has no end)", len(ops), kinds, want)
	}
}

type coordTopo struct {
	StaticTopology
	id  int32
	err error
}

func (c coordTopo) Coordinator(context.Context) (int32, error) { return c.id, c.err }

// TargetCoordinator hits the coordinator the topology names; without one it
// falls back to a random broker and says so.
func TestCoordinatorResolves(t *testing.T) {
	st := StaticTopology{IDs: []int32{1, 2, 3}, Leaders: []int32{1}}
	a, err := Resolve(context.Background(), Step{Kind: Kill, Pick: 7}, TargetCoordinator, coordTopo{st, 3, nil})
	if err != nil || !slices.Equal(a.Nodes, []int32{3}) || a.Note != "" {
		t.Fatalf("%+v %v", a, err)
	}
	a, err = Resolve(context.Background(), Step{Kind: Kill, Pick: 7}, TargetCoordinator, coordTopo{st, -1, context.DeadlineExceeded})
	if err != nil || len(a.Nodes) != 1 || a.Note == "" {
		t.Fatalf("no coordinator: %+v %v", a, err)
	}
	if _, err := ParseTarget("coordinator"); err != nil {
		t.Fatal(err)
	}
}
