package nemesis

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/share"
	"gregor/internal/dialer"
	"gregor/internal/sleep"
	"gregor/runtime"
)

// KafkaTopology answers Topology from the cluster's Metadata, through one
// long-lived client seeded with every broker (a dead seed is skipped).
type KafkaTopology struct {
	cl      *kgo.Client
	topic   string
	parts   int
	brokers []int32
	// ControllerOnly are the controller-only voters (nodes after the
	// brokers); partitions put them with the majority side.
	ControllerOnly []int32
	// TransactionalIDs are the txn workload's producers' ids
	// (KillTxnCoordinator draws one).
	TransactionalIDs []string
	// Group and TxnID are the consumer group and transactional id whose
	// coordinator TargetCoordinator hits (the group first); "" for none.
	Group, TxnID string
	// ShareGroup is the share group whose share coordinators
	// TargetShareCoordinator hits; "" for none.
	ShareGroup string
}

// TxnIDs implements txnTopology.
func (k *KafkaTopology) TxnIDs() []string { return k.TransactionalIDs }

// TxnCoordinator implements txnTopology: FindCoordinator for the id (key
// type 1, KIP-98).
func (k *KafkaTopology) TxnCoordinator(ctx context.Context, id string) (int32, error) {
	return k.findCoordinator(ctx, id, 1)
}

// Coordinator implements coordinatorTopology: FindCoordinator for Group
// (key type 0), else for TxnID (key type 1, KIP-98).
func (k *KafkaTopology) Coordinator(ctx context.Context) (int32, error) {
	switch {
	case k.Group != "":
		return k.findCoordinator(ctx, k.Group, 0)
	case k.TxnID != "":
		return k.findCoordinator(ctx, k.TxnID, 1)
	}
	return -1, fmt.Errorf("the run has no consumer group and no transactional id")
}

// ShareCoordinator implements shareTopology: FindCoordinator v6 for key
// type SHARE (2) and ShareGroup's share partition of the topic (KIP-932:
// "groupId:topicId:partition", cluster/share.StateKey's CoordinatorKey).
func (k *KafkaTopology) ShareCoordinator(ctx context.Context, partition int32) (int32, error) {
	if k.ShareGroup == "" {
		return -1, fmt.Errorf("the run has no share group")
	}
	id, err := k.topicID(ctx)
	if err != nil {
		return -1, err
	}
	return k.findCoordinator(ctx, share.StateKey{Group: k.ShareGroup, TopicID: id, Partition: partition}.CoordinatorKey(), 2)
}

// topicID is the topic's id as Metadata (v10+) reports it.
func (k *KafkaTopology) topicID(ctx context.Context) ([16]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(k.topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, k.cl)
	if err != nil {
		return [16]byte{}, fmt.Errorf("metadata of %s: %w", k.topic, err)
	}
	for _, t := range resp.Topics {
		if t.Topic != nil && *t.Topic == k.topic && t.TopicID != ([16]byte{}) {
			return t.TopicID, nil
		}
	}
	return [16]byte{}, fmt.Errorf("metadata names no id for topic %s", k.topic)
}

// coordinatorRetry spaces FindCoordinator attempts; metadataTimeout bounds
// them all.
const coordinatorRetry = 100 * time.Millisecond

// findCoordinator asks FindCoordinator until it names a broker, an error
// is not retriable, or metadataTimeout passes. Right after a boot or a
// failover the answer is COORDINATOR_NOT_AVAILABLE or
// COORDINATOR_LOAD_IN_PROGRESS while the coordinator's partition loads;
// Kafka's clients retry these (AbstractCoordinator.lookupCoordinator), and
// a fault aimed at the coordinator must not settle for a random broker
// because it asked once too early.
func (k *KafkaTopology) findCoordinator(ctx context.Context, key string, typ int8) (int32, error) {
	ctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	defer cancel()
	for {
		id, err := k.askCoordinator(ctx, key, typ)
		if err == nil || !kerr.IsRetriable(err) || !sleep.For(ctx, coordinatorRetry) {
			return id, err
		}
	}
}

// askCoordinator is one FindCoordinator request.
func (k *KafkaTopology) askCoordinator(ctx context.Context, key string, typ int8) (int32, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey, req.CoordinatorType = key, typ
	req.CoordinatorKeys = []string{key} // v4+ (KIP-699)
	resp, err := req.RequestWith(ctx, k.cl)
	if err != nil {
		return -1, fmt.Errorf("find coordinator of %q: %w", key, err)
	}
	id, code := resp.NodeID, resp.ErrorCode
	if len(resp.Coordinators) > 0 {
		id, code = resp.Coordinators[0].NodeID, resp.Coordinators[0].ErrorCode
	}
	if err := kerr.ErrorForCode(code); err != nil {
		return -1, fmt.Errorf("find coordinator of %q: %w", key, err)
	}
	return id, nil
}

