// Package meta holds the broker's view of cluster metadata: brokers, topics,
// partitions with their leader, leader epoch and ISR. The wire layer answers
// Metadata requests from it and the broker turns its changes into replica
// roles. An Image is immutable once published: readers never lock.
package meta

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// NoLeader marks an offline partition (no live replica may lead it).
const NoLeader int32 = -1

// Broker is one registered broker.
type Broker struct {
	ID     int32
	Host   string
	Port   int32
	Fenced bool // missed its session; not a candidate for leadership
	// Epoch is the broker epoch of its current registration (the raft
	// index of the registration record); 0 for a single broker.
	Epoch int64
}

// Partition is the replicated state of one partition. Check verifies the
// invariants below.
type Partition struct {
	Topic string
	Index int32
	// Invariant: non-empty, no duplicates.
	Replicas []int32
	// Invariant: non-empty, no duplicates, ISR ⊆ Replicas.
	ISR []int32
	// Invariant: Leader == NoLeader or Leader ∈ ISR.
	Leader int32
	// Invariant: both epochs >= 0.
	LeaderEpoch    int32
	PartitionEpoch int32
}

// Check returns the first broken invariant of a published partition state,
// or nil. O(replicas²), replicas being a handful.
func (p Partition) Check() error {
	if len(p.Replicas) == 0 {
		return errors.New("no replicas")
	}
	for i, r := range p.Replicas {
		if slices.Contains(p.Replicas[:i], r) {
			return fmt.Errorf("replica %d twice in %v", r, p.Replicas)
		}
	}
	if len(p.ISR) == 0 {
		return errors.New("empty ISR")
	}
	for i, r := range p.ISR {
		if !slices.Contains(p.Replicas, r) {
			return fmt.Errorf("ISR %v not within replicas %v", p.ISR, p.Replicas)
		}
		if slices.Contains(p.ISR[:i], r) {
			return fmt.Errorf("ISR member %d twice in %v", r, p.ISR)
		}
	}
	if p.Leader != NoLeader && !slices.Contains(p.ISR, p.Leader) {
		return fmt.Errorf("leader %d outside ISR %v", p.Leader, p.ISR)
	}
	if p.LeaderEpoch < 0 || p.PartitionEpoch < 0 {
		return fmt.Errorf("negative epoch %d/%d", p.LeaderEpoch, p.PartitionEpoch)
	}
	return nil
}

// Topic is a topic with its partitions (index i at Partitions[i]).
type Topic struct {
	Name       string
	ID         [16]byte
	Configs    map[string]string
	Partitions []Partition
	Internal   bool
}

// Image is one published version of the metadata.
type Image struct {
	Version      uint64
	ControllerID int32
	Brokers      map[int32]Broker
	Topics       map[string]*Topic
}

// Empty returns an image with no brokers or topics.
func Empty() *Image {
	return &Image{ControllerID: -1, Brokers: map[int32]Broker{}, Topics: map[string]*Topic{}}
}

// TopicByID finds a topic by its UUID.
func (im *Image) TopicByID(id [16]byte) *Topic {
	for _, t := range im.Topics {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// SortedTopics returns topic names in order, for stable output.
func (im *Image) SortedTopics() []string {
	return slices.Sorted(maps.Keys(im.Topics))
}

// Contains reports whether id is in ids.
func Contains(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// Config keys understood per topic (Kafka's names) and their broker defaults.
const (
	ConfigMinISR        = "min.insync.replicas"
	ConfigUnclean       = "unclean.leader.election.enable"
	ConfigRetentionMs   = "retention.ms"
	ConfigRetentionSize = "retention.bytes"
	ConfigSegmentBytes  = "segment.bytes"
)
