package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/coordinator"
	"gregor/cluster/group"
)

// consumed is every (partition, offset) a group's members have polled.
type consumed struct {
	mu   sync.Mutex
	seen map[int32]map[int64]bool
}

func (c *consumed) add(p int32, off int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[int32]map[int64]bool{}
	}
	if c.seen[p] == nil {
		c.seen[p] = map[int64]bool{}
	}
	c.seen[p][off] = true
}

// missing counts offsets below ends[p] not yet consumed.
func (c *consumed) missing(ends map[int32]int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for p, end := range ends {
		for o := int64(0); o < end; o++ {
			if !c.seen[p][o] {
				n++
			}
		}
	}
	return n
}

// groupMember is one franz-go group consumer and what its hooks saw.
type groupMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	owned    map[int32]bool
	revokes  [][]int32 // partitions of each OnPartitionsRevoked call that revoked any
	assigns  int
	lastPoll time.Time
}

func (m *groupMember) partitions() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.owned))
}

func (m *groupMember) generation() int32 {
	_, gen := m.cl.GroupMetadata()
	return gen
}

// stop ends polling and closes the client (a dynamic member leaves the
// group; a static one does not).
func (m *groupMember) stop() {
	m.cancel()
	<-m.done
	m.cl.Close()
}

func (tc *testCluster) joinGroup(groupID, topic string, into *consumed, opts ...kgo.Opt) *groupMember {
	tc.t.Helper()
	m := &groupMember{owned: map[int32]bool{}, done: make(chan struct{})}
	update := func(ps map[string][]int32, add bool) {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, p := range ps[topic] {
			if add {
				m.owned[p] = true
			} else {
				delete(m.owned, p)
			}
		}
		if add {
			m.assigns++
		} else if len(ps[topic]) > 0 {
			m.revokes = append(m.revokes, slices.Clone(ps[topic]))
		}
	}
	base := []kgo.Opt{
		kgo.SeedBrokers(tc.bootstrap()...), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.SessionTimeout(2 * time.Second), kgo.HeartbeatInterval(100 * time.Millisecond), kgo.RebalanceTimeout(5 * time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }), kgo.MetadataMinAge(50 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { update(ps, true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { update(ps, false) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { update(ps, false) }),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		tc.t.Fatal(err)
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) { into.add(r.Partition, r.Offset) })
		}
	}()
	tc.t.Cleanup(func() {
		cancel()
		<-m.done
		cl.Close()
	})
	return m
}

