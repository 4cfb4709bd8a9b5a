package group

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/coordinator"
	"gregor/cluster/meta"
)

// Tests of KIP-848 consumer groups: reconciliation, fencing, epochs,
// timeouts, failover reload, and the classic/consumer boundary.

// withTopics gives the harness a metadata image holding the topics (name
// -> partition count); a topic's id is derived from its name.
func (h *harness) withTopics(topics map[string]int) {
	im := meta.Empty()
	for name, n := range topics {
		id := [16]byte{0xaa, name[0], name[len(name)-1], byte(len(name))}
		im.Topics[name] = &meta.Topic{Name: name, ID: id, Partitions: make([]meta.Partition, n)}
	}
	h.env.image.Store(im)
}

// member is one simulated KIP-848 client: what it owns is what the
// coordinator last assigned it, until it revokes (owned is set by the test).
type cclient struct {
	h     *harness
	group string
	id    string
	epoch int32
	owned assignment
	// last is the last answer's assignment (nil: none sent).
	last assignment
}

func (h *harness) cjoin(group, id string, topics ...string) *cclient {
	h.t.Helper()
	c := &cclient{h: h, group: group, id: id, owned: assignment{}}
	r := h.chb(c, func(req *kmsg.ConsumerGroupHeartbeatRequest) {
		req.SubscribedTopicNames = topics
	})
	mustOK(h.t, "join "+id, r.ErrorCode)
	return c
}

// chb sends one full heartbeat of c (its epoch, what it owns), edited by
// f, and takes the answer's epoch and assignment.
func (h *harness) chb(c *cclient, f func(*kmsg.ConsumerGroupHeartbeatRequest)) *kmsg.ConsumerGroupHeartbeatResponse {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = c.group, c.id, c.epoch
	req.RebalanceTimeoutMillis = 5000
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	c.owned.each(func(t topicID, p int32) {
		if len(req.Topics) == 0 || req.Topics[len(req.Topics)-1].TopicID != t {
			req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t})
		}
		req.Topics[len(req.Topics)-1].Partitions = append(req.Topics[len(req.Topics)-1].Partitions, p)
	})
	if f != nil {
		f(req)
	}
	r := h.c.ConsumerGroupHeartbeat(ctx(h.t), "client", "host", req)()
	if r.ErrorCode == 0 {
		c.epoch = r.MemberEpoch
		c.last = nil
		if r.Assignment != nil {
			c.last = assignment{}
			for _, t := range r.Assignment.Topics {
				for _, p := range t.Partitions {
					c.last.add(topicID(t.TopicID), p)
				}
			}
		}
	}
	return r
}

// take: the client adopts what the coordinator gave it (it keeps what it
// owns until it revokes; new partitions are added).
func (c *cclient) take() {
	if c.last != nil {
		c.last.each(func(t topicID, p int32) { c.owned.add(t, p) })
	}
}

// revoke: the client gives up what the last answer no longer lists.
func (c *cclient) revoke() {
	if c.last == nil {
		return
	}
	kept := assignment{}
	c.owned.each(func(t topicID, p int32) {
		if c.last.has(t, p) {
			kept.add(t, p)
		}
	})
	c.owned = kept
}

func overlap(a, b assignment) []string {
	var out []string
	a.each(func(t topicID, p int32) {
		if b.has(t, p) {
			out = append(out, fmt.Sprintf("%x/%d", t[1], p))
		}
	})
	return out
}

func newConsumerHarness(t *testing.T, bugs Bugs) *harness {
	h := newHarness(t, 1)
	h.c.cfg.Bugs = bugs
	h.withTopics(map[string]int{"t": 4})
	return h
}

