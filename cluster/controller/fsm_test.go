package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/meta"
)

// fsmHarness applies records directly, as raft would, at increasing indexes.
type fsmHarness struct {
	t     *testing.T
	img   *Image
	index uint64
	pol   electPolicy
}

func newFSMHarness(t *testing.T, pol electPolicy, brokers ...int32) *fsmHarness {
	h := &fsmHarness{t: t, img: emptyImage(), pol: pol}
	for _, id := range brokers {
		b := h.apply(record{Register: &registerRec{ID: id, Host: "h", Port: 9092}}).Broker
		h.apply(record{Unfence: &brokerRec{ID: id, Epoch: b.Epoch}})
	}
	return h
}

func (h *fsmHarness) apply(r record) applyResult {
	h.t.Helper()
	h.index++
	r.Policy = h.pol
	img := h.img.clone()
	img.Version = h.index
	res := applyRecord(img, r, h.index)
	if err := checkInvariants(img); err != nil {
		h.t.Fatalf("invariant after record %d: %v", h.index, err)
	}
	h.img = img
	return res
}

func (h *fsmHarness) rec(id int32) *brokerRec {
	return &brokerRec{ID: id, Epoch: h.img.Brokers[id].Epoch}
}

func (h *fsmHarness) part() meta.Partition {
	p, _ := h.img.Partition("t", 0)
	return p
}

func (h *fsmHarness) create(configs map[string]string, reps ...int32) {
	h.t.Helper()
	if res := h.apply(record{CreateTopic: &createRec{Name: "t", ID: [16]byte{1}, Configs: configs,
		Assignment: [][]int32{reps}}}); res.Code != 0 {
		h.t.Fatalf("create: %v", kerr.ErrorForCode(res.Code))
	}
}

func (h *fsmHarness) alter(sender int32, isr ...int32) int16 {
	p := h.part()
	res := h.apply(record{AlterPartition: &alterRec{BrokerID: sender, BrokerEpoch: h.img.Brokers[sender].Epoch,
		Items: []alterItem{{Topic: "t", Partition: 0, LeaderEpoch: p.LeaderEpoch,
			PartitionEpoch: p.PartitionEpoch, NewISR: isr}}}})
	if res.Code != 0 {
		return res.Code
	}
	return res.Items[0].Code
}

func TestFSMAlterPartitionValidation(t *testing.T) {
	h := newFSMHarness(t, electPolicy{}, 1, 2, 3)
	h.create(nil, 1, 2, 3)
	if code := h.alter(1, 1, 2); code != 0 {
		t.Fatalf("shrink: %v", kerr.ErrorForCode(code))
	}
	p := h.part()
	if !slices.Equal(p.ISR, []int32{1, 2}) || p.PartitionEpoch != 1 || p.LeaderEpoch != 0 {
		t.Fatalf("after shrink %+v", p)
	}
	item := func(le, pe int32, isr ...int32) *alterRec {
		return &alterRec{BrokerID: 1, BrokerEpoch: h.img.Brokers[1].Epoch,
			Items: []alterItem{{Topic: "t", Partition: 0, LeaderEpoch: le, PartitionEpoch: pe, NewISR: isr}}}
	}
	check := func(name string, r *alterRec, want *kerr.Error) {
		t.Helper()
		before := h.part()
		res := h.apply(record{AlterPartition: r})
		code := res.Code
		if code == 0 {
			code = res.Items[0].Code
		}
		if code != want.Code {
			t.Fatalf("%s: code %v, want %s", name, kerr.ErrorForCode(code), want.Message)
		}
		if after := h.part(); want.Code != 0 && after.PartitionEpoch != before.PartitionEpoch {
			t.Fatalf("%s: rejected change still bumped partition epoch", name)
		}
	}
	check("stale leader epoch", item(p.LeaderEpoch-1, p.PartitionEpoch, 1, 2, 3), kerr.FencedLeaderEpoch)
	check("stale partition epoch", item(p.LeaderEpoch, p.PartitionEpoch-1, 1, 2, 3), kerr.InvalidUpdateVersion)
	check("ISR without the leader", item(p.LeaderEpoch, p.PartitionEpoch, 2, 3), kerr.InvalidRequest)
	check("ISR outside replicas", item(p.LeaderEpoch, p.PartitionEpoch, 1, 4), kerr.InvalidRequest)
	check("duplicate member", item(p.LeaderEpoch, p.PartitionEpoch, 1, 1), kerr.InvalidRequest)
	stale := item(p.LeaderEpoch, p.PartitionEpoch, 1, 2)
	stale.BrokerEpoch--
	check("stale broker epoch", stale, kerr.StaleBrokerEpoch)
	notLeader := item(p.LeaderEpoch, p.PartitionEpoch, 2)
	notLeader.BrokerID, notLeader.BrokerEpoch = 2, h.img.Brokers[2].Epoch
	check("sender is not the leader", notLeader, kerr.NotLeaderForPartition)

	h.apply(record{Fence: h.rec(3)})
	check("fenced broker added", item(p.LeaderEpoch, p.PartitionEpoch, 1, 2, 3), kerr.IneligibleReplica)
	h.apply(record{Unfence: h.rec(3)})
	withEpochs := item(p.LeaderEpoch, p.PartitionEpoch, 1, 2, 3)
	withEpochs.Items[0].ISREpochs = []int64{-1, -1, h.img.Brokers[3].Epoch - 1}
	check("old incarnation added (KIP-903)", withEpochs, kerr.IneligibleReplica)
	check("valid expansion", item(p.LeaderEpoch, p.PartitionEpoch, 1, 2, 3), &kerr.Error{Code: 0})
	if p := h.part(); !slices.Equal(p.ISR, []int32{1, 2, 3}) || p.PartitionEpoch != 2 {
		t.Fatalf("after expansion %+v, want ISR [1 2 3] partition epoch 2", p)
	}
}