// NewKafkaTopology dials nothing yet; Close releases the client.
func NewKafkaTopology(bootstrap []string, topic string, partitions int, brokers []int32) (*KafkaTopology, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...), dialer.Opt(time.Second), dialer.Auth(),
		kgo.RequestTimeoutOverhead(2*time.Second), kgo.RetryTimeout(3*time.Second))
	if err != nil {
		return nil, err
	}
	return &KafkaTopology{cl: cl, topic: topic, parts: partitions, brokers: sorted(brokers)}, nil
}

// Close releases the client.
func (k *KafkaTopology) Close() { k.cl.Close() }

// Brokers implements Topology.
func (k *KafkaTopology) Brokers() []int32 { return k.brokers }

// Partitions implements Topology.
func (k *KafkaTopology) Partitions() int { return k.parts }

// Voters implements voterTopology.
func (k *KafkaTopology) Voters() []int32 { return k.ControllerOnly }

// PartitionState implements replicaTopology.
func (k *KafkaTopology) PartitionState(ctx context.Context, partition int32) (PartitionState, error) {
	v, err := runtime.AskMetadata(ctx, k.cl, metadataTimeout, k.topic)
	if err != nil {
		return PartitionState{}, err
	}
	t, _ := v.Topic(k.topic)
	for _, p := range t.Partitions {
		if p.Partition == partition {
			if p.Error != "" && p.Leader < 0 && len(p.Replicas) == 0 {
				return PartitionState{}, fmt.Errorf("%s/%d: %s", k.topic, partition, p.Error)
			}
			return p, nil
		}
	}
	return PartitionState{}, fmt.Errorf("%s/%d not in metadata", k.topic, partition)
}

// metadataTimeout bounds one Metadata request of the topology.
const metadataTimeout = 5 * time.Second

// Leader implements Topology.
func (k *KafkaTopology) Leader(ctx context.Context, partition int32) (int32, error) {
	st, err := k.PartitionState(ctx, partition)
	if err != nil {
		return -1, err
	}
	if st.Leader < 0 {
		return -1, fmt.Errorf("%s/%d has no leader", k.topic, partition)
	}
	return st.Leader, nil
}

// Controller implements Topology: Metadata's ControllerID (see TargetController).
func (k *KafkaTopology) Controller(ctx context.Context) (int32, error) {
	v, err := runtime.AskMetadata(ctx, k.cl, metadataTimeout, k.topic)
	if err != nil {
		return -1, err
	}
	if v.Controller < 0 {
		return -1, fmt.Errorf("metadata names no controller")
	}
	return v.Controller, nil
}

// StaticTopology answers from fixed values: for planning without a cluster
// (schedules, tests). Leaders[p] is partition p's leader.
type StaticTopology struct {
	IDs       []int32
	Leaders   []int32
	ControlID int32
	// VoterIDs are controller-only voters; Replicas[p] and ISRs[p] are
	// partition p's (default: every broker).
	VoterIDs       []int32
	Replicas, ISRs [][]int32
}

// Voters implements voterTopology.
func (s StaticTopology) Voters() []int32 { return s.VoterIDs }

// PartitionState implements replicaTopology.
func (s StaticTopology) PartitionState(ctx context.Context, p int32) (PartitionState, error) {
	l, err := s.Leader(ctx, p)
	if err != nil {
		return PartitionState{}, err
	}
	st := PartitionState{Partition: p, Leader: l, Replicas: s.IDs, ISR: s.IDs}
	if int(p) < len(s.Replicas) {
		st.Replicas = s.Replicas[p]
	}
	if int(p) < len(s.ISRs) {
		st.ISR = s.ISRs[p]
	}
	return st, nil
}

// Brokers implements Topology.
func (s StaticTopology) Brokers() []int32 { return s.IDs }

// Partitions implements Topology.
func (s StaticTopology) Partitions() int { return max(1, len(s.Leaders)) }

// Leader implements Topology.
func (s StaticTopology) Leader(_ context.Context, p int32) (int32, error) {
	if int(p) >= len(s.Leaders) {
		return -1, fmt.Errorf("no leader for partition %d", p)
	}
	return s.Leaders[p], nil
}

// Controller implements Topology.
func (s StaticTopology) Controller(context.Context) (int32, error) { return s.ControlID, nil }
