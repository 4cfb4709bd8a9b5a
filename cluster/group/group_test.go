package group

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/coordinator"
)

const ctxTimeout = 5 * time.Second

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), ctxTimeout)
	t.Cleanup(cancel)
	return c
}

func joinReq(group, member string, instance *string, meta string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 9
	r.Group, r.MemberID, r.InstanceID = group, member, instance
	r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 1000, 2000
	r.ProtocolType = "consumer"
	r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte(meta)}}
	return r
}

// joinNew does the KIP-394 dance and returns the member id and the parked
// join's wait.
func (h *harness) joinNew(group, meta string) (string, func() *kmsg.JoinGroupResponse) {
	h.t.Helper()
	r := h.c.JoinGroup(ctx(h.t), "client", "host", joinReq(group, "", nil, meta))()
	if r.ErrorCode != kerr.MemberIDRequired.Code || r.MemberID == "" {
		h.t.Fatalf("first join: error %d member %q, want MEMBER_ID_REQUIRED with an id", r.ErrorCode, r.MemberID)
	}
	return r.MemberID, h.c.JoinGroup(ctx(h.t), "client", "host", joinReq(group, r.MemberID, nil, meta))
}

func (h *harness) sync(group, member string, gen int32, assign map[string]string) func() *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Group, r.MemberID, r.Generation = group, member, gen
	for m, a := range assign {
		r.GroupAssignment = append(r.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m, MemberAssignment: []byte(a)})
	}
	return h.c.SyncGroup(ctx(h.t), r)
}

func (h *harness) heartbeat(group, member string, gen int32, instance *string) int16 {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Group, r.MemberID, r.Generation, r.InstanceID = group, member, gen, instance
	return h.c.Heartbeat(r).ErrorCode
}

