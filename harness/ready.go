// Package harness runs a test's lifecycle: boot the embedded cluster on a
// runtime, drive workloads while nemeses inject faults, heal, read
// everything back, check the history and store the results.
package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/runtime"
)

// KafkaReady returns a readiness probe: every node answers Metadata, all
// `brokers` are registered, and every partition of every topic has a leader.
func KafkaReady(brokers int) func(ctx context.Context, c runtime.Cluster) error {
	return func(ctx context.Context, c runtime.Cluster) error {
		for _, addr := range c.Bootstrap() {
			if err := metadataReady(ctx, addr, brokers); err != nil {
				return fmt.Errorf("%s: %w", addr, err)
			}
		}
		return nil
	}
}

func metadataReady(ctx context.Context, addr string, brokers int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(time.Second), kgo.DialTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Brokers) < brokers {
		return fmt.Errorf("%d of %d brokers registered", len(resp.Brokers), brokers)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.Leader < 0 {
				return fmt.Errorf("%s/%d has no leader", *t.Topic, p.Partition)
			}
		}
	}
	return nil
}