// A second member gets none of the first one's partitions until the first
// has revoked them; then it gets its share at the new epoch.
func TestConsumerRevokeBeforeAssign(t *testing.T) {
	h := newConsumerHarness(t, Bugs{})
	a := h.cjoin("g", "a", "t")
	a.take()
	if a.owned.size() != 4 || a.epoch != 1 {
		t.Fatalf("a alone: epoch %d owns %v, want epoch 1 and all 4", a.epoch, a.owned)
	}
	b := h.cjoin("g", "b", "t")
	b.take()
	if b.owned.size() != 0 || b.epoch != 2 {
		t.Fatalf("b joined while a owns everything: epoch %d got %v, want epoch 2 and nothing", b.epoch, b.owned)
	}
	// a hears of the new target: asked to revoke two, kept at epoch 1.
	mustOK(t, "a heartbeat", h.chb(a, nil).ErrorCode)
	if a.epoch != 1 || a.last.size() != 2 {
		t.Fatalf("a asked to revoke: epoch %d, assignment %v; want epoch 1 and 2 kept", a.epoch, a.last)
	}
	mustOK(t, "b heartbeat", h.chb(b, nil).ErrorCode)
	b.take()
	if o := overlap(a.owned, b.owned); len(o) > 0 || b.owned.size() != 0 {
		t.Fatalf("b given %v while a still owns them (overlap %v)", b.owned, o)
	}
	// a revokes and says so: it moves to epoch 2; then b gets the rest.
	a.revoke()
	mustOK(t, "a revoked", h.chb(a, nil).ErrorCode)
	if a.epoch != 2 {
		t.Fatalf("a after revoking at epoch %d, want 2", a.epoch)
	}
	mustOK(t, "b heartbeat", h.chb(b, nil).ErrorCode)
	b.take()
	if b.owned.size() != 2 || len(overlap(a.owned, b.owned)) > 0 {
		t.Fatalf("after a's revoke: a %v b %v, want 2 each, disjoint", a.owned, b.owned)
	}
	h.inCG("g", func(cg *consumerGroup) {
		if st := cg.state(); st != "Stable" {
			t.Errorf("group state %s, want Stable", st)
		}
	})
}

// The planted bug gives b a's partitions while a still owns them, and the
// same steps as TestConsumerRevokeBeforeAssign see the overlap.
func TestConsumerAssignBeforeRevokeBug(t *testing.T) {
	h := newConsumerHarness(t, Bugs{AssignBeforeRevoke: true})
	a := h.cjoin("g", "a", "t")
	a.take()
	b := h.cjoin("g", "b", "t")
	b.take()
	if o := overlap(a.owned, b.owned); len(o) != 2 {
		t.Fatalf("with AssignBeforeRevoke, b owns %v while a owns %v: overlap %v, want 2 partitions", b.owned, a.owned, o)
	}
}

// inCG runs f on the consumer group under its shard's lock.
func (h *harness) inCG(id string, f func(cg *consumerGroup)) {
	h.t.Helper()
	s, e := h.c.shardFor(id)
	if e != nil {
		h.t.Fatalf("shard of %s: %v", id, e)
	}
	s.mu.Lock()
	defer s.unlock()
	g := s.groups[id]
	if g == nil || g.cg == nil {
		h.t.Errorf("%s is not a consumer group", id)
		return
	}
	f(g.cg)
}

// Epochs: ahead or behind (other than the previous epoch with a subset)
// is FENCED_MEMBER_EPOCH; an unknown member UNKNOWN_MEMBER_ID; a commit or
// fetch at another epoch STALE_MEMBER_EPOCH; a v8 commit of a consumer
// member UNSUPPORTED_VERSION.
func TestConsumerFencing(t *testing.T) {
	h := newConsumerHarness(t, Bugs{})
	a := h.cjoin("g", "a", "t")
	a.take()
	// A second member joins and leaves: a goes through epochs 1..3.
	b := h.cjoin("g", "b", "t")
	mustOK(t, "a", h.chb(a, nil).ErrorCode)
	a.revoke()
	mustOK(t, "a", h.chb(a, nil).ErrorCode)
	mustOK(t, "b leaves", h.chb(b, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = leaveEpoch }).ErrorCode)
	mustOK(t, "a", h.chb(a, nil).ErrorCode)
	a.take()
	if a.epoch != 3 || a.owned.size() != 4 {
		t.Fatalf("a at epoch %d owning %v, want epoch 3 and all 4", a.epoch, a.owned)
	}
	at := func(epoch int32) func(*kmsg.ConsumerGroupHeartbeatRequest) {
		return func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = epoch }
	}
	for _, tc := range []struct {
		name string
		f    func(*kmsg.ConsumerGroupHeartbeatRequest)
		want *kerr.Error
	}{
		{"ahead", at(a.epoch + 1), kerr.FencedMemberEpoch},
		{"behind, not the previous epoch", at(a.epoch - 2), kerr.FencedMemberEpoch},
		{"previous epoch, owning more than assigned", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberEpoch = a.epoch - 1
			r.Topics = append(r.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: [16]byte{9}, Partitions: []int32{0}})
		}, kerr.FencedMemberEpoch},
		{"unknown", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "nobody" }, kerr.UnknownMemberID},
		{"bad regex", func(r *kmsg.ConsumerGroupHeartbeatRequest) { re := "("; r.SubscribedTopicRegex = &re }, kerr.InvalidRegularExpression},
		{"bad assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) { n := "sticky"; r.ServerAssignor = &n }, kerr.UnsupportedAssignor},
	} {
		probe := *a
		if got := h.chb(&probe, tc.f).ErrorCode; got != tc.want.Code {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(got), tc.want)
		}
	}
	commit := func(member string, epoch int32, version int16) int16 {
		r := commitReq("g", member, epoch, map[int32]int64{0: 5})
		r.Version = version
		return commitCode(h.c.OffsetCommit(ctx(t), r)())
	}
	prev := *a
	prev.epoch = a.epoch - 1
	mustOK(t, "previous epoch with a subset (a lost answer)", h.chb(&prev, nil).ErrorCode)
	mustOK(t, "commit at the member epoch", commit("a", a.epoch, 9))
	for _, tc := range []struct {
		name   string
		code   int16
		expect *kerr.Error
	}{
		{"stale epoch", commit("a", a.epoch+1, 9), kerr.StaleMemberEpoch},
		{"v8", commit("a", a.epoch, 8), kerr.UnsupportedVersion},
		{"unknown member", commit("x", a.epoch, 9), kerr.UnknownMemberID},
	} {
		if tc.code != tc.expect.Code {
			t.Errorf("commit %s: %v, want %v", tc.name, kerr.ErrorForCode(tc.code), tc.expect)
		}
	}
	id := "a"
	g := h.c.fetchGroup("g", &id, a.epoch+3, []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}, false, false)
	if g.ErrorCode != kerr.StaleMemberEpoch.Code {
		t.Errorf("fetch at a stale epoch: %v, want STALE_MEMBER_EPOCH", kerr.ErrorForCode(g.ErrorCode))
	}
	g = h.c.fetchGroup("g", &id, a.epoch, []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}, false, false)
	if g.ErrorCode != 0 || g.Topics[0].Partitions[0].Offset != 5 {
		t.Errorf("fetch at the member epoch: %v offset %d, want 5", kerr.ErrorForCode(g.ErrorCode), g.Topics[0].Partitions[0].Offset)
	}
}

