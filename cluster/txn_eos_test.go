package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/cluster/coordinator"
	"gregor/cluster/group"
	"gregor/cluster/txn"
)

// eosMember is one consume-transform-produce member: a franz-go
// GroupTransactSession copying every record of "in" to "out" in the
// transaction that commits its offsets.
type eosMember struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	ends   int // transactions committed
	errs   []error
}

func (m *eosMember) stop() {
	m.cancel()
	<-m.done
}

func (m *eosMember) committed() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ends
}

// startEOS runs a member until stopped; a session whose producer fails for
// good is replaced by a new one with the same transactional id (which
// fences what is left of the old).
func (tc *testCluster) startEOS(groupID, txnID string, opts ...kgo.Opt) *eosMember {
	tc.t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(tc.bootstrap()...), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics("in"),
		kgo.TransactionalID(txnID), kgo.TransactionTimeout(10 * time.Second), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.SessionTimeout(3 * time.Second), kgo.HeartbeatInterval(100 * time.Millisecond), kgo.RebalanceTimeout(10 * time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }), kgo.MetadataMinAge(50 * time.Millisecond),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &eosMember{cancel: cancel, done: make(chan struct{})}
	fail := func(err error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if len(m.errs) < 20 {
			m.errs = append(m.errs, err)
		}
	}
	go func() {
		defer close(m.done)
		// Bounded by ctx: the test stops every member.
		for ctx.Err() == nil {
			sess, err := kgo.NewGroupTransactSession(append(base, opts...)...)
			if err != nil {
				fail(err)
				return
			}
			m.run(ctx, sess, fail)
			sess.Close()
		}
	}()
	tc.t.Cleanup(m.stop)
	return m
}

// run loops poll, begin, produce, end until ctx ends or the session's
// producer is unusable.
func (m *eosMember) run(ctx context.Context, sess *kgo.GroupTransactSession, fail func(error)) {
	for ctx.Err() == nil {
		// Small transactions: many of them are in flight when a broker dies.
		fs := sess.PollRecords(ctx, 10)
		if ctx.Err() != nil {
			return
		}
		if fs.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			fail(fmt.Errorf("begin: %w", err))
			return
		}
		var out []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { out = append(out, &kgo.Record{Topic: "out", Value: r.Value}) })
		perr := sess.ProduceSync(ctx, out...).FirstErr()
		committed, err := sess.End(ctx, kgo.TransactionEndTry(perr == nil))
		switch {
		case err != nil:
			fail(fmt.Errorf("end: %w", err))
		case committed:
			m.mu.Lock()
			m.ends++
			m.mu.Unlock()
		}
	}
}

// produceInput writes values to "in", round robin, acks=all.
func (tc *testCluster) produceInput(from, to int) {
	tc.t.Helper()
	cl := tc.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a hang guard: at load 30 on 2 cores 200 acks=all records outlasted 30 s
	defer cancel()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Topic: "in", Value: fmt.Appendf(nil, "v%04d", i)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		tc.t.Fatalf("input: %v", err)
	}
}

// groupCaughtUp waits until the group has committed offsets equal to the
// input's end offsets on every partition.
func (tc *testCluster) groupCaughtUp(groupID string, partitions int32, limit time.Duration) {
	tc.t.Helper()
	ends := map[int32]int64{}
	for p := int32(0); p < partitions; p++ {
		ends[p] = tc.listOffset("in", p, false)
	}
	tc.waitFor("the pipeline's committed offsets at the input's end", limit, func() error {
		cl := tc.liveClient()
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := kadm.NewClient(cl).FetchOffsets(ctx, groupID)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return err
		}
		for p, end := range ends {
			if o, ok := resp.Lookup("in", p); !ok || o.At != end {
				return fmt.Errorf("partition %d committed at %d, input ends at %d", p, o.At, end)
			}
		}
		return nil
	})
}

// eosRole names the broker a scenario kills.
type eosRole int

const (
	killInputLeader eosRole = iota
	killOutputLeader
	killGroupCoordinator
	killTxnCoordinator
)