// produceEach writes n records to every partition and returns the end
// offsets.
func (tc *testCluster) produceEach(topic string, partitions int32, n int) map[int32]int64 {
	tc.t.Helper()
	cl := tc.client(kgo.RequiredAcks(kgo.AllISRAcks()))
	var recs []*kgo.Record
	for p := int32(0); p < partitions; p++ {
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		tc.t.Fatalf("produce: %v", err)
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		tc.t.Fatal(err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// stableSplit waits until the members own every partition exactly once and
// agree on one generation, and returns it.
func (tc *testCluster) stableSplit(partitions int32, ms ...*groupMember) int32 {
	tc.t.Helper()
	var gen int32
	tc.waitFor("members share the partitions", 30*time.Second, func() error {
		owner := map[int32]int{}
		for i, m := range ms {
			for _, p := range m.partitions() {
				if j, dup := owner[p]; dup {
					return fmt.Errorf("partition %d owned by members %d and %d", p, j, i)
				}
				owner[p] = i
			}
		}
		if int32(len(owner)) != partitions {
			return fmt.Errorf("%d of %d partitions owned", len(owner), partitions)
		}
		gen = ms[0].generation()
		for i, m := range ms {
			if g := m.generation(); g != gen || g <= 0 {
				return fmt.Errorf("member %d at generation %d, member 0 at %d", i, g, gen)
			}
			if len(m.partitions()) == 0 {
				return fmt.Errorf("member %d owns nothing", i)
			}
		}
		return nil
	})
	return gen
}

func (tc *testCluster) allConsumed(c *consumed, ends map[int32]int64) {
	tc.t.Helper()
	tc.waitFor("every record consumed", 30*time.Second, func() error {
		if n := c.missing(ends); n > 0 {
			return fmt.Errorf("%d records not consumed", n)
		}
		return nil
	})
}

// TestGroupRangeSharesAndRebalancesOnce: three eager (range) consumers
// split 8 partitions without overlap; a fourth joining and one leaving each
// cost exactly one rebalance (one generation); every record is consumed.
func TestGroupRangeSharesAndRebalancesOnce(t *testing.T) {
	tc := startCluster(t, 3, nil)
	tc.createTopic("g8", 8, 3, nil)
	var got consumed
	ends := tc.produceEach("g8", 8, 20)
	range_ := kgo.Balancers(kgo.RangeBalancer())
	ms := []*groupMember{tc.joinGroup("g", "g8", &got, range_), tc.joinGroup("g", "g8", &got, range_), tc.joinGroup("g", "g8", &got, range_)}
	gen := tc.stableSplit(8, ms...)
	tc.allConsumed(&got, ends)

	ms = append(ms, tc.joinGroup("g", "g8", &got, range_))
	if g := tc.stableSplit(8, ms...); g != gen+1 {
		t.Fatalf("a fourth member joining: generation %d -> %d, want one rebalance", gen, g)
	}
	ends = tc.produceEach("g8", 8, 20)
	tc.allConsumed(&got, ends)

	ms[1].stop()
	ms = slices.Delete(ms, 1, 2)
	if g := tc.stableSplit(8, ms...); g != gen+2 {
		t.Fatalf("a member leaving: generation %d -> %d, want one more rebalance", gen+1, g)
	}
	ends = tc.produceEach("g8", 8, 20)
	tc.allConsumed(&got, ends)
	// Settled: no further rebalance happens on its own.
	time.Sleep(500 * time.Millisecond)
	for i, m := range ms {
		if g := m.generation(); g != gen+2 {
			t.Fatalf("member %d moved on to generation %d without a membership change", i, g)
		}
	}
}

// TestGroupCooperativeStickyRevokesOnlyMoved: with cooperative-sticky, a
// member joining makes the others give up only the partitions that move to
// it; the rest are never revoked, so they keep being consumed.
func TestGroupCooperativeStickyRevokesOnlyMoved(t *testing.T) {
	tc := startCluster(t, 3, nil)
	tc.createTopic("coop", 8, 3, nil)
	var got consumed
	ends := tc.produceEach("coop", 8, 10)
	coop := kgo.Balancers(kgo.CooperativeStickyBalancer())
	a, b := tc.joinGroup("cg", "coop", &got, coop), tc.joinGroup("cg", "coop", &got, coop)
	tc.stableSplit(8, a, b)
	tc.allConsumed(&got, ends)
	before := map[*groupMember][]int32{a: a.partitions(), b: b.partitions()}
	a.mu.Lock()
	a.revokes = nil
	a.mu.Unlock()
	b.mu.Lock()
	b.revokes = nil
	b.mu.Unlock()

	c := tc.joinGroup("cg", "coop", &got, coop)
	tc.stableSplit(8, a, b, c)
	moved := c.partitions()
	if len(moved) < 2 || len(moved) > 3 {
		t.Fatalf("new member got %v, want 2-3 of 8 partitions", moved)
	}
	var revoked []int32
	for _, m := range []*groupMember{a, b} {
		m.mu.Lock()
		for _, r := range m.revokes {
			revoked = append(revoked, r...)
		}
		m.mu.Unlock()
		for _, p := range m.partitions() {
			if !slices.Contains(before[m], p) {
				t.Fatalf("an existing member gained partition %d: sticky should only move partitions to the newcomer", p)
			}
		}
	}
	slices.Sort(revoked)
	if !slices.Equal(revoked, moved) {
		t.Fatalf("revoked %v from the existing members, but only %v moved", revoked, moved)
	}
	ends = tc.produceEach("coop", 8, 10)
	tc.allConsumed(&got, ends)
}

// TestGroupStaticMemberRestart: a static member (group.instance.id)
// restarting within session.timeout.ms gets its partitions back in the same
// generation (KIP-345); a dynamic member restarting causes a rebalance.
func TestGroupStaticMemberRestart(t *testing.T) {
	tc := startCluster(t, 3, nil)
	tc.createTopic("st", 8, 3, nil)
	var got consumed
	ends := tc.produceEach("st", 8, 5)
	session := kgo.SessionTimeout(5 * time.Second)
	a := tc.joinGroup("sg", "st", &got, kgo.InstanceID("a"), session)
	b := tc.joinGroup("sg", "st", &got, kgo.InstanceID("b"), session)
	gen := tc.stableSplit(8, a, b)
	tc.allConsumed(&got, ends)
	owned := a.partitions()
	a.stop() // static: no LeaveGroup
	a = tc.joinGroup("sg", "st", &got, kgo.InstanceID("a"), session)
	tc.waitFor("restarted static member owns its partitions again", 15*time.Second, func() error {
		if p := a.partitions(); !slices.Equal(p, owned) {
			return fmt.Errorf("owns %v, had %v", p, owned)
		}
		return nil
	})
	if ga, gb := a.generation(), b.generation(); ga != gen || gb != gen {
		t.Fatalf("static restart: generations %d/%d, want %d unchanged (no rebalance)", ga, gb, gen)
	}
	ends = tc.produceEach("st", 8, 5)
	tc.allConsumed(&got, ends)

	var got2 consumed
	c, d := tc.joinGroup("dg", "st", &got2), tc.joinGroup("dg", "st", &got2)
	dgen := tc.stableSplit(8, c, d)
	c.stop()
	c = tc.joinGroup("dg", "st", &got2)
	if g := tc.stableSplit(8, c, d); g <= dgen {
		t.Fatalf("dynamic restart: generation %d -> %d, want a rebalance", dgen, g)
	}
}

// TestGroupCoordinatorFailover: killing the broker that coordinates a
// group: the group keeps consuming through the new coordinator, and the
// committed offsets read back equal the last acknowledged commits.
func TestGroupCoordinatorFailover(t *testing.T) {
	tc := startCluster(t, 3, nil)
	tc.createTopic("fo", 8, 3, nil)
	var got consumed
	ends := tc.produceEach("fo", 8, 10)
	manual := kgo.DisableAutoCommit()
	a, b := tc.joinGroup("fg", "fo", &got, manual), tc.joinGroup("fg", "fo", &got, manual)
	tc.stableSplit(8, a, b)
	tc.allConsumed(&got, ends)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	acked := map[int32]int64{}
	for _, m := range []*groupMember{a, b} {
		if err := m.cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("commit: %v", err)
		}
		for p, eo := range m.cl.CommittedOffsets()["fo"] {
			acked[p] = eo.Offset
		}
	}
	if len(acked) != 8 {
		t.Fatalf("acknowledged commits for %d of 8 partitions: %v", len(acked), acked)
	}
	for p, o := range acked {
		if o != ends[p] {
			t.Fatalf("partition %d: committed %d after consuming to %d", p, o, ends[p])
		}
	}

	parts := int32(len(tc.any().Image().Topics[group.Topic].Partitions))
	coord := tc.leader(group.Topic, coordinator.PartitionFor("fg", parts))
	tc.kill(int(coord))
	readBack := func(want map[int32]int64) time.Duration {
		t.Helper()
		return tc.waitFor("offsets read back from the new coordinator", 30*time.Second, func() error {
			// A fresh client per try: franz-go's admin path keeps the
			// coordinator it found before the kill.
			cl, err := kgo.NewClient(kgo.SeedBrokers(tc.bootstrap()...))
			if err != nil {
				return err
			}
			defer cl.Close()
			resp, err := kadm.NewClient(cl).FetchOffsets(ctx, "fg")
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				return err
			}
			for p, w := range want {
				o, ok := resp.Lookup("fo", p)
				if !ok || o.At != w {
					return fmt.Errorf("partition %d: committed %d (found %v), want %d", p, o.At, ok, w)
				}
			}
			return nil
		})
	}
	t.Logf("committed offsets readable %v after killing coordinator broker %d", readBack(acked), coord)
	if now := tc.leader(group.Topic, coordinator.PartitionFor("fg", parts)); now == coord || now < 0 {
		t.Fatalf("coordinator partition still led by %d after killing %d", now, coord)
	}
	ends = tc.produceEach("fo", 8, 10)
	tc.allConsumed(&got, ends)
	// The members commit through the new coordinator.
	for _, m := range []*groupMember{a, b} {
		if err := m.cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("commit after failover: %v", err)
		}
	}
	readBack(ends)
}

