package group

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/invariant"
)

func TestMain(m *testing.M) {
	invariant.Enable()
	os.Exit(m.Run())
}

// stableGroup is a Stable group of generation 3: leader a (static, instance
// i1) and b, both on range.
func stableGroup() *Group {
	g := newGroup("g")
	g.known, g.state, g.generation, g.protocolType, g.protocol, g.leader = true, Stable, 3, "consumer", "range", "a"
	inst := "i1"
	for _, id := range []string{"a", "b"} {
		m := &member{id: id, protocolType: "consumer", protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range"}}}
		if id == "a" {
			m.instanceID = &inst
			g.static[inst] = id
		}
		g.members[id] = m
	}
	return g
}

// TestGroupInvariantsCatch breaks each group invariant on purpose and sees
// the check name it.
func TestGroupInvariantsCatch(t *testing.T) {
	if err := stableGroup().invariants(); err != nil {
		t.Fatalf("healthy group: %v", err)
	}
	cases := []struct {
		name   string
		break_ func(g *Group)
		want   string
	}{
		{"generation goes back", func(g *Group) { g.generation = 2 }, "went back from 3 to 2"},
		{"leader not a member", func(g *Group) { g.leader = "z" }, "is not a member"},
		{"no leader when stable", func(g *Group) { g.leader = "" }, "no leader"},
		{"no protocol when stable", func(g *Group) { g.protocol = "" }, "no leader"},
		{"static names a stranger", func(g *Group) { g.static["i2"] = "z" }, "not a member with that instance id"},
		{"static member unmapped", func(g *Group) { delete(g.static, "i1") }, `maps to ""`},
		{"pending and joined", func(g *Group) { g.pending["b"] = nil }, "both pending and joined"},
		{"member under another id", func(g *Group) { g.members["b"].id = "c" }, "its own is"},
		{"member without the protocol", func(g *Group) { g.members["b"].protocols = nil }, "does not support"},
		{"members in Empty", func(g *Group) { g.state = Empty }, "in state Empty"},
		{"members in Dead", func(g *Group) { g.state = Dead }, "in state Dead"},
		{"unknown state", func(g *Group) { g.state = "Sleepy" }, "unknown state"},
		{"syncing when stable", func(g *Group) { g.syncing = true }, "being written"},
		{"members but unknown", func(g *Group) { g.known = false }, "not known"},
		{"join parked when stable", func(g *Group) { g.members["b"].joinWait = make(chan *kmsg.JoinGroupResponse, 1) }, "parked JoinGroup"},
		{"join parked unbuffered", func(g *Group) {
			g.state = PreparingRebalance
			g.members["b"].joinWait = make(chan *kmsg.JoinGroupResponse)
		}, "capacity 0"},
		{"join answered twice", func(g *Group) {
			g.state = PreparingRebalance
			ch := make(chan *kmsg.JoinGroupResponse, 1)
			ch <- nil
			g.members["b"].joinWait = ch
		}, "1 sent"},
		{"sync parked when stable", func(g *Group) { g.members["b"].syncWait = make(chan *kmsg.SyncGroupResponse, 1) }, "parked SyncGroup"},
		{"nothing pending for a producer", func(g *Group) { g.txnOffsets[7] = map[TopicPartition]committed{} }, "0 transactional offsets pending for producer 7"},
		{"offsets pending for no producer", func(g *Group) { g.addTxnOffset(-1, TopicPartition{"t", 0}, committed{}) }, "pending for producer -1"},
		{"pending offset nowhere in the log", func(g *Group) { g.addTxnOffset(7, TopicPartition{"t", 0}, committed{logOffset: -2}) }, "at log offset -2"},
	}
	for _, c := range cases {
		g := stableGroup()
		if err := g.invariants(); err != nil {
			t.Fatal(err)
		}
		c.break_(g)
		if err := g.invariants(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: check said %v, want an error containing %q", c.name, err, c.want)
		}
	}
	s := &shard{groups: map[string]*Group{"h": stableGroup()}}
	if err := s.invariants(); err == nil || !strings.Contains(err.Error(), "stored as") {
		t.Errorf("group under another name: %v", err)
	}
	s = &shard{groups: map[string]*Group{"g": stableGroup()}, unloaded: true}
	if err := s.invariants(); err == nil || !strings.Contains(err.Error(), "unloaded") {
		t.Errorf("unloaded shard with groups: %v", err)
	}
	s = &shard{groups: map[string]*Group{}, lateMarkers: []txnEnd{{7, true, 0}}}
	if err := s.invariants(); err == nil || !strings.Contains(err.Error(), "held back, yet loaded") {
		t.Errorf("loaded shard holding transaction ends back: %v", err)
	}
}

// TestGroupInvariantHookRuns: with checks on, a request served by a shard
// whose group is broken stops at the check when the shard lock is released.
func TestGroupInvariantHookRuns(t *testing.T) {
	h := newHarness(t, 1)
	a, _, gen := h.stableTwo("g")
	s, e := h.c.shardFor("g")
	if e != nil {
		t.Fatal(e)
	}
	s.mu.Lock()
	s.groups["g"].leader = "nobody"
	s.mu.Unlock()
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), `leader "nobody" is not a member`) {
			t.Fatalf("heartbeat to a broken group: %v", r)
		}
		s.groups["g"].leader = a // let Close unload a sound group
	}()
	h.heartbeat("g", a, gen, nil)
}
