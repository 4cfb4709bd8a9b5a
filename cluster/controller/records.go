package controller

import (
	"encoding/json"
	"fmt"

	"gregor/cluster/meta"
)

// record is one entry of the replicated metadata log: an intent whose
// effect the FSM computes deterministically from the image it applies to.
// Exactly one of the pointer fields is set. Validation that depends on the
// current state (epochs, existence) happens at apply time, so two racing
// proposals cannot both pass against a stale view.
type record struct {
	Policy electPolicy `json:"p"`

	Register       *registerRec `json:"reg,omitempty"`
	Fence          *brokerRec   `json:"fence,omitempty"`
	Unfence        *brokerRec   `json:"unfence,omitempty"`
	Shutdown       *brokerRec   `json:"shutdown,omitempty"`
	AlterPartition *alterRec    `json:"alter,omitempty"`
	CreateTopic    *createRec   `json:"create,omitempty"`
	DeleteTopic    *deleteRec   `json:"delete,omitempty"`
	// Admin records (records_admin.go).
	Configs          *configRec      `json:"configs,omitempty"`
	CreatePartitions *createPartsRec `json:"create_parts,omitempty"`
	Elect            *electRec       `json:"elect,omitempty"`
	Reassign         *reassignRec    `json:"reassign,omitempty"`
	// Scram changes SCRAM credentials (scram.go).
	Scram *scramRec `json:"scram,omitempty"`
	// ACLs adds and removes ACL bindings (acls.go).
	ACLs *aclRec `json:"acls,omitempty"`
}

type registerRec struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
}

// brokerRec names a broker incarnation; a record for an older Epoch than
// the image holds is a no-op (the broker restarted meanwhile).
type brokerRec struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
}

type alterRec struct {
	BrokerID    int32       `json:"broker"`
	BrokerEpoch int64       `json:"broker_epoch"`
	Items       []alterItem `json:"items"`
}

type alterItem struct {
	Topic          string   `json:"topic,omitempty"`
	TopicID        [16]byte `json:"topic_id"`
	ByID           bool     `json:"by_id,omitempty"`
	Partition      int32    `json:"partition"`
	LeaderEpoch    int32    `json:"leader_epoch"`
	PartitionEpoch int32    `json:"partition_epoch"`
	NewISR         []int32  `json:"isr"`
	// ISREpochs, when set (AlterPartition v3, KIP-903), holds the broker
	// epoch each new ISR member had when the leader saw it; -1 = unknown.
	ISREpochs []int64 `json:"isr_epochs,omitempty"`
}

type createRec struct {
	Name       string            `json:"name"`
	ID         [16]byte          `json:"id"`
	Configs    map[string]string `json:"configs,omitempty"`
	Assignment [][]int32         `json:"assignment"`
}

type deleteRec struct {
	Name string `json:"name"`
}

func (r record) encode() ([]byte, error) { return json.Marshal(r) }

func decodeRecord(b []byte) (record, error) {
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("controller: bad record: %w", err)
	}
	return r, nil
}

// applyResult is what the FSM returns for a record, delivered to the
// proposer through raft's ApplyFuture.Response.
type applyResult struct {
	// Code is a Kafka error code; 0 on success.
	Code   int16
	Broker BrokerInfo
	// Items answers AlterPartition, one per request item.
	Items []itemResult
	Topic TopicInfo
	// Codes answers admin records item by item (records_admin.go).
	Codes []int16
}

type itemResult struct {
	Code      int16
	Partition meta.Partition
}
