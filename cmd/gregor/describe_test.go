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
