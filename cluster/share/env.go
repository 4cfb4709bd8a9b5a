package share

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/coordinator"
	"gregor/cluster/replica"
)

// Env is what the share roles need from their broker.
type Env interface {
	NodeID() int32
	// TopicByName and TopicByID look a topic up in the current metadata:
	// its id or name and partition count.
	TopicByName(name string) (id [16]byte, partitions int32, ok bool)
	TopicByID(id [16]byte) (name string, partitions int32, ok bool)
	// Partition is this broker's replica, nil when it hosts none.
	Partition(topic string, p int32) *replica.Partition
	// Leader is the partition's leader and epoch in the metadata, with its
	// address (for CurrentLeader and NodeEndpoints hints); -1 when none.
	Leader(topic string, p int32) (LeaderHint, bool)
	// GroupConfig is a group's dynamic configs (metadata's GroupConfigs).
	GroupConfig(group string) map[string]string
	// ClassicGroup reports whether a classic or consumer group holds the
	// id: a group is one type only (GROUP_ID_NOT_FOUND to the other).
	ClassicGroup(group string) bool
	// OffsetsTopic is __consumer_offsets, whose partition leaders
	// coordinate share groups' membership.
	OffsetsTopic() coordinator.Topic
	// The share-state RPCs to the share coordinator of a key
	// (ReadShareGroupState, WriteShareGroupState,
	// InitializeShareGroupState, DeleteShareGroupState), sent over the
	// Kafka protocol to whichever broker leads its __share_group_state
	// partition, creating the topic on first use.
	ReadState(ctx context.Context, k StateKey, leaderEpoch int32) (PartitionState, *kerr.Error)
	WriteState(ctx context.Context, k StateKey, st PartitionState) *kerr.Error
	InitializeState(ctx context.Context, k StateKey, start int64) *kerr.Error
	DeleteState(ctx context.Context, k StateKey) *kerr.Error
}

// LeaderHint is a partition leader as responses name it.
type LeaderHint struct {
	Node, Epoch int32
	Host        string
	Port        int32
}
