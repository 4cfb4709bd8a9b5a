package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/coordinator"
	"gregor/cluster/txn"
)

// txnVersions runs f once per transaction version, as parallel subtests
// (each starts its own cluster; they spend most of their time waiting on
// failure detection, not on the CPU).
func txnVersions(t *testing.T, f func(t *testing.T, tv int16)) {
	for _, tv := range []int16{1, 2} {
		t.Run(fmt.Sprintf("tv%d", tv), func(t *testing.T) {
			t.Parallel()
			f(t, tv)
		})
	}
}

// txnCluster starts n brokers with transaction version tv and short
// transaction timings.
func txnCluster(t *testing.T, n int, tv int16, mod func(*Config)) *testCluster {
	return startCluster(t, n, func(c *Config) {
		c.TransactionVersion = tv
		c.Txn.AbortTimedOutEvery = 100 * time.Millisecond
		c.Txn.WriteTimeout = 3 * time.Second
		if mod != nil {
			mod(c)
		}
	})
}

// txnProducer is a transactional franz-go client.
func (tc *testCluster) txnProducer(id string, opts ...kgo.Opt) *kgo.Client {
	tc.t.Helper()
	return tc.client(append([]kgo.Opt{kgo.TransactionalID(id), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.TransactionTimeout(10 * time.Second)}, opts...)...)
}

// produceTxn produces the values (round robin over partitions) in one
// transaction and ends it with commit.
func produceTxn(ctx context.Context, cl *kgo.Client, topic string, partitions int32, commit bool, values ...string) error {
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	var recs []*kgo.Record
	for i, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i) % partitions, Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		cl.EndTransaction(ctx, kgo.TryAbort)
		return err
	}
	return cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
}

// readUntil reads every partition of topic from the start with a franz-go
// consumer at the isolation level until each partition has yielded a
// record whose value is sentinel, and returns the other values, partition
// by partition in offset order. Records come in offset order, so whatever a
// consumer would ever see before the sentinels is in the answer.
func (tc *testCluster) readUntil(topic string, partitions int32, committed bool, sentinel string) []string {
	tc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	at := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		at[p] = kgo.NewOffset().At(0)
	}
	cons := tc.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: at}), kgo.FetchIsolationLevel(iso), kgo.FetchMaxWait(200*time.Millisecond))
	got := map[int32][]string{}
	seen := map[int32]bool{}
	for int32(len(seen)) < partitions {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			tc.t.Fatalf("reading %s (read_committed %v): sentinel %q seen on %d of %d partitions; read %v", topic, committed, sentinel, len(seen), partitions, got)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == sentinel {
				seen[r.Partition] = true
			} else if !seen[r.Partition] {
				got[r.Partition] = append(got[r.Partition], string(r.Value))
			}
		})
	}
	var out []string
	for p := int32(0); p < partitions; p++ {
		out = append(out, got[p]...)
	}
	return out
}

// sentinels writes value to every partition of topic in a committed
// transaction of producer cl (nil: a plain idempotent producer).
func (tc *testCluster) sentinels(cl *kgo.Client, topic string, partitions int32, value string) {
	tc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var vs []string
	for p := int32(0); p < partitions; p++ {
		vs = append(vs, value)
	}
	if cl != nil {
		if err := produceTxn(ctx, cl, topic, partitions, true, vs...); err != nil {
			tc.t.Fatalf("sentinels: %v", err)
		}
		return
	}
	plain := tc.client(kgo.RequiredAcks(kgo.AllISRAcks()))
	for p := int32(0); p < partitions; p++ {
		if err := plain.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(value)}).FirstErr(); err != nil {
			tc.t.Fatalf("sentinel: %v", err)
		}
	}
}

