package group

import (
	"encoding/json"
	"fmt"

	"gregor/cluster/coordinator"
)

// recordKey says what a record is about. The format is gregor's own (JSON),
// not Kafka's binary schema: only this coordinator reads it back.
type recordKey struct {
	Kind      string `json:"k"` // kindOffset or kindGroup
	Group     string `json:"g"`
	Topic     string `json:"t,omitempty"`
	Partition int32  `json:"p,omitempty"`
}

const (
	kindOffset = "offset"
	kindGroup  = "group"
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
