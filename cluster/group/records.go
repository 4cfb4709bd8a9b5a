package group

import (
	"encoding/json"
	"fmt"
	"slices"

	"gregor/cluster/coordinator"
)

// recordKey says what a record is about. The format is gregor's own (JSON),
// not Kafka's binary schema: only this coordinator reads it back.
type recordKey struct {
	Kind      string `json:"k"` // kindOffset, kindGroup or a consumer group kind
	Group     string `json:"g"`
	Member    string `json:"m,omitempty"`
	Topic     string `json:"t,omitempty"`
	Partition int32  `json:"p,omitempty"`
}

const (
	kindOffset = "offset"
	kindGroup  = "group"
	// The record types of a KIP-848 consumer group, named as Kafka's
	// (ConsumerGroupMetadataKey, ConsumerGroupMemberMetadataKey,
	// ConsumerGroupTargetAssignmentMetadataKey,
	// ConsumerGroupTargetAssignmentMemberKey,
	// ConsumerGroupCurrentMemberAssignmentKey).
	kindCGMetadata       = "ConsumerGroupMetadata"
	kindCGMember         = "ConsumerGroupMemberMetadata"
	kindCGTargetMetadata = "ConsumerGroupTargetAssignmentMetadata"
	kindCGTargetMember   = "ConsumerGroupTargetAssignmentMember"
	kindCGCurrent        = "ConsumerGroupCurrentMemberAssignment"
)

// offsetValue is a committed offset.
type offsetValue struct {
	Offset      int64  `json:"offset"`
	LeaderEpoch int32  `json:"epoch"`
	Metadata    string `json:"meta,omitempty"`
	CommitMs    int64  `json:"ts"`
}

// groupValue is a group's membership after a rebalance (Kafka's
// GroupMetadataValue), so a new coordinator can serve its members.
type groupValue struct {
	ProtocolType string        `json:"type"`
	Protocol     string        `json:"protocol"`
	Generation   int32         `json:"generation"`
	Leader       string        `json:"leader"`
	Members      []memberValue `json:"members"`
}

type memberValue struct {
	ID          string  `json:"id"`
	InstanceID  *string `json:"instance,omitempty"`
	ClientID    string  `json:"client"`
	ClientHost  string  `json:"host"`
	SessionMs   int64   `json:"session_ms"`
	RebalanceMs int64   `json:"rebalance_ms"`
	Metadata    []byte  `json:"metadata"` // for the chosen protocol
	Assignment  []byte  `json:"assignment"`
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("group: encoding %T: %v", v, err)) // only plain structs are encoded
	}
	return b
}

func offsetRecord(group, topic string, partition int32, v *offsetValue) coordinator.Record {
	r := coordinator.Record{Key: mustJSON(recordKey{Kind: kindOffset, Group: group, Topic: topic, Partition: partition})}
	if v != nil {
		r.Value = mustJSON(v)
	}
	return r
}

func groupRecord(group string, v *groupValue) coordinator.Record {
	r := coordinator.Record{Key: mustJSON(recordKey{Kind: kindGroup, Group: group})}
	if v != nil {
		r.Value = mustJSON(v)
	}
	return r
}

// cgMetaValue is ConsumerGroupMetadataValue: the group epoch, with the
// subscription metadata it was bumped for (Kafka 4.0 keeps a hash of it
// there; the metadata itself is simpler to compare after a reload).
type cgMetaValue struct {
	Epoch        int32                `json:"epoch"`
	Subscription map[string]topicMeta `json:"subscription"`
}

// cmemberValue is ConsumerGroupMemberMetadataValue.
type cmemberValue struct {
	InstanceID  *string  `json:"instance,omitempty"`
	RackID      *string  `json:"rack,omitempty"`
	ClientID    string   `json:"client"`
	ClientHost  string   `json:"host"`
	Names       []string `json:"topics"`
	Regex       string   `json:"regex,omitempty"`
	Assignor    string   `json:"assignor,omitempty"`
	RebalanceMs int64    `json:"rebalance_ms"`
}

func (v *cmemberValue) equal(o *cmemberValue) bool {
	eq := func(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	return eq(v.InstanceID, o.InstanceID) && eq(v.RackID, o.RackID) && v.ClientID == o.ClientID && v.ClientHost == o.ClientHost &&
		slices.Equal(v.Names, o.Names) && v.Regex == o.Regex && v.Assignor == o.Assignor && v.RebalanceMs == o.RebalanceMs
}

// ccurrentValue is ConsumerGroupCurrentMemberAssignmentValue.
type ccurrentValue struct {
	Epoch      int32        `json:"epoch"`
	PrevEpoch  int32        `json:"previous_epoch"`
	State      memberState  `json:"state"`
	Assigned   assignment   `json:"assigned"`
	Pending    assignment   `json:"pending_revocation"`
	AssignedAt []assignedAt `json:"assigned_at,omitempty"`
}

type assignedAt struct {
	Topic     topicID `json:"t"`
	Partition int32   `json:"p"`
	Epoch     int32   `json:"e"`
}

// targetMetaValue is ConsumerGroupTargetAssignmentMetadataValue.
type targetMetaValue struct {
	Epoch int32 `json:"epoch"`
}

// targetValue is ConsumerGroupTargetAssignmentMemberValue.
type targetValue struct {
	Partitions assignment `json:"partitions"`
}

func cgRecord(kind, group, member string, v any) coordinator.Record {
	r := coordinator.Record{Key: mustJSON(recordKey{Kind: kind, Group: group, Member: member})}
	if v != nil {
		r.Value = mustJSON(v)
	}
	return r
}

func cgMetaRecord(group string, cg *consumerGroup) coordinator.Record {
	return cgRecord(kindCGMetadata, group, "", &cgMetaValue{Epoch: cg.epoch, Subscription: cg.subscription})
}

func memberRecord(group, member string, v *cmemberValue) coordinator.Record {
	if v == nil {
		return cgRecord(kindCGMember, group, member, nil)
	}
	return cgRecord(kindCGMember, group, member, v)
}

func currentRecord(group, member string, v *ccurrentValue) coordinator.Record {
	if v == nil {
		return cgRecord(kindCGCurrent, group, member, nil)
	}
	return cgRecord(kindCGCurrent, group, member, v)
}

func targetRecord(group, member string, a assignment) coordinator.Record {
	if a == nil {
		return cgRecord(kindCGTargetMember, group, member, nil)
	}
	return cgRecord(kindCGTargetMember, group, member, &targetValue{Partitions: a})
}

func targetMetaRecord(group string, epoch int32) coordinator.Record {
	return cgRecord(kindCGTargetMetadata, group, "", &targetMetaValue{Epoch: epoch})
}

// cgTombstone is the end of a consumer group's type (it became classic,
// or was deleted): ConsumerGroupMetadata's tombstone.
func cgTombstone(group string) coordinator.Record { return cgRecord(kindCGMetadata, group, "", nil) }