// testEOS runs two pipeline members copying n records from "in" to "out"
// while the broker in the given role is killed, then checks that "out",
// read committed, holds every input value exactly once.
func testEOS(t *testing.T, role eosRole, opts func(member int) []kgo.Opt) {
	txnVersions(t, func(t *testing.T, tv int16) {
		const parts = 4
		const n, first = 300, 100
		tc := txnCluster(t, 3, tv, nil)
		tc.createTopic("in", parts, 3, nil)
		tc.createTopic("out", parts, 3, nil)
		tc.produceInput(0, first)
		ms := []*eosMember{tc.startEOS("eos", "eos-1", opts(1)...), tc.startEOS("eos", "eos-2", opts(2)...)}
		tc.waitFor("the pipeline commits", 30*time.Second, func() error {
			if c := ms[0].committed() + ms[1].committed(); c < 3 {
				return fmt.Errorf("%d transactions committed", c)
			}
			return nil
		})
		var victim int32
		switch role {
		case killInputLeader:
			victim = tc.leader("in", 0)
		case killOutputLeader:
			victim = tc.leader("out", 0)
		case killGroupCoordinator:
			victim = tc.leader(group.Topic, coordinator.PartitionFor("eos", int32(len(tc.any().Image().Topics[group.Topic].Partitions))))
		case killTxnCoordinator:
			victim = tc.leader(txn.Topic, coordinator.PartitionFor("eos-1", int32(len(tc.any().Image().Topics[txn.Topic].Partitions))))
		}
		if victim < 1 {
			t.Fatalf("no broker in role %d", role)
		}
		before := ms[0].committed() + ms[1].committed()
		tc.kill(int(victim))
		tc.produceInput(first, n)
		tc.groupCaughtUp("eos", parts, 60*time.Second)
		for _, m := range ms {
			m.stop()
		}
		tc.sentinels(tc.txnProducer("eos-check"), "out", parts, "end")
		got := tc.readUntil("out", parts, true, "end")
		slices.Sort(got)
		var want []string
		for i := 0; i < n; i++ {
			want = append(want, fmt.Sprintf("v%04d", i))
		}
		if !slices.Equal(got, want) {
			dups, missing := diffCounts(got, want)
			t.Fatalf("after killing broker %d: out holds %d records, want each of %d once; duplicated %v, missing %v; member errors %v %v",
				victim, len(got), n, dups, missing, ms[0].errs, ms[1].errs)
		}
		t.Logf("killed broker %d after %d transactions; %d+%d committed in all", victim, before, ms[0].committed(), ms[1].committed())
	})
}

// diffCounts lists values got holds more than once and values of want it lacks.
func diffCounts(got, want []string) (dups, missing []string) {
	count := map[string]int{}
	for _, g := range got {
		count[g]++
	}
	for v, c := range count {
		if c > 1 {
			dups = append(dups, v)
		}
	}
	for _, w := range want {
		if count[w] == 0 {
			missing = append(missing, w)
		}
	}
	slices.Sort(dups)
	return dups, missing
}

// TestEOS: one scenario per broker role killed, each with its own mix of
// assignor and static membership, each in both transaction versions; all
// run in parallel (they wait on failure detection, not on the CPU).
func TestEOS(t *testing.T) {
	static := func(m int) kgo.Opt { return kgo.InstanceID(fmt.Sprintf("static-%d", m)) }
	for _, sc := range []struct {
		name string
		role eosRole
		opts func(member int) []kgo.Opt
	}{
		{"kill-input-leader", killInputLeader, func(m int) []kgo.Opt { return []kgo.Opt{kgo.Balancers(kgo.RangeBalancer()), static(m)} }},
		{"kill-output-leader", killOutputLeader, func(int) []kgo.Opt { return []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())} }},
		{"kill-group-coordinator", killGroupCoordinator, func(int) []kgo.Opt { return []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())} }},
		{"kill-txn-coordinator", killTxnCoordinator, func(m int) []kgo.Opt {
			return []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer()), static(m)}
		}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			testEOS(t, sc.role, sc.opts)
		})
	}
}
