package txn

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"gregor/cluster/invariant"
)

func TestMain(m *testing.M) {
	invariant.Enable()
	os.Exit(m.Run())
}

// ongoingMeta is producer 7 at epoch 3 with a transaction open on a-0,
// already seen once by the check.
func ongoingMeta(t *testing.T) *Meta {
	t.Helper()
	m := newMeta("t", 7, 60_000, 1)
	m.Epoch, m.LastEpoch, m.State, m.StartMs = 3, 2, Ongoing, 1
	m.Partitions[tpA] = true
	if err := m.invariants(); err != nil {
		t.Fatalf("healthy metadata: %v", err)
	}
	return m
}

// TestMetaInvariantsCatch breaks each transaction-metadata invariant on
// purpose and sees the check name it.
func TestMetaInvariantsCatch(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(m *Meta)
		want   string
	}{
		{"unknown state", func(m *Meta) { m.State = "Sleepy" }, `in state "Sleepy"`},
		{"fence held", func(m *Meta) { m.State = PrepareEpochFence }, `in state "PrepareEpochFence"`},
		{"pending fence", func(m *Meta) { m.pending = PrepareEpochFence }, "pending PrepareEpochFence cannot follow Ongoing"},
		{"pending skips a state", func(m *Meta) { m.pending = CompleteCommit }, "pending CompleteCommit cannot follow Ongoing"},
		{"illegal transition", func(m *Meta) { m.State, m.Partitions = CompleteAbort, nil }, "moved from Ongoing to CompleteAbort"},
		{"partitions in Empty", func(m *Meta) { m.State = Empty }, "partitions [a-0] in state Empty"},
		{"partitions when complete", func(m *Meta) { m.State = PrepareCommit; _ = m.invariants(); m.State = CompleteCommit }, "partitions [a-0] in state CompleteCommit"},
		{"epoch goes back", func(m *Meta) { m.Epoch = 2 }, "epoch went back from 3 to 2"},
		{"no epoch while ongoing", func(m *Meta) { m.Epoch = noEpoch }, "epoch -1 in state Ongoing"},
		{"new id mid-epoch", func(m *Meta) { m.ProducerID, m.PrevProducerID = 8, 7 }, "producer id 8 replaced 7 at epoch 3"},
		{"new id from nowhere", func(m *Meta) { m.ProducerID, m.PrevProducerID, m.Epoch = 8, 5, 0 }, "(previous id 5)"},
	}
	for _, c := range cases {
		m := ongoingMeta(t)
		c.break_(m)
		if err := m.invariants(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: check said %v, want an error containing %q", c.name, err, c.want)
		}
	}
	// What the state machine does is not refused: PrepareCommit at a
	// bumped epoch (version 2), then CompleteCommit with no partitions,
	// then a rotation to a new id at epoch 0.
	m := ongoingMeta(t)
	m.State, m.Epoch = PrepareCommit, 4
	if err := m.invariants(); err != nil {
		t.Fatalf("Ongoing -> PrepareCommit: %v", err)
	}
	m.State, m.Partitions = CompleteCommit, map[TopicPartition]bool{}
	if err := m.invariants(); err != nil {
		t.Fatalf("PrepareCommit -> CompleteCommit: %v", err)
	}
	m.State, m.ProducerID, m.PrevProducerID, m.Epoch = Empty, 8, 7, 0
	if err := m.invariants(); err != nil {
		t.Fatalf("rotation: %v", err)
	}
	s := &shard{txns: map[string]*Meta{"u": ongoingMeta(t)}}
	if err := s.invariants(); err == nil || !strings.Contains(err.Error(), "stored as") {
		t.Errorf("metadata under another id: %v", err)
	}
	s = &shard{txns: map[string]*Meta{"t": ongoingMeta(t)}, unloaded: true}
	if err := s.invariants(); err == nil || !strings.Contains(err.Error(), "unloaded (true)") {
		t.Errorf("unloaded shard with transactions: %v", err)
	}
}

// TestTxnInvariantHookRuns: with checks on, a request served by a shard
// whose metadata is broken stops at the check when the shard lock is
// released.
func TestTxnInvariantHookRuns(t *testing.T) {
	h := newHarness(t, 2, nil)
	pid, epoch := h.init("t")
	s, e := h.c.shardFor("t")
	if e != nil {
		t.Fatal(e)
	}
	s.mu.Lock()
	m := s.txns["t"]
	m.Partitions[tpA] = true // in state Empty
	s.mu.Unlock()
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "partitions [a-0] in state Empty") {
			t.Fatalf("AddPartitions to broken metadata: %v", r)
		}
		clear(m.Partitions) // let Close unload sound metadata
	}()
	h.c.AddPartitions(context.Background(), "t", pid, epoch, []TopicPartition{tpB})
}
