package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// quietLogger discards broker logs unless GREGOR_TEST_LOG is set (then
// they go to stderr at debug level, for diagnosing a failing test).
func quietLogger() *slog.Logger {
	if os.Getenv("GREGOR_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func startBroker(t testing.TB, dir string, mod func(*Config)) *Broker {
	t.Helper()
	cfg := Config{NodeID: 1, Listen: "127.0.0.1:0", DataDir: dir, Logger: quietLogger()}
	if mod != nil {
		mod(&cfg)
	}
	b, err := Start(cfg)
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func newClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t testing.TB, cl *kgo.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, partitions, 1, configs, topic)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp[topic]; r.Err != nil {
		t.Fatalf("create %s: %v", topic, r.Err)
	}
}

// produceAll sends n records with values "p:i" round-robin over partitions
// and fails the test on any error.
func produceAll(t testing.TB, cl *kgo.Client, topic string, partitions int32, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := 0; i < n; i++ {
		p := int32(i) % partitions
		r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(strconv.Itoa(i))}
		wg.Add(1)
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("produce: %v", firstErr)
	}
}

// consumeAll reads every partition from offset 0 until want records arrived
// and checks each partition reads back in order at contiguous offsets.
func consumeAll(t testing.TB, addr, topic string, partitions int32, want int) map[int32][]*kgo.Record {
	t.Helper()
	offsets := map[string]map[int32]kgo.Offset{topic: {}}
	for p := int32(0); p < partitions; p++ {
		offsets[topic][p] = kgo.NewOffset().At(0)
	}
	cl := newClient(t, addr, kgo.ConsumePartitions(offsets), kgo.FetchMaxWait(200*time.Millisecond))
	got := map[int32][]*kgo.Record{}
	total := 0
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for total < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline", total, want)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], r)
			total++
		})
	}
	for p, rs := range got {
		prev := -1
		for i, r := range rs {
			if r.Offset != int64(i) {
				t.Fatalf("partition %d: record %d at offset %d", p, i, r.Offset)
			}
			v, err := strconv.Atoi(string(r.Value))
			if err != nil || v <= prev || int32(v)%partitions != p {
				t.Fatalf("partition %d offset %d: value %q after %d", p, r.Offset, r.Value, prev)
			}
			prev = v
		}
	}
	if total != want {
		t.Fatalf("consumed %d records, want %d", total, want)
	}
	return got
}

func TestProduceConsume100k(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"acks=1", []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}},
		{"acks=all+idempotence", []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}},
		{"acks=all+zstd", []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.ZstdCompression())}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startBroker(t, t.TempDir(), nil)
			cl := newClient(t, b.Addr(), tc.opts...)
			createTopic(t, cl, "t", 4, nil)
			produceAll(t, cl, "t", 4, n)
			consumeAll(t, b.Addr(), "t", 4, n)
		})
	}
}

func TestCompressionCodecs(t *testing.T) {
	b := startBroker(t, t.TempDir(), nil)
	for i, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		topic := fmt.Sprintf("c%d", i)
		cl := newClient(t, b.Addr(), kgo.ProducerBatchCompression(codec))
		createTopic(t, cl, topic, 1, nil)
		produceAll(t, cl, topic, 1, 500)
		consumeAll(t, b.Addr(), topic, 1, 500)
	}
}

func TestListOffsetsAndMetadata(t *testing.T) {
	b := startBroker(t, t.TempDir(), nil)
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "lo", 2, nil)
	produceAll(t, cl, "lo", 2, 10)
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	end, err := adm.ListEndOffsets(ctx, "lo")
	if err != nil {
		t.Fatal(err)
	}
	start, err := adm.ListStartOffsets(ctx, "lo")
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 2; p++ {
		if o, _ := end.Lookup("lo", p); o.Offset != 5 {
			t.Errorf("end offset p%d = %d, want 5", p, o.Offset)
		}
		if o, _ := start.Lookup("lo", p); o.Offset != 0 {
			t.Errorf("start offset p%d = %d, want 0", p, o.Offset)
		}
	}
	// By timestamp: far future finds nothing, the past finds offset 0.
	past, err := adm.ListOffsetsAfterMilli(ctx, 0, "lo")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := past.Lookup("lo", 0); o.Offset != 0 {
		t.Errorf("offset after epoch 0 = %d, want 0", o.Offset)
	}
	md, err := adm.Metadata(ctx, "lo")
	if err != nil {
		t.Fatal(err)
	}
	td := md.Topics["lo"]
	if len(td.Partitions) != 2 || td.Partitions[0].Leader != 1 || len(td.Partitions[0].ISR) != 1 {
		t.Fatalf("metadata: %+v", td)
	}
	// Unknown topic without auto-creation stays unknown.
	md, err = adm.Metadata(ctx, "nope")
	if err != nil {
		t.Fatal(err)
	}
	if md.Topics["nope"].Err != kerr.UnknownTopicOrPartition {
		t.Fatalf("unknown topic: %v", md.Topics["nope"].Err)
	}
}

func TestAutoCreateOnlyWhenAllowed(t *testing.T) {
	b := startBroker(t, t.TempDir(), func(c *Config) { c.AutoCreateTopics = true; c.DefaultPartitions = 3 })
	cl := newClient(t, b.Addr(), kgo.AllowAutoTopicCreation())
	produceAll(t, cl, "auto", 1, 3)
	if got := len(b.Image().Topics["auto"].Partitions); got != 3 {
		t.Fatalf("auto-created topic has %d partitions, want 3", got)
	}
}

func TestCreateTopicValidation(t *testing.T) {
	b := startBroker(t, t.TempDir(), nil)
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	two := "2"
	resp, err := adm.CreateTopics(ctx, 1, 1, map[string]*string{"min.insync.replicas": &two}, "bad-minisr")
	if err != nil {
		t.Fatal(err)
	}
	if r := resp["bad-minisr"]; r.Err != kerr.InvalidConfig || r.ErrMessage == "" {
		t.Fatalf("min ISR > RF: err=%v msg=%q", r.Err, r.ErrMessage)
	}
	resp, _ = adm.CreateTopics(ctx, 1, 3, nil, "bad-rf")
	if r := resp["bad-rf"]; r.Err != kerr.InvalidReplicationFactor {
		t.Fatalf("RF > brokers: %v", r.Err)
	}
	createTopic(t, cl, "dup", 1, nil)
	resp, _ = adm.CreateTopics(ctx, 1, 1, nil, "dup")
	if r := resp["dup"]; r.Err != kerr.TopicAlreadyExists {
		t.Fatalf("duplicate: %v", r.Err)
	}
	dresp, err := adm.DeleteTopics(ctx, "dup")
	if err != nil || dresp["dup"].Err != nil {
		t.Fatalf("delete: %v %v", err, dresp["dup"].Err)
	}
	if b.Partition("dup", 0) != nil {
		t.Fatal("deleted topic still has a replica")
	}
}

// TestUnknownAPIKey: a key we do not implement is answered with
// UNSUPPORTED_VERSION, and the broker keeps serving others.
func TestUnknownAPIKey(t *testing.T) {
	b := startBroker(t, t.TempDir(), nil)
	cl := newClient(t, b.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// DescribeDelegationToken (41) is not implemented; franz-go refuses to
	// send keys the broker does not advertise, so this checks the
	// advertisement.
	req := kmsg.NewPtrDescribeDelegationTokenRequest()
	_, err := req.RequestWith(ctx, cl)
	if err == nil {
		t.Fatal("an unadvertised API succeeded")
	}
	if _, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl); err != nil {
		t.Fatalf("broker stopped serving: %v", err)
	}
}
