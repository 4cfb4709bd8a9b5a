package harness

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/nemesis"
)

// TestPowerLossAllEffect: the power-loss-all columns do what they say. A
// power cut on every broker at once takes every replica's page cache, so
// acks=all records acknowledged with min ISR 2 but never synced are gone
// with fsync never (Kafka's default: durability by replication) and kept,
// every one, with fsync always.
func TestPowerLossAllEffect(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	for _, fsync := range []string{"never", "always"} {
		t.Run("fsync-"+fsync, func(t *testing.T) {
			t.Parallel()
			c := testCluster(3, 2)
			c.Controllers, c.Dedicated, c.LazyFS, c.Fsync = 1, true, true, fsync
			e := effectEnvOn(t, startCluster(t, c.Spec("power-"+fsync, binary)))
			const n = 50
			acked := e.produceAcked(n)
			if acked != n {
				t.Fatalf("%d of %d acks=all records acknowledged before the cut", acked, n)
			}
			a, end := e.inject(nemesis.Step{Kind: nemesis.PowerLoss, Hold: time.Second}, nemesis.TargetAll, 0)
			if len(a.Nodes) != 3 {
				t.Fatalf("power-loss on all resolved to %v, want the 3 brokers", a.Nodes)
			}
			end()
			kept := e.readValues()
			t.Logf("fsync %s: %d of %d acknowledged records kept", fsync, kept, n)
			switch {
			case fsync == "always" && kept != n:
				t.Fatalf("fsync always: %d of %d acknowledged records survived the power cut", kept, n)
			case fsync == "never" && kept == n:
				t.Fatalf("fsync never: all %d acknowledged records survived a power cut of every broker: the fault did not cut power", n)
			}
		})
	}
}

// produceAcked sends n acks=all records to fx/0 one by one and counts the
// acknowledged ones.
func (e *effectEnv) produceAcked(n int) int {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.boot...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(10*time.Second))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	acked := 0
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		if cl.ProduceSync(ctx, &kgo.Record{Topic: "fx", Partition: 0, Value: []byte(strconv.Itoa(i))}).FirstErr() == nil {
			acked++
		}
		cancel()
	}
	return acked
}

// readValues reads fx/0 from its start to its end offset and counts the
// distinct values produceAcked wrote.
func (e *effectEnv) readValues() int {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.boot...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"fx": {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	var end int64
	e.waitFor("the end offset of fx/0", 20*time.Second, func() (err error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		end, err = endOf(ctx, cl, "fx", 0)
		return err
	})
	seen := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for pos := int64(0); pos < end && ctx.Err() == nil; {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)] = true
			pos = r.Offset + 1
		})
	}
	if ctx.Err() != nil {
		e.t.Fatalf("fx/0 not read to its end %d: %v", end, ctx.Err())
	}
	return len(seen)
}

// endOf lists one partition's end offset (OFFSET_NOT_AVAILABLE and other
// partition errors are errors: the caller retries).
func endOf(ctx context.Context, cl *kgo.Client, topic string, p int32) (int64, error) {
	offs, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	o, ok := offs.Lookup(topic, p)
	switch {
	case !ok:
		return 0, fmt.Errorf("%s/%d not listed", topic, p)
	case o.Err != nil:
		return 0, o.Err
	}
	return o.Offset, nil
}