// listOffset is ListOffsets latest for one partition, by isolation level:
// the HW, or the LSO for read_committed.
func (tc *testCluster) listOffset(topic string, p int32, committed bool) int64 {
	tc.t.Helper()
	var off int64
	tc.waitFor(fmt.Sprintf("ListOffsets %s/%d", topic, p), 15*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cl := tc.liveClient()
		defer cl.Close()
		adm := kadm.NewClient(cl)
		var offs kadm.ListedOffsets
		var err error
		if committed {
			offs, err = adm.ListCommittedOffsets(ctx, topic)
		} else {
			offs, err = adm.ListEndOffsets(ctx, topic)
		}
		if err != nil {
			return err
		}
		o, ok := offs.Lookup(topic, p)
		if !ok {
			return errors.New("no answer")
		}
		off = o.Offset
		return o.Err
	})
	return off
}

// read_committed readers never see an aborted transaction's records, nor
// an open one's (the LSO stays at its first offset); read_uncommitted
// readers see both.
func TestTxnReadCommittedSkipsAborted(t *testing.T) {
	txnVersions(t, func(t *testing.T, tv int16) {
		tc := txnCluster(t, 3, tv, nil)
		tc.createTopic("rc", 2, 3, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cl := tc.txnProducer("rc-producer")
		if err := produceTxn(ctx, cl, "rc", 2, true, "c1", "c2", "c3", "c4"); err != nil {
			t.Fatalf("committed transaction: %v", err)
		}
		if err := produceTxn(ctx, cl, "rc", 2, false, "a1", "a2", "a3", "a4"); err != nil {
			t.Fatalf("aborted transaction: %v", err)
		}
		if err := produceTxn(ctx, cl, "rc", 2, true, "c5", "c6"); err != nil {
			t.Fatalf("second committed transaction: %v", err)
		}
		tc.sentinels(cl, "rc", 2, "end")
		committed := tc.readUntil("rc", 2, true, "end")
		slices.Sort(committed)
		if want := []string{"c1", "c2", "c3", "c4", "c5", "c6"}; !slices.Equal(committed, want) {
			t.Fatalf("read_committed saw %v, want %v", committed, want)
		}
		all := tc.readUntil("rc", 2, false, "end")
		slices.Sort(all)
		if want := []string{"a1", "a2", "a3", "a4", "c1", "c2", "c3", "c4", "c5", "c6"}; !slices.Equal(all, want) {
			t.Fatalf("read_uncommitted saw %v, want %v", all, want)
		}
		// A follower kept the same transaction state: after the leader
		// dies, the new one answers read_committed alike.
		old := tc.leader("rc", 0)
		tc.kill(int(old))
		tc.waitFor("a new leader", 15*time.Second, func() error {
			if l := tc.leader("rc", 0); l < 0 || l == old {
				return fmt.Errorf("leader %d", l)
			}
			return nil
		})
		if got := tc.readUntil("rc", 2, true, "end"); len(got) != 6 || slices.Contains(got, "a1") || slices.Contains(got, "a3") {
			t.Fatalf("read_committed from the new leader: %v", got)
		}
		tc.start(int(old))

		// An open transaction: below the HW, above the LSO.
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		r := &kgo.Record{Topic: "rc", Partition: 0, Value: []byte("o1")}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		tc.sentinels(nil, "rc", 2, "end2")
		if lso, hw := tc.listOffset("rc", 0, true), tc.listOffset("rc", 0, false); lso != r.Offset || hw <= lso {
			t.Fatalf("open transaction at offset %d: LSO %d, HW %d; want LSO at the transaction, HW past it", r.Offset, lso, hw)
		}
		if all := tc.readUntil("rc", 2, false, "end2"); !slices.Contains(all, "o1") {
			t.Fatalf("read_uncommitted did not see the open transaction's record: %v", all)
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
		if got := tc.readUntil("rc", 2, true, "end2"); !slices.Contains(got, "o1") || slices.Contains(got, "a1") {
			t.Fatalf("read_committed after the commit: %v", got)
		}
		// Five transactions ended: version 1 keeps the epoch, version 2
		// (negotiated through ApiVersions' transaction.version) bumps it
		// at every end.
		want := map[int16]int16{1: 0, 2: 5}[tv]
		tc.waitTxnState("the last commit complete", "rc-producer", "CompleteCommit", 15*time.Second, func(d kadm.DescribedTransaction) error {
			if d.ProducerEpoch != want {
				t.Fatalf("described %+v, want epoch %d", d, want)
			}
			return nil
		})
	})
}

// waitTxnState waits until the transactional id is described in state
// (and, when check is given, check accepts it), bounded by limit.
func (tc *testCluster) waitTxnState(what, id, state string, limit time.Duration, check func(kadm.DescribedTransaction) error) kadm.DescribedTransaction {
	tc.t.Helper()
	var d kadm.DescribedTransaction
	tc.waitFor(what, limit, func() error {
		var err error
		if d, err = tc.describeTxn(id); err != nil {
			return err
		}
		if d.State != state {
			return fmt.Errorf("state %s, want %s", d.State, state)
		}
		if check != nil {
			return check(d)
		}
		return nil
	})
	return d
}

// liveClient is a client seeded with the brokers up now only: kadm's
// requests fail on a seed they cannot dial instead of trying the next.
func (tc *testCluster) liveClient() *kgo.Client {
	tc.t.Helper()
	var live []string
	for i, b := range tc.brokers[:tc.n] {
		if b != nil {
			live = append(live, tc.cfgs[i].Listen)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(live...), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		tc.t.Fatal(err)
	}
	return cl
}

// describeTxn is kadm's DescribeTransactions of one id, asked of the live
// brokers.
func (tc *testCluster) describeTxn(id string) (kadm.DescribedTransaction, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := tc.liveClient()
	defer cl.Close()
	ds, err := kadm.NewClient(cl).DescribeTransactions(ctx, id)
	if err != nil {
		return kadm.DescribedTransaction{}, err
	}
	d, ok := ds[id]
	if !ok {
		return d, errors.New("not described")
	}
	return d, d.Err
}

// A producer paused past its transaction.timeout.ms: the coordinator
// aborts its transaction and fences it (epoch bump); when it resumes, its
// late produce and its commit fail, and nothing it wrote is ever visible to
// read_committed.
func TestTxnTimeoutFencesPausedProducer(t *testing.T) {
	txnVersions(t, func(t *testing.T, tv int16) {
		tc := txnCluster(t, 3, tv, nil)
		tc.createTopic("slow", 2, 3, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cl := tc.txnProducer("paused", kgo.TransactionTimeout(time.Second))
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		early := []*kgo.Record{{Topic: "slow", Partition: 0, Value: []byte("early0")}, {Topic: "slow", Partition: 1, Value: []byte("early1")}}
		if err := cl.ProduceSync(ctx, early...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		d0, err := tc.describeTxn("paused")
		if err != nil || d0.State != "Ongoing" {
			t.Fatalf("before the pause: %+v %v", d0, err)
		}
		// The pause: the producer does nothing until the coordinator has
		// aborted its transaction.
		tc.waitTxnState("the timed-out transaction aborted", "paused", "CompleteAbort", 20*time.Second, func(d kadm.DescribedTransaction) error {
			if d.ProducerEpoch <= d0.ProducerEpoch {
				return fmt.Errorf("epoch %d, not bumped", d.ProducerEpoch)
			}
			return nil
		})
		late := &kgo.Record{Topic: "slow", Partition: 0, Value: []byte("late0")}
		perr := cl.ProduceSync(ctx, late).FirstErr()
		cerr := cl.EndTransaction(ctx, kgo.TryCommit)
		if perr == nil || cerr == nil {
			t.Fatalf("the fenced producer resumed: produce %v, commit %v; want both refused", perr, cerr)
		}
		fenced := func(err error) bool {
			return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch)
		}
		if !fenced(perr) && !fenced(cerr) {
			t.Fatalf("produce %v, commit %v: want the producer fenced", perr, cerr)
		}
		t.Logf("late produce: %v; commit: %v", perr, cerr)
		// The raw EndTxn of the old epoch: the coordinator's own answer.
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = "paused", d0.ProducerID, d0.ProducerEpoch, true
		resp, err := req.RequestWith(ctx, tc.client())
		if err != nil {
			t.Fatal(err)
		}
		if e := kerr.ErrorForCode(resp.ErrorCode); !errors.Is(e, kerr.ProducerFenced) {
			t.Fatalf("EndTxn at the paused producer's epoch: %v, want PRODUCER_FENCED", e)
		}
		tc.sentinels(tc.txnProducer("paused-check"), "slow", 2, "end")
		if got := tc.readUntil("slow", 2, true, "end"); len(got) != 0 {
			t.Fatalf("read_committed saw the fenced producer's records: %v", got)
		}
	})
}

// findTxnID returns a transactional id whose coordinator is (want) or is
// not (!want) broker node.
func (tc *testCluster) findTxnID(prefix string, node int32, want bool) string {
	tc.t.Helper()
	t := tc.any().Image().Topics[txn.Topic]
	if t == nil {
		tc.t.Fatal(txn.Topic + " does not exist yet")
	}
	for i := 0; i < 1000; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		l := t.Partitions[coordinator.PartitionFor(id, int32(len(t.Partitions)))].Leader
		if (l == node) == want && l >= 0 {
			return id
		}
	}
	tc.t.Fatalf("no transactional id with coordinator %d (want %v)", node, want)
	return ""
}

// createTxnState makes __transaction_state exist (FindCoordinator type 1
// creates it) and waits for its leaders.
func (tc *testCluster) createTxnState() {
	tc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tc.waitFor(txn.Topic+" led", 15*time.Second, func() error {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKey = 1, "warm-up"
		if _, err := req.RequestWith(ctx, tc.client()); err != nil {
			return err
		}
		return tc.led(txn.Topic)
	})
}

// The coordinator dies with PrepareCommit durable and its markers not yet
// written (the transaction's partition is offline): the new coordinator
// loads PrepareCommit and completes the commit once the partition is back.
func TestTxnCoordinatorFailoverCompletesCommit(t *testing.T) {
	txnVersions(t, func(t *testing.T, tv int16) {
		tc := txnCluster(t, 3, tv, func(c *Config) { c.Txn.WriteTimeout = 10 * time.Second })
		tc.createTopic("one", 1, 1, nil) // RF 1: offline while its broker is down
		tc.createTxnState()
		data := tc.leader("one", 0)
		id := tc.findTxnID("fo", data, false)
		coord := tc.leader(txn.Topic, coordinator.PartitionFor(id, int32(len(tc.any().Image().Topics[txn.Topic].Partitions))))
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cl := tc.txnProducer(id)
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "one", Partition: 0, Value: []byte("x1")}, &kgo.Record{Topic: "one", Partition: 0, Value: []byte("x2")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		tc.kill(int(data))
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("commit (PrepareCommit durable on the live replicas): %v", err)
		}
		tc.waitTxnState("PrepareCommit owing the offline partition's marker", id, "PrepareCommit", 10*time.Second, func(d kadm.DescribedTransaction) error {
			if len(d.Topics["one"]) != 1 {
				return fmt.Errorf("owes markers to %v", d.Topics)
			}
			return nil
		})
		tc.kill(int(coord))
		tc.start(int(data))
		// describeTxn asks the live brokers: the answer is the new coordinator's.
		tc.waitTxnState("the new coordinator completes the commit", id, "CompleteCommit", 30*time.Second, nil)
		tc.sentinels(tc.txnProducer(id+"-check"), "one", 1, "end")
		if got := tc.readUntil("one", 1, true, "end"); !slices.Equal(got, []string{"x1", "x2"}) {
			t.Fatalf("read_committed after the failover: %v, want [x1 x2]", got)
		}
	})
}