// A member silent past the session timeout is fenced: the group epoch
// moves and the other member gets its partitions.
func TestConsumerSessionTimeout(t *testing.T) {
	h := newConsumerHarness(t, Bugs{})
	a := h.cjoin("g", "a", "t")
	a.take()
	b := h.cjoin("g", "b", "t")
	mustOK(t, "a", h.chb(a, nil).ErrorCode)
	a.revoke()
	mustOK(t, "a", h.chb(a, nil).ErrorCode)
	mustOK(t, "b", h.chb(b, nil).ErrorCode)
	b.take()
	var epoch int32
	h.inCG("g", func(cg *consumerGroup) { epoch = cg.epoch })
	// b keeps heartbeating, and adopts what each answer gives it as a
	// client does (a's fence runs in the background, so the answer that
	// hands b a's partitions can be any of these); a goes silent.
	for i := 0; i < 3; i++ {
		h.clock.advance(h.c.cfg.ConsumerSessionTimeout / 2)
		mustOK(t, "b alive", h.chb(b, nil).ErrorCode)
		b.take()
	}
	eventually(t, "a fenced", func() (ok bool) {
		h.inCG("g", func(cg *consumerGroup) { ok = cg.members["a"] == nil && cg.epoch == epoch+1 })
		return ok
	})
	mustOK(t, "b", h.chb(b, nil).ErrorCode)
	b.take()
	if b.owned.size() != 4 {
		t.Fatalf("b after a's session expired owns %v, want all 4", b.owned)
	}
	if got := h.chb(a, nil).ErrorCode; got != kerr.UnknownMemberID.Code {
		t.Fatalf("a after being fenced: %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(got))
	}
}

// A member that does not revoke within its rebalance timeout is fenced.
func TestConsumerRebalanceTimeout(t *testing.T) {
	h := newConsumerHarness(t, Bugs{})
	a := h.cjoin("g", "a", "t")
	a.take()
	b := h.cjoin("g", "b", "t")
	mustOK(t, "a asked to revoke", h.chb(a, nil).ErrorCode)
	for i := 0; i < 4; i++ { // 6 s, past a's 5 s rebalance timeout, within its session
		h.clock.advance(1500 * time.Millisecond)
		mustOK(t, "b alive", h.chb(b, nil).ErrorCode)
		if i < 3 {
			mustOK(t, "a alive, not revoking", h.chb(a, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = nil }).ErrorCode)
		}
	}
	eventually(t, "a fenced by its rebalance timeout", func() (ok bool) {
		h.inCG("g", func(cg *consumerGroup) { ok = cg.members["a"] == nil })
		return ok
	})
}

