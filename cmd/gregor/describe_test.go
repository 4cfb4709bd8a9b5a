package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/cluster"
)

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
	var out bytes.Buffer
	if err := describeTopics(ctx, adm, nil, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"Topic: orders\tTopicId: ",
		"PartitionCount: 2\tReplicationFactor: 1\tConfigs: min.insync.replicas=1\n",
		"\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n",
		"\tTopic: orders\tPartition: 1\tLeader: 1\tReplicas: 1\tIsr: 1\n",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("describe output lacks %q:\n%s", want, got)
		}
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
