package txn

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// releasing is the client abortTxn is given: whichever of its calls comes
// first lets the held produce go, so the abort runs with one batch in flight
// and one buffered behind it, as a send the workload gave up on leaves them.
type releasing struct {
	*kgo.Client
	release func()
}

func (r releasing) AbortBufferedRecords(ctx context.Context) error {
	r.release()
	return r.Client.AbortBufferedRecords(ctx)
}

func (r releasing) EndTransaction(ctx context.Context, try kgo.TransactionEndTry) error {
	err := r.Client.EndTransaction(ctx, try)
	r.release()
	return err
}

// TestAbortedSendsStayOutOfTheNextTransaction holds the seed-1035 false
// aborted-read: a record still buffered when its transaction was aborted
// was sent in the next one and committed with it. After abortTxn, the next
// committed transaction must hold only its own record.
func TestAbortedSendsStayOutOfTheNextTransaction(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	held, release := make(chan struct{}), make(chan struct{})
	var holdOnce, releaseOnce sync.Once
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		holdOnce.Do(func() {
			close(held)
			c.SleepControl(func() { <-release })
		})
		return nil, nil, false // then served as usual
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.TransactionalID("abort-test"),
		kgo.DefaultProduceTopic("t"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxProduceRequestsInflightPerBroker(1), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	cl.Produce(ctx, &kgo.Record{Value: []byte("in-flight")}, nil)
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the first produce never reached the broker")
	}
	cl.Produce(ctx, &kgo.Record{Value: []byte("buffered")}, nil) // behind the held request
	if err := abortTxn(ctx, releasing{cl, func() { releaseOnce.Do(func() { close(release) }) }}); err != nil {
		t.Fatalf("abort: %v", err)
	}

	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("committed")}).FirstErr(); err != nil {
		t.Fatalf("produce in the second transaction: %v", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if got := readCommitted(ctx, t, c.ListenAddrs(), "committed"); !slices.Equal(got, []string{"committed"}) {
		t.Fatalf("read committed %q, want only the second transaction's record", got)
	}
}

// readCommitted reads t/0 read-committed up to the record valued last.
func readCommitted(ctx context.Context, t *testing.T, seeds []string, last string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	for !slices.Contains(got, last) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %q before the deadline, never %q", got, last)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}