func (h *harness) state(group string) (State, int32) {
	s, e := h.c.shardFor(group)
	if e != nil {
		h.t.Fatalf("shard of %s: %v", group, e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[group]
	if g == nil {
		return Dead, -1
	}
	return g.state, g.generation
}

func mustOK(t *testing.T, what string, code int16) {
	t.Helper()
	if code != 0 {
		t.Fatalf("%s: %v", what, kerr.ErrorForCode(code))
	}
}

// stableTwo brings two dynamic members a, b to a stable generation.
func (h *harness) stableTwo(group string) (a, b string, gen int32) {
	h.t.Helper()
	a, waitA := h.joinNew(group, "ma")
	b, waitB := h.joinNew(group, "mb")
	if st, _ := h.state(group); st != PreparingRebalance {
		h.t.Fatalf("during the initial delay: %s", st)
	}
	h.clock.advance(350 * time.Millisecond) // the initial delay, re-armed once for b
	h.clock.advance(350 * time.Millisecond)
	ra, rb := waitA(), waitB()
	mustOK(h.t, "join a", ra.ErrorCode)
	mustOK(h.t, "join b", rb.ErrorCode)
	if ra.Generation != rb.Generation || ra.LeaderID != rb.LeaderID {
		h.t.Fatalf("members disagree: %+v / %+v", ra, rb)
	}
	leader, follower := ra, rb
	if ra.LeaderID != a {
		leader, follower = rb, ra
	}
	if len(leader.Members) != 2 || len(follower.Members) != 0 {
		h.t.Fatalf("leader sees %d members, follower %d; want 2 and 0", len(leader.Members), len(follower.Members))
	}
	if *leader.Protocol != "range" {
		h.t.Fatalf("protocol %q", *leader.Protocol)
	}
	wf := h.sync(group, follower.MemberID, ra.Generation, nil)
	wl := h.sync(group, leader.MemberID, ra.Generation, map[string]string{a: "pa", b: "pb"})
	sl, sf := wl(), wf()
	mustOK(h.t, "sync leader", sl.ErrorCode)
	mustOK(h.t, "sync follower", sf.ErrorCode)
	want := map[string]string{a: "pa", b: "pb"}
	if string(sl.MemberAssignment) != want[leader.MemberID] || string(sf.MemberAssignment) != want[follower.MemberID] {
		h.t.Fatalf("assignments %q/%q", sl.MemberAssignment, sf.MemberAssignment)
	}
	if st, g := h.state(group); st != Stable || g != ra.Generation {
		h.t.Fatalf("after sync: %s gen %d", st, g)
	}
	return a, b, ra.Generation
}

func TestJoinSyncReachesStable(t *testing.T) {
	h := newHarness(t, 1)
	_, _, gen := h.stableTwo("g")
	if gen != 1 {
		t.Fatalf("first generation %d, want 1", gen)
	}
	if n := len(h.env.logs[0].Records()); n != 1 {
		t.Fatalf("%d records written, want the leader's assignment only", n)
	}
}

func TestSessionExpiryRebalances(t *testing.T) {
	h := newHarness(t, 1)
	a, b, gen := h.stableTwo("g")
	for i := 0; i < 3; i++ { // a heartbeats, b is silent
		h.clock.advance(300 * time.Millisecond)
		mustOK(t, "heartbeat", h.heartbeat("g", a, gen, nil))
	}
	if st, _ := h.state("g"); st != Stable {
		t.Fatalf("within b's session: %s", st)
	}
	h.clock.advance(200 * time.Millisecond) // b's session (1 s) ends
	if st, _ := h.state("g"); st != PreparingRebalance {
		t.Fatalf("after b's session expired: %s", st)
	}
	if code := h.heartbeat("g", a, gen, nil); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat during rebalance: %v", kerr.ErrorForCode(code))
	}
	if code := h.heartbeat("g", b, gen, nil); code != kerr.UnknownMemberID.Code {
		t.Fatalf("expired member's heartbeat: %v", kerr.ErrorForCode(code))
	}
	r := h.c.JoinGroup(ctx(t), "client", "host", joinReq("g", a, nil, "ma"))()
	mustOK(t, "rejoin", r.ErrorCode)
	if r.Generation != gen+1 || r.LeaderID != a || len(r.Members) != 1 {
		t.Fatalf("rejoin: gen %d leader %s members %d", r.Generation, r.LeaderID, len(r.Members))
	}
}

func TestRebalanceTimeoutRemovesMembersThatDoNotRejoin(t *testing.T) {
	h := newHarness(t, 1)
	a, b, gen := h.stableTwo("g")
	c, waitC := h.joinNew("g", "mc")
	if st, _ := h.state("g"); st != PreparingRebalance {
		t.Fatalf("after a join: %s", st)
	}
	waitA := h.c.JoinGroup(ctx(t), "client", "host", joinReq("g", a, nil, "ma"))
	h.clock.advance(2100 * time.Millisecond) // the rebalance timeout; b never rejoins
	ra, rc := waitA(), waitC()
	mustOK(t, "a", ra.ErrorCode)
	mustOK(t, "c", rc.ErrorCode)
	if ra.Generation != gen+1 {
		t.Fatalf("generation %d, want %d", ra.Generation, gen+1)
	}
	leader := ra
	if ra.LeaderID != a {
		leader = rc
	}
	var ids []string
	for _, m := range leader.Members {
		ids = append(ids, m.MemberID)
	}
	if len(ids) != 2 || (ids[0] != a && ids[1] != a) || (ids[0] != c && ids[1] != c) {
		t.Fatalf("members %v, want a and c", ids)
	}
	if code := h.heartbeat("g", b, gen, nil); code != kerr.UnknownMemberID.Code {
		t.Fatalf("removed member: %v", kerr.ErrorForCode(code))
	}
}

func TestStaticMemberReplacedWithoutRebalance(t *testing.T) {
	h := newHarness(t, 1)
	inst := "i1"
	w := h.c.JoinGroup(ctx(t), "client", "host", joinReq("g", "", &inst, "m1"))
	h.clock.advance(400 * time.Millisecond)
	r := w()
	mustOK(t, "static join", r.ErrorCode)
	old := r.MemberID
	s := h.sync("g", old, r.Generation, map[string]string{old: "p0-7"})()
	mustOK(t, "sync", s.ErrorCode)

	// The instance restarts: no member id, same instance id.
	r2 := h.c.JoinGroup(ctx(t), "client", "host", joinReq("g", "", &inst, "m1"))()
	mustOK(t, "rejoin", r2.ErrorCode)
	if r2.Generation != r.Generation || r2.MemberID == old {
		t.Fatalf("static rejoin: gen %d (was %d), member %s (was %s)", r2.Generation, r.Generation, r2.MemberID, old)
	}
	if !r2.SkipAssignment || r2.LeaderID != r2.MemberID {
		t.Fatalf("a replaced static leader must lead but skip assignment (KIP-814): %+v", r2)
	}
	if st, _ := h.state("g"); st != Stable {
		t.Fatalf("after static rejoin: %s, want Stable (no rebalance)", st)
	}
	s2 := h.sync("g", r2.MemberID, r2.Generation, nil)()
	mustOK(t, "sync after rejoin", s2.ErrorCode)
	if string(s2.MemberAssignment) != "p0-7" {
		t.Fatalf("assignment after static rejoin %q, want the old one", s2.MemberAssignment)
	}
	if code := h.heartbeat("g", old, r.Generation, &inst); code != kerr.FencedInstanceID.Code {
		t.Fatalf("old instance heartbeat: %v, want FENCED_INSTANCE_ID", kerr.ErrorForCode(code))
	}
}

func commitReq(group, member string, gen int32, offsets map[int32]int64) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 8
	r.Group, r.MemberID, r.Generation = group, member, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	for p, o := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, o
		rt.Partitions = append(rt.Partitions, rp)
	}
	r.Topics = append(r.Topics, rt)
	return r
}