// eventually polls cond (bounded): fenced members go through the runtime's
// background goroutine.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 400; i++ {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s: not within 2 s", what)
}

// A new coordinator (leadership moved and back) reloads the group from
// its records: epochs, members, current and target assignments; the
// members go on at their epochs, unfenced.
func TestConsumerReloadAfterFailover(t *testing.T) {
	h := newConsumerHarness(t, Bugs{})
	a := h.cjoin("g", "a", "t")
	a.take()
	b := h.cjoin("g", "b", "t")
	mustOK(t, "a", h.chb(a, nil).ErrorCode) // a now unrevoked, pending 2
	var before, after string
	h.inCG("g", func(cg *consumerGroup) { before = snapshot(cg) })
	p := coordinator.PartitionFor("g", 1)
	h.env.logs[p].SetLeader(false, 0)
	h.c.Poll()
	if got := h.chb(b, nil).ErrorCode; got != kerr.NotCoordinator.Code {
		t.Fatalf("heartbeat without leadership: %v", kerr.ErrorForCode(got))
	}
	h.env.logs[p].SetLeader(true, 1)
	h.c.Poll()
	h.waitLoaded("g")
	h.inCG("g", func(cg *consumerGroup) { after = snapshot(cg) })
	if after != before {
		t.Fatalf("reloaded group differs:\n before %s\n after  %s", before, after)
	}
	a.revoke()
	mustOK(t, "a after reload", h.chb(a, nil).ErrorCode)
	mustOK(t, "b after reload", h.chb(b, nil).ErrorCode)
	b.take()
	if a.owned.size() != 2 || b.owned.size() != 2 || len(overlap(a.owned, b.owned)) > 0 {
		t.Fatalf("after reload: a %v b %v, want 2 each, disjoint", a.owned, b.owned)
	}
}

func snapshot(cg *consumerGroup) string {
	s := fmt.Sprintf("epoch %d target %d sub %v;", cg.epoch, cg.assignmentEpoch, cg.subscription)
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for id := range cg.members {
			if !yield(id) {
				return
			}
		}
	}) {
		m := cg.members[id]
		s += fmt.Sprintf(" %s: epoch %d/%d %s assigned %v pending %v target %v;", id, m.epoch, m.prevEpoch, m.state, m.assigned, m.pendingRevocation, cg.target[id])
	}
	return s
}

// A group is classic or consumer: a heartbeat to a classic group with
// members is GROUP_ID_NOT_FOUND, a JoinGroup to a consumer group with
// members INCONSISTENT_GROUP_PROTOCOL; an empty classic group (offsets
// only) becomes a consumer group with its offsets.
func TestClassicAndConsumerGroupsSideBySide(t *testing.T) {
	h := newConsumerHarness(t, Bugs{})
	h.stableTwo("g") // classic, two members
	probe := &cclient{h: h, group: "g", id: "x", owned: assignment{}}
	if got := h.chb(probe, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = []string{"t"} }).ErrorCode; got != kerr.GroupIDNotFound.Code {
		t.Fatalf("heartbeat to a classic group with members: %v, want GROUP_ID_NOT_FOUND", kerr.ErrorForCode(got))
	}
	c := h.cjoin("c", "a", "t")
	if r := h.c.JoinGroup(ctx(t), "client", "host", joinReq("c", "", nil, "m"))(); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("JoinGroup to a consumer group with members: %v, want INCONSISTENT_GROUP_PROTOCOL", kerr.ErrorForCode(r.ErrorCode))
	}
	_ = c
	mustOK(t, "simple commit", commitCode(h.c.OffsetCommit(ctx(t), commitReq("s", "", -1, map[int32]int64{1: 7}))()))
	s := h.cjoin("s", "a", "t")
	if o, code := h.fetch("s", 1); o != 7 || code != 0 {
		t.Fatalf("offsets of a classic group turned consumer: %d %v, want 7", o, kerr.ErrorForCode(code))
	}
	if s.epoch != 1 {
		t.Fatalf("member epoch %d, want 1", s.epoch)
	}
}

