package runtime

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/history"
	"gregor/internal/dialer"
)

// MetadataView is one broker's answer to a Metadata request, as everything
// that watches a cluster reads it: the readiness probe (KafkaReady), the
// harness's recovery wait and metadata sampler, and the nemeses' topology.
// A partition is a history.PartitionState, the one type for a partition as
// Metadata shows it (and as metadata.jsonl records it).
type MetadataView struct {
	// Controller is the ControllerID the broker named (-1: none).
	Controller int32
	// Brokers are the registered brokers' ids, ascending.
	Brokers []int32
	// Topics are the topics answered, in the answer's order.
	Topics []TopicView
}

// TopicView is one topic of a MetadataView.
type TopicView struct {
	Name string
	// Error is the topic-level error's name (e.g. UNKNOWN_TOPIC_OR_PARTITION
	// from a broker whose metadata image is empty); "" when none.
	Error string
	// Partitions ascend by partition. Replicas and ISR are never nil, so
	// they record as [] rather than null.
	Partitions []history.PartitionState
}

// Topic finds a topic of the view.
func (v *MetadataView) Topic(name string) (TopicView, bool) {
	for _, t := range v.Topics {
		if t.Name == name {
			return t, true
		}
	}
	return TopicView{}, false
}

// AskMetadata sends one Metadata request for topics (none: every topic)
// through r (a client, which picks a broker, or a kgo.Broker, which is the
// one asked), bounded by timeout, and reads the answer.
func AskMetadata(ctx context.Context, r kmsg.Requestor, timeout time.Duration, topics ...string) (*MetadataView, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest() // Topics nil: every topic (v1+; an empty list would be none)
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, r)
	if err != nil {
		return nil, err
	}
	return metadataView(resp), nil
}

func metadataView(resp *kmsg.MetadataResponse) *MetadataView {
	v := &MetadataView{Controller: resp.ControllerID}
	for _, b := range resp.Brokers {
		v.Brokers = append(v.Brokers, b.NodeID)
	}
	slices.Sort(v.Brokers)
	for _, t := range resp.Topics {
		tv := TopicView{}
		if t.Topic != nil {
			tv.Name = *t.Topic
		}
		if e := kerr.ErrorForCode(t.ErrorCode); e != nil {
			tv.Error = e.Error()
		}
		for _, p := range t.Partitions {
			ps := history.PartitionState{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
				Replicas: orEmpty(p.Replicas), ISR: orEmpty(p.ISR), Offline: slices.Clone(p.OfflineReplicas)}
			if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
				ps.Error = e.Error()
			}
			tv.Partitions = append(tv.Partitions, ps)
		}
		slices.SortFunc(tv.Partitions, func(a, b history.PartitionState) int { return cmp.Compare(a.Partition, b.Partition) })
		v.Topics = append(v.Topics, tv)
	}
	return v
}

func orEmpty(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return slices.Clone(s)
}

// KafkaReady returns a readiness probe (ClusterSpec.Ready): every node
// answers Metadata, all `brokers` are registered, and every partition of
// every topic has a leader.
func KafkaReady(brokers int) func(ctx context.Context, c Cluster) error {
	return func(ctx context.Context, c Cluster) error {
		for _, addr := range c.Bootstrap() {
			if err := metadataReady(ctx, addr, brokers); err != nil {
				return fmt.Errorf("%s: %w", addr, err)
			}
		}
		return nil
	}
}

func metadataReady(ctx context.Context, addr string, brokers int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(time.Second), dialer.Opt(time.Second), dialer.Auth())
	if err != nil {
		return err
	}
	defer cl.Close()
	v, err := AskMetadata(ctx, cl, 2*time.Second)
	if err != nil {
		return err
	}
	if len(v.Brokers) < brokers {
		return fmt.Errorf("%d of %d brokers registered", len(v.Brokers), brokers)
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			if p.Leader < 0 {
				return fmt.Errorf("%s/%d has no leader", t.Name, p.Partition)
			}
		}
	}
	return nil
}

// readyPoll is the interval between ClusterSpec.Ready probes.
const readyPoll = 100 * time.Millisecond

// WaitReady polls spec.Ready on c every readyPoll until it passes, bounded
// by spec.ReadyTimeout (DefaultReadyTimeout when zero); every runtime's
// Start ends with it. A boot cancelled meanwhile (ctx) says so rather than
// "not ready"; where is added to a not-ready error (where to look: the
// brokers' logs).
func WaitReady(ctx context.Context, spec ClusterSpec, c Cluster, where string) error {
	timeout := spec.ReadyTimeout
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	outer := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(readyPoll)
	defer t.Stop()
	for {
		last := spec.Ready(ctx, c)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if err := outer.Err(); err != nil {
				return fmt.Errorf("cluster %s: boot cancelled while waiting for readiness: %w", spec.Name, err)
			}
			err := fmt.Errorf("cluster %s not ready within %v: %w", spec.Name, timeout, last)
			if where != "" {
				err = fmt.Errorf("%w (%s)", err, where)
			}
			return err
		case <-t.C:
		}
	}
}