func commitCode(r *kmsg.OffsetCommitResponse) int16 {
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return p.ErrorCode
			}
		}
	}
	return 0
}

func (h *harness) fetch(group string, p int32) (int64, int16) {
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 8
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{p}}}
	r.Groups = append(r.Groups, rg)
	resp := h.c.OffsetFetch(r)
	g := resp.Groups[0]
	if g.ErrorCode != 0 {
		return 0, g.ErrorCode
	}
	return g.Topics[0].Partitions[0].Offset, 0
}

func TestCommitValidation(t *testing.T) {
	h := newHarness(t, 1)
	a, _, gen := h.stableTwo("g")
	for _, c := range []struct {
		member string
		gen    int32
		want   *kerr.Error
	}{
		{a, gen + 1, kerr.IllegalGeneration},
		{"nobody", gen, kerr.UnknownMemberID},
		{"", -1, kerr.UnknownMemberID}, // a simple commit needs an empty group
	} {
		if code := commitCode(h.c.OffsetCommit(ctx(t), commitReq("g", c.member, c.gen, map[int32]int64{0: 5}))()); code != c.want.Code {
			t.Errorf("commit as %q gen %d: %v, want %v", c.member, c.gen, kerr.ErrorForCode(code), c.want)
		}
	}
	if o, _ := h.fetch("g", 0); o != -1 {
		t.Fatalf("a refused commit is visible: %d", o)
	}
	mustOK(t, "member commit", commitCode(h.c.OffsetCommit(ctx(t), commitReq("g", a, gen, map[int32]int64{0: 5}))()))
	if o, e := h.fetch("g", 0); o != 5 || e != 0 {
		t.Fatalf("fetch after commit: %d %v", o, kerr.ErrorForCode(e))
	}
	// A commit whose write fails is not acknowledged and not visible.
	h.env.logs[0].FailAppends(kerr.NotEnoughReplicas)
	if code := commitCode(h.c.OffsetCommit(ctx(t), commitReq("g", a, gen, map[int32]int64{0: 9}))()); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("commit with too few replicas: %v", kerr.ErrorForCode(code))
	}
	if o, _ := h.fetch("g", 0); o != 5 {
		t.Fatalf("an unacknowledged commit is visible: %d", o)
	}
	h.env.logs[0].FailAppends(nil)
	// Simple commits on a group without members are fine.
	mustOK(t, "simple commit", commitCode(h.c.OffsetCommit(ctx(t), commitReq("other", "", -1, map[int32]int64{1: 3}))()))
}