func TestFSMFenceMovesLeadershipAndKeepsLastISRMember(t *testing.T) {
	h := newFSMHarness(t, electPolicy{}, 1, 2, 3)
	h.create(nil, 1, 2, 3)
	h.apply(record{Fence: h.rec(1)})
	if p := h.part(); p.Leader != 2 || p.LeaderEpoch != 1 || !slices.Equal(p.ISR, []int32{2, 3}) {
		t.Fatalf("after fencing 1: %+v", p)
	}
	h.apply(record{Fence: h.rec(2)})
	h.apply(record{Fence: h.rec(3)})
	p := h.part()
	if p.Leader != meta.NoLeader || !slices.Equal(p.ISR, []int32{3}) {
		t.Fatalf("all fenced: %+v, want offline with ISR [3]", p)
	}
	if h.img.OfflinePartitions() != 1 || h.img.FencedBrokers() != 3 {
		t.Fatalf("metrics offline=%d fenced=%d", h.img.OfflinePartitions(), h.img.FencedBrokers())
	}
	// Broker 1 (out of sync) returns: unclean is off, still offline.
	h.apply(record{Unfence: h.rec(1)})
	if p := h.part(); p.Leader != meta.NoLeader {
		t.Fatalf("out-of-sync broker elected with unclean off: %+v", p)
	}
	// The last ISR member returns after a restart (re-registration).
	b := h.apply(record{Register: &registerRec{ID: 3, Host: "h", Port: 1}}).Broker
	h.apply(record{Unfence: &brokerRec{ID: 3, Epoch: b.Epoch}})
	if p := h.part(); p.Leader != 3 || !slices.Equal(p.ISR, []int32{3}) || p.LeaderEpoch != 4 {
		t.Fatalf("ISR member back: %+v, want leader 3 epoch 4", p)
	}
}

func TestFSMUncleanTopicConfig(t *testing.T) {
	h := newFSMHarness(t, electPolicy{}, 1, 2, 3)
	h.create(map[string]string{meta.ConfigUnclean: "true"}, 1, 2, 3)
	h.alter(1, 1)
	h.apply(record{Fence: h.rec(1)})
	if p := h.part(); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || p.LeaderEpoch != 1 {
		t.Fatalf("unclean: %+v, want leader 2, ISR [2]", p)
	}
}

