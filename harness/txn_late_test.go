package harness

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/runtime/clientlink"
)

// lateEndTxn plays KIP-890's motivating story on a one-broker cluster of
// the given transaction version, with franz-go and a client link: T1's
// EndTxn(commit) is held on the producer's open connections; franz-go times
// out and retries on a new connection; T2 begins and writes "t2a"; the held
// EndTxn is delivered; T2 writes "t2b" and aborts. It returns what
// read_committed sees of T2 and how the two ends went.
func lateEndTxn(t *testing.T, version int16) (visible []string, end1, end2 error) {
	cc := testCluster(1, 1)
	cc.TransactionVersion = version
	c := startCluster(t, cc.Spec(fmt.Sprintf("late%d", version), binary))
	boot := c.Bootstrap()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := CreateTopic(ctx, boot, TopicSpec{Name: "late", Partitions: 1, RF: 1, MinISR: 1}); err != nil {
		t.Fatal(err)
	}
	links := clientlink.New()
	p, err := kgo.NewClient(kgo.SeedBrokers(boot...), kgo.Dialer(links.Dialer(0)), kgo.TransactionalID("late-1"),
		kgo.TransactionTimeout(60*time.Second), kgo.RequestTimeoutOverhead(time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce := func(v string) {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: "late", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce("t1")
	if _, err := links.Hold(boot[0], []int{0}, time.Minute); err != nil {
		t.Fatal(err)
	}
	end1 = p.EndTransaction(ctx, kgo.TryCommit) // held: franz-go gives up on the connection
	if end1 != nil {
		// franz-go's heal after an unconfirmed EndTxn: a TryAbort
		// re-runs InitProducerId, which bumps the epoch.
		p.EndTransaction(ctx, kgo.TryAbort)
	}
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce("t2a")
	conns, bytes := links.Release(boot[0], []int{0})
	if err := links.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("v%d: EndTxn(T1) %v; released %d connections, %d bytes late", version, end1, conns, bytes)
	produceErr := p.ProduceSync(ctx, &kgo.Record{Topic: "late", Value: []byte("t2b")}).FirstErr()
	end2 = p.EndTransaction(ctx, kgo.TryAbort)
	t.Logf("v%d: t2b %v, EndTxn(T2, abort) %v", version, produceErr, end2)
	// Read everything committed.
	r, err := kgo.NewClient(kgo.SeedBrokers(boot...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"late": {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for empty := 0; empty < 3; {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := r.PollFetches(pctx)
		pcancel()
		n := 0
		fs.EachRecord(func(rec *kgo.Record) {
			n++
			if s := string(rec.Value); s != "t1" {
				visible = append(visible, s)
			}
		})
		if n == 0 {
			empty++
		}
	}
	return visible, end1, end2
}

// KIP-890's story, with franz-go as the client: version 2 never lets the
// late EndTxn touch T2 (every EndTxn bumps the epoch); version 1 commits T2
// early when the late request arrives at T2's epoch, so an aborted
// transaction's record is read.
func TestLateEndTxnByVersion(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	if testing.Short() {
		t.Skip("boots two clusters")
	}
	if vis, e1, e2 := lateEndTxn(t, 2); len(vis) != 0 {
		t.Errorf("version 2: read_committed saw %v of the aborted T2 (EndTxn T1 %v, T2 %v)", vis, e1, e2)
	}
	// franz-go retries the held EndTxn on a new connection and answers
	// nil, so the producer goes on at the same epoch: the late request
	// commits T2's first write, and T2's abort is refused.
	vis, e1, e2 := lateEndTxn(t, 1)
	if e1 != nil || len(vis) != 1 || vis[0] != "t2a" {
		t.Errorf("version 1: read_committed saw %v of the aborted T2, want [t2a] (EndTxn T1 %v, T2 %v)", vis, e1, e2)
	}
}