func TestReloadRestoresOffsetsAndGroups(t *testing.T) {
	h := newHarness(t, 2)
	id := "g"
	p := coordinator.PartitionFor(id, 2)
	a, b, gen := h.stableTwo(id)
	mustOK(t, "commit", commitCode(h.c.OffsetCommit(ctx(t), commitReq(id, a, gen, map[int32]int64{0: 11, 1: 22}))()))
	mustOK(t, "commit", commitCode(h.c.OffsetCommit(ctx(t), commitReq(id, b, gen, map[int32]int64{1: 23}))()))

	// Leadership moves away: the shard unloads.
	h.env.logs[p].SetLeader(false, 0)
	h.c.Poll()
	if _, code := h.fetch(id, 0); code != kerr.NotCoordinator.Code {
		t.Fatalf("after losing leadership: %v", kerr.ErrorForCode(code))
	}
	// It comes back in a new epoch; the load is held to observe it.
	block := make(chan struct{})
	h.env.logs[p].BlockReplays(block)
	h.env.logs[p].SetLeader(true, 1)
	h.c.Poll()
	if _, code := h.fetch(id, 0); code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("while loading: %v", kerr.ErrorForCode(code))
	}
	close(block)
	h.waitLoaded(id)
	for part, want := range map[int32]int64{0: 11, 1: 23} {
		if o, code := h.fetch(id, part); o != want || code != 0 {
			t.Fatalf("partition %d after reload: %d %v, want %d", part, o, kerr.ErrorForCode(code), want)
		}
	}
	if st, g := h.state(id); st != Stable || g != gen {
		t.Fatalf("group after reload: %s gen %d, want Stable gen %d", st, g, gen)
	}
	mustOK(t, "heartbeat after reload", h.heartbeat(id, a, gen, nil))
}

func TestLeaveAndDeleteGroup(t *testing.T) {
	h := newHarness(t, 1)
	a, b, gen := h.stableTwo("g")
	mustOK(t, "commit", commitCode(h.c.OffsetCommit(ctx(t), commitReq("g", a, gen, map[int32]int64{0: 4}))()))
	del := func() int16 {
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Groups = []string{"g"}
		return h.c.DeleteGroups(ctx(t), r)().Groups[0].ErrorCode
	}
	if code := del(); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete a live group: %v", kerr.ErrorForCode(code))
	}
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 5
	lr.Group = "g"
	lr.Members = []kmsg.LeaveGroupRequestMember{{MemberID: a}, {MemberID: b}, {MemberID: "ghost"}}
	resp := h.c.LeaveGroup(lr)
	if resp.Members[0].ErrorCode != 0 || resp.Members[1].ErrorCode != 0 || resp.Members[2].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave: %+v", resp.Members)
	}
	if st, g := h.state("g"); st != Empty || g != gen+1 {
		t.Fatalf("after everyone left: %s gen %d", st, g)
	}
	mustOK(t, "delete", del())
	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Groups = []string{"g"}
	if d := h.c.DescribeGroups(dr).Groups[0]; d.State != string(Dead) {
		t.Fatalf("described after delete: %s", d.State)
	}
	if o, _ := h.fetch("g", 0); o != -1 {
		t.Fatalf("offset after delete: %d", o)
	}
	if code := del(); code != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete twice: %v", kerr.ErrorForCode(code))
	}
}

func TestNotCoordinatorWithoutLeadership(t *testing.T) {
	h := newHarness(t, 4)
	for i := range h.env.logs {
		h.env.logs[i].SetLeader(false, 0)
	}
	h.c.Poll()
	r := h.c.JoinGroup(ctx(t), "c", "h", joinReq("g", "", nil, "m"))()
	if r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("join without leadership: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	lg := h.c.ListGroups(kmsg.NewPtrListGroupsRequest())
	if len(lg.Groups) != 0 {
		t.Fatalf("listed %v", lg.Groups)
	}
}