// TestGroupKadmDescribeAndLag: kadm's DescribeGroups shows the stable group
// and its member's assignment; Lag is HW - committed per partition.
func TestGroupKadmDescribeAndLag(t *testing.T) {
	tc := startCluster(t, 3, nil)
	tc.createTopic("lag", 4, 3, nil)
	var got consumed
	ends := tc.produceEach("lag", 4, 10)
	m := tc.joinGroup("lg", "lag", &got, kgo.DisableAutoCommit(), kgo.Balancers(kgo.RangeBalancer()))
	tc.stableSplit(4, m)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := map[int32]int64{}
	commit := map[string]map[int32]kgo.EpochOffset{"lag": {}}
	for p := int32(0); p < 4; p++ {
		want[p] = int64(p) + 1
		commit["lag"][p] = kgo.EpochOffset{Epoch: -1, Offset: want[p]}
	}
	// Commit as the member: the group is not empty, so only members may.
	var commitErr error
	m.cl.CommitOffsetsSync(ctx, commit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err == nil {
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
						err = e
					}
				}
			}
		}
		commitErr = err
	})
	if commitErr != nil {
		t.Fatalf("commit: %v", commitErr)
	}
	adm := kadm.NewClient(tc.client())
	described, err := adm.DescribeGroups(ctx, "lg")
	if err != nil {
		t.Fatal(err)
	}
	dg := described["lg"]
	if dg.Err != nil || dg.State != "Stable" || dg.Protocol != "range" || dg.ProtocolType != "consumer" || len(dg.Members) != 1 {
		t.Fatalf("described %+v", dg)
	}
	ca, ok := dg.Members[0].Assigned.AsConsumer()
	if !ok || len(ca.Topics) != 1 || len(ca.Topics[0].Partitions) != 4 {
		t.Fatalf("member assignment %+v", dg.Members[0].Assigned)
	}
	lags, err := adm.Lag(ctx, "lg")
	if err != nil {
		t.Fatal(err)
	}
	l := lags["lg"]
	if l.Error() != nil {
		t.Fatal(l.Error())
	}
	for p := int32(0); p < 4; p++ {
		gl, ok := l.Lag.Lookup("lag", p)
		if !ok || gl.Err != nil {
			t.Fatalf("no lag for partition %d: %+v", p, gl)
		}
		if gl.Lag != ends[p]-want[p] || gl.End.Offset != ends[p] || gl.Commit.At != want[p] {
			t.Fatalf("partition %d: lag %d (end %d, commit %d), want %d", p, gl.Lag, gl.End.Offset, gl.Commit.At, ends[p]-want[p])
		}
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := listed["lg"]; !ok {
		t.Fatalf("ListGroups: %v", listed.Groups())
	}
}
