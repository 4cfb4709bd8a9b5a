package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/cluster"
)

// TestDescribeLikeKafkaTopics compares gregor describe with the exact text
// Kafka 4.0's kafka-topics.sh --describe prints for the same topic: the
// header line with TopicId in Kafka's Uuid form, the non-default configs,
// then one tab-separated line per partition ending in empty Elr and
// LastKnownElr.
func TestDescribeLikeKafkaTopics(t *testing.T) {
	b, err := cluster.Start(cluster.Config{NodeID: 1, Listen: "127.0.0.1:0", DataDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	one := "1"
	if _, err := adm.CreateTopics(ctx, 2, 1, map[string]*string{"min.insync.replicas": &one}, "orders"); err != nil {
		t.Fatal(err)
	}
	md, err := adm.Metadata(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	id := kafkaUUID(md.Topics["orders"].ID)
	if !regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`).MatchString(id) {
		t.Fatalf("TopicId %q is not Kafka's URL-safe unpadded base64", id)
	}
	var out bytes.Buffer
	if err := describeTopics(ctx, adm, nil, &out); err != nil {
		t.Fatal(err)
	}
	// The broker runs with unlimited retention and 64 MiB segments (its
	// static configs differ from Kafka's defaults, so they are listed, as
	// a Kafka broker's server.properties settings are).
	want := fmt.Sprintf("Topic: orders\tTopicId: %s\tPartitionCount: 2\tReplicationFactor: 1\tConfigs: min.insync.replicas=1,retention.ms=-1,segment.bytes=67108864\n"+
		"\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr: \n"+
		"\tTopic: orders\tPartition: 1\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr: \n", id)
	if got := out.String(); got != want {
		t.Fatalf("describe printed\n%q\nwant\n%q", got, want)
	}
}

// TestJavaHashMapOrder checks the Configs column order against what
// kafka-topics.sh prints for __consumer_offsets ("compression.type=producer,
// cleanup.policy=compact,segment.bytes=104857600": neither alphabetical nor
// the order of the response, but java.util.HashMap's over all topic
// configs).
func TestJavaHashMapOrder(t *testing.T) {
	keys := []string{"cleanup.policy", "compression.type", "delete.retention.ms", "file.delete.delay.ms",
		"flush.messages", "flush.ms", "index.interval.bytes", "max.message.bytes", "min.insync.replicas",
		"preallocate", "retention.bytes", "retention.ms", "segment.bytes", "segment.index.bytes",
		"segment.jitter.ms", "segment.ms", "unclean.leader.election.enable", "message.timestamp.type",
		"min.cleanable.dirty.ratio", "min.compaction.lag.ms", "max.compaction.lag.ms",
		"message.downconversion.enable", "message.format.version", "message.timestamp.difference.max.ms",
		"follower.replication.throttled.replicas", "leader.replication.throttled.replicas"}
	var got []string
	for _, i := range javaHashMapOrder(keys) {
		if k := keys[i]; k == "cleanup.policy" || k == "compression.type" || k == "segment.bytes" {
			got = append(got, k)
		}
	}
	if want := []string{"compression.type", "cleanup.policy", "segment.bytes"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// describe --transactions lists an open transaction with its producer,
// epoch, state and partitions, and no longer lists it once committed.
func TestDescribeTransactions(t *testing.T) {
	b, err := cluster.Start(cluster.Config{NodeID: 1, Listen: "127.0.0.1:0", DataDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	if _, err := adm.CreateTopics(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.TransactionalID("checkout"), kgo.TransactionTimeout(30*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 1, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := describeTransactions(ctx, adm, time.Now(), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "CoordinatorId TransactionalId ProducerId ProducerEpoch TransactionState TransactionTimeoutMs CurrentTransactionStartTimeMs TransactionDurationMs TopicPartitions" {
		t.Fatalf("output:\n%s", out.String())
	}
	f := strings.Fields(lines[1])
	if len(f) != 9 || f[0] != "1" || f[1] != "checkout" || f[3] != "0" || f[4] != "Ongoing" || f[5] != "30000" || f[8] != "orders-1" {
		t.Fatalf("open transaction line %q", lines[1])
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	// The commit is answered once PrepareCommit is durable; the listing
	// empties when the markers are written (CompleteCommit).
	for {
		out.Reset()
		if err := describeTransactions(ctx, adm, time.Now(), &out); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) == 1 {
			return
		}
		if f := strings.Fields(lines[1]); len(lines) != 2 || f[4] != "PrepareCommit" || ctx.Err() != nil {
			t.Fatalf("after the commit:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