func TestFSMPlantedBugElectOutsideISR(t *testing.T) {
	for _, bug := range []bool{false, true} {
		h := newFSMHarness(t, electPolicy{ElectOutsideISR: bug}, 1, 2, 3)
		h.create(nil, 1, 2, 3)
		h.alter(1, 1, 2) // 3 falls out of sync
		h.apply(record{Fence: h.rec(1)})
		p := h.part()
		want := int32(2)
		if bug {
			want = 3 // out of the ISR, unclean off: the planted bug
		}
		if p.Leader != want {
			t.Fatalf("bug=%v: leader %d, want %d (%+v)", bug, p.Leader, want, p)
		}
	}
}

func TestFSMControlledShutdown(t *testing.T) {
	h := newFSMHarness(t, electPolicy{}, 1, 2, 3)
	h.create(nil, 1, 2, 3)
	res := h.apply(record{Shutdown: h.rec(1)})
	p := h.part()
	if !res.Broker.ShuttingDown || p.Leader != 2 || p.InISR(1) || len(h.img.LeaderOf(1)) != 0 {
		t.Fatalf("after shutdown: %+v %+v", res.Broker, p)
	}
	// Stale records for an old incarnation do nothing.
	old := h.rec(2)
	h.apply(record{Register: &registerRec{ID: 2}})
	if res := h.apply(record{Fence: old}); res.Code != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("stale fence: code %d", res.Code)
	}
}

func TestInvariantCheckCatches(t *testing.T) {
	h := newFSMHarness(t, electPolicy{}, 1, 2)
	h.create(nil, 1, 2)
	bad := []func(p *meta.Partition){
		func(p *meta.Partition) { p.ISR = nil },
		func(p *meta.Partition) { p.ISR = []int32{1, 7} },
		func(p *meta.Partition) { p.ISR = []int32{2}; p.Leader = 1 },
		func(p *meta.Partition) { p.ISR = []int32{2, 2} },
		// A reassignment (KIP-455) names only replicas, each once, and no
		// replica both joins and leaves.
		func(p *meta.Partition) { p.Adding = []int32{7} },
		func(p *meta.Partition) { p.Removing = []int32{9} },
		func(p *meta.Partition) { p.Adding, p.Removing = []int32{2}, []int32{2} },
		func(p *meta.Partition) { p.Adding = []int32{2, 2} },
	}
	for i, mut := range bad {
		img := h.img.clone()
		mut(&img.Topics["t"].Partitions[0])
		if checkInvariants(img) == nil {
			t.Fatalf("case %d: violation not caught", i)
		}
	}
	img := h.img.clone()
	b := img.Brokers[1]
	b.Fenced = true
	img.Brokers[1] = b
	if checkInvariants(img) == nil {
		t.Fatal("fenced leader not caught")
	}
}

func TestImageMetrics(t *testing.T) {
	h := newFSMHarness(t, electPolicy{}, 1, 2, 3)
	h.create(map[string]string{meta.ConfigMinISR: "2"}, 1, 2, 3)
	if h.img.UnderReplicated() != 0 || h.img.ISRSizes()["t/0"] != 3 {
		t.Fatal("healthy partition counted")
	}
	h.alter(1, 1)
	if h.img.UnderReplicated() != 1 || h.img.ISRSizes()["t/0"] != 1 {
		t.Fatalf("under-replicated %d, ISR sizes %v", h.img.UnderReplicated(), h.img.ISRSizes())
	}
}

func TestAssignReplicasRotates(t *testing.T) {
	h := newFSMHarness(t, electPolicy{}, 1, 2, 3)
	as, ok := assignReplicas(h.img, 3, 2)
	if !ok {
		t.Fatal("assignment refused")
	}
	firsts := map[int32]bool{}
	for _, r := range as {
		firsts[r[0]] = true
		if r[0] == r[1] {
			t.Fatalf("replicas not distinct: %v", r)
		}
	}
	if len(firsts) != 3 {
		t.Fatalf("first replicas %v not spread", as)
	}
	h.img.TopicsCreated++
	as2, _ := assignReplicas(h.img, 1, 2)
	if as2[0][0] == as[0][0] {
		t.Fatalf("start did not rotate: %v then %v", as, as2)
	}
	if _, ok := assignReplicas(h.img, 1, 4); ok {
		t.Fatal("RF 4 on 3 brokers accepted")
	}
}