// A regex subscription matches whole topic names; a topic created later
// that matches bumps the group epoch and is assigned.
func TestConsumerRegexSubscription(t *testing.T) {
	h := newConsumerHarness(t, Bugs{})
	h.withTopics(map[string]int{"orders": 2, "xorders": 3})
	a := &cclient{h: h, group: "g", id: "a", owned: assignment{}}
	re := "ord.*"
	mustOK(t, "join", h.chb(a, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = &re }).ErrorCode)
	a.take()
	if a.owned.size() != 2 {
		t.Fatalf("regex %q assigned %v, want orders' 2 partitions only", re, a.owned)
	}
	h.withTopics(map[string]int{"orders": 2, "xorders": 3, "ordersv2": 1})
	epoch := a.epoch
	mustOK(t, "heartbeat", h.chb(a, nil).ErrorCode)
	a.take()
	if a.owned.size() != 3 || a.epoch != epoch+1 {
		t.Fatalf("after ordersv2 appeared: epoch %d owns %v, want epoch %d and 3 partitions", a.epoch, a.owned, epoch+1)
	}
}

// The uniform assignor is balanced and sticky; range gives consecutive
// ranges per topic.
func TestServerAssignors(t *testing.T) {
	t1, t2 := topicID{1}, topicID{2}
	in := assignorInput{members: []string{"a", "b", "c"}, subs: map[string][]topicID{"a": {t1, t2}, "b": {t1, t2}, "c": {t1, t2}},
		topics: map[topicID]topicMeta{t1: {ID: t1, Partitions: 4}, t2: {ID: t2, Partitions: 3}}, prev: map[string]assignment{}}
	u := uniformAssign(in)
	counts := []int{u["a"].size(), u["b"].size(), u["c"].size()}
	if slices.Max(counts)-slices.Min(counts) > 1 || counts[0]+counts[1]+counts[2] != 7 {
		t.Fatalf("uniform: %v, want 7 partitions within one of each other", u)
	}
	// c leaves: a and b keep what they had.
	in2 := in
	in2.members, in2.prev = []string{"a", "b"}, u
	u2 := uniformAssign(in2)
	for _, m := range []string{"a", "b"} {
		if !subset(u[m], u2[m]) {
			t.Fatalf("uniform not sticky: %s had %v, now %v", m, u[m], u2[m])
		}
	}
	r := rangeAssign(in)
	want := map[string]assignment{"a": {t1: {0, 1}, t2: {0}}, "b": {t1: {2}, t2: {1}}, "c": {t1: {3}, t2: {2}}}
	for m, a := range want {
		if !r[m].equal(a) {
			t.Fatalf("range for %s: %v, want %v", m, r[m], a)
		}
	}
}

// OffsetFetch validates the member epoch as Kafka reads it: at the last
// committed offset (ConsumerGroup.validateOffsetFetch with
// lastCommittedOffset). A heartbeat that moved a member's epoch but whose
// write did not commit leaves the client at its old epoch (it got an
// error, not the new epoch), and that client's OffsetFetch is answered,
// not STALE_MEMBER_EPOCH, which would make franz-go abandon its assignment
// and rejoin. Once the client learns the new epoch, that epoch fetches.
func TestConsumerOffsetFetchAtCommittedEpoch(t *testing.T) {
	h := newConsumerHarness(t, Bugs{})
	a := h.cjoin("g", "a", "t")
	a.take()
	h.cjoin("g", "b", "t")
	mustOK(t, "a heartbeat", h.chb(a, nil).ErrorCode) // asked to revoke two
	a.revoke()
	h.env.logs[0].FailAppends(kerr.RequestTimedOut)
	if code := h.chb(a, nil).ErrorCode; code == 0 {
		t.Fatal("a's revoking heartbeat succeeded although its write failed")
	}
	h.env.logs[0].FailAppends(nil)
	fetch := func(epoch int32) int16 {
		id := "a"
		return h.c.fetchGroup("g", &id, epoch, []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}, false, false).ErrorCode
	}
	if a.epoch != 1 {
		t.Fatalf("a's epoch %d after a failed heartbeat, want it kept at 1", a.epoch)
	}
	if code := fetch(a.epoch); code != 0 {
		t.Fatalf("fetch at the committed epoch %d while the move to the next did not commit: %v, want it answered", a.epoch, kerr.ErrorForCode(code))
	}
	mustOK(t, "a's revoking heartbeat, again", h.chb(a, nil).ErrorCode)
	if a.epoch != 2 {
		t.Fatalf("a at epoch %d after revoking, want 2", a.epoch)
	}
	if code := fetch(a.epoch); code != 0 {
		t.Fatalf("fetch at the epoch the heartbeat answered: %v", kerr.ErrorForCode(code))
	}
	if code := fetch(a.epoch + 1); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("fetch ahead of the member: %v, want STALE_MEMBER_EPOCH", kerr.ErrorForCode(code))
	}
}
