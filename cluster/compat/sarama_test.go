package compat

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// saramaSteps: IBM/sarama's cluster admin (create topic with configs,
// describe configs, create partitions, describe cluster), an idempotent
// sync producer with WaitForAll, and a consumer group that consumes
// everything and commits.
func saramaSteps(t *testing.T, tc *testCluster) {
	const topic, group, n = "sarama-topic", "sarama-group", 150
	addrs := strings.Split(tc.bootstrap, ",")
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.ClientID = "gregor-compat"

	admin, err := sarama.NewClusterAdmin(addrs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	two := "2"
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 3,
		ConfigEntries: map[string]*string{"min.insync.replicas": &two}}, false); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	bad := "1"
	err = admin.CreateTopic(topic+"-bad", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"no.such.config": &bad}}, false)
	if err == nil || !strings.Contains(err.Error(), "Unknown topic config name") {
		t.Fatalf("an unknown topic config answered %v", err)
	}
	tc.waitFor("sarama describes min.insync.replicas=2", 15*time.Second, func() error {
		entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.Name == "min.insync.replicas" {
				if e.Value != "2" || e.Source != sarama.SourceTopic {
					return fmt.Errorf("described as %s (%v)", e.Value, e.Source)
				}
				return nil
			}
		}
		return fmt.Errorf("not described")
	})
	if err := admin.CreatePartitions(topic, 3, nil, false); err != nil {
		t.Fatalf("CreatePartitions: %v", err)
	}
	brokers, controller, err := admin.DescribeCluster()
	if err != nil || len(brokers) != 3 || controller < 1 || controller > 3 {
		t.Fatalf("DescribeCluster: %d brokers, controller %d, %v", len(brokers), controller, err)
	}

	pcfg := sarama.NewConfig()
	pcfg.Version = cfg.Version
	pcfg.Producer.RequiredAcks = sarama.WaitForAll
	pcfg.Producer.Idempotent = true
	pcfg.Producer.Return.Successes = true
	pcfg.Producer.Retry.Max = 5
	pcfg.Net.MaxOpenRequests = 1
	// Message.Partition is honoured only by the manual partitioner: the
	// probe below must reach each partition, and so must the records.
	pcfg.Producer.Partitioner = sarama.NewManualPartitioner
	var prod sarama.SyncProducer
	sent := 0 // every record acknowledged, the probes' included
	tc.waitFor("sarama sees 3 partitions", 15*time.Second, func() error {
		if prod != nil {
			prod.Close()
		}
		if prod, err = sarama.NewSyncProducer(addrs, pcfg); err != nil {
			return err
		}
		// A fresh producer reads fresh metadata; every broker must know
		// the third partition before a record is sent to it.
		for p := int32(0); p < 3; p++ {
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: p, Value: sarama.StringEncoder("probe")}); err != nil {
				return err
			}
			sent++
		}
		return nil
	})
	defer prod.Close()
	for ; sent < n; sent++ {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: int32(sent % 3), Value: sarama.StringEncoder(fmt.Sprintf("v%d", sent))}); err != nil {
			t.Fatalf("SendMessage %d: %v", sent, err)
		}
	}
	ends, total := tc.endOffsets(topic)
	if total != int64(sent) {
		t.Fatalf("%d records after sarama produced %d", total, sent)
	}

	ccfg := sarama.NewConfig()
	ccfg.Version = cfg.Version
	ccfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cg, err := sarama.NewConsumerGroup(addrs, group, ccfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &countingHandler{want: n, done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	select {
	case <-h.done:
	case <-ctx.Done():
		t.Fatalf("sarama's group consumed %d of %d", h.count(), n)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Consume: %v", err)
	}
	if err := cg.Close(); err != nil { // commits the marked offsets
		t.Fatalf("close: %v", err)
	}
	tc.waitFor("sarama's group committed the end offsets", 15*time.Second, func() error {
		if c := tc.committed(group, topic); fmt.Sprint(c) != fmt.Sprint(ends) {
			return fmt.Errorf("committed %v, end %v", c, ends)
		}
		return nil
	})
}

// countingHandler marks every message and closes done once want distinct
// offsets were seen.
type countingHandler struct {
	want int
	done chan struct{}
	mu   sync.Mutex
	seen map[string]bool
	once sync.Once
}

func (h *countingHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}

func (*countingHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (*countingHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *countingHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		s.MarkMessage(m, "")
		h.mu.Lock()
		if h.seen == nil {
			h.seen = map[string]bool{}
		}
		h.seen[fmt.Sprintf("%d/%d", m.Partition, m.Offset)] = true
		if len(h.seen) >= h.want {
			h.once.Do(func() { close(h.done) })
		}
		h.mu.Unlock()
	}
	return nil
}
