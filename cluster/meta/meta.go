// Package meta holds the broker's view of cluster metadata: brokers, topics,
// partitions with their leader, leader epoch and ISR. The wire layer answers
// Metadata requests from it and the broker turns its changes into replica
// roles. An Image is immutable once published: readers never lock.
package meta

import (
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

// Partition is the replicated state of one partition.
//
// Invariant: ISR ⊆ Replicas and ISR non-empty.
// Invariant: Leader == NoLeader or Leader ∈ ISR.
type Partition struct {
	Topic          string
	Index          int32
	Replicas       []int32
	ISR            []int32
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
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
	// ClusterConfigs are dynamic cluster-wide broker configs (AlterConfigs
	// on the default broker resource, name ""), by broker config name;
	// BrokerConfigs the dynamic configs of one broker. Both replicated.
	ClusterConfigs map[string]string
	BrokerConfigs  map[int32]map[string]string
	// Reassigning holds the partitions with a reassignment in progress
	// (KIP-455), by topic and partition.
	Reassigning map[string]map[int32]Reassignment
}

// Reassignment is a partition's replica reassignment in progress: Replicas
// (the union of the old and the target set) minus Removing is the target.
type Reassignment struct {
	Adding, Removing []int32
}

// Layers are the config sources for topic t (nil: no topic) as broker node
// resolves them, with static the broker's own configuration file.
func (im *Image) Layers(t *Topic, node int32, static map[string]string) ConfigLayers {
	l := ConfigLayers{Broker: im.BrokerConfigs[node], ClusterDyn: im.ClusterConfigs, StaticBroker: static}
	if t != nil {
		l.Topic = t.Configs
	}
	return l
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
