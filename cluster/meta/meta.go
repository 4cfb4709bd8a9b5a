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

	"gregor/cluster/acl"
	"gregor/cluster/sasl"
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

// Partition is the replicated state of one partition: the controller's
// image holds it, and brokers act on it (one type for both: see
// controller.Image). Check verifies the invariants below.
type Partition struct {
	Topic string
	Index int32
	// Replicas is the assignment, in preference order; only a
	// reassignment changes it. Invariant: non-empty, no duplicates.
	Replicas []int32
	// Invariant: non-empty, no duplicates, ISR ⊆ Replicas.
	ISR []int32
	// Invariant: Leader == NoLeader or Leader ∈ ISR (an unclean election
	// sets ISR = [Leader]). That a leader is a registered, live broker is
	// an invariant of the controller's image, which knows the brokers.
	Leader int32
	// LeaderEpoch grows by one on every leader change (including to and
	// from NoLeader); PartitionEpoch by one on every change of this state.
	// Invariant: both >= 0.
	LeaderEpoch    int32
	PartitionEpoch int32
	// Adding and Removing describe a reassignment in progress (KIP-455,
	// Kafka's PartitionRegistration addingReplicas/removingReplicas):
	// Replicas is then the union of the old and the target set, Adding the
	// target replicas not in the old set, Removing the old ones not in the
	// target. Invariant: both within Replicas, disjoint, no duplicates; both
	// empty when no reassignment is in progress.
	Adding   []int32 `json:",omitempty"`
	Removing []int32 `json:",omitempty"`
}

// Reassigning reports whether a reassignment is in progress.
func (p Partition) Reassigning() bool { return len(p.Adding) > 0 || len(p.Removing) > 0 }

// InISR reports whether id is in the ISR.
func (p Partition) InISR(id int32) bool { return slices.Contains(p.ISR, id) }

// IsReplica reports whether id is in the assignment.
func (p Partition) IsReplica(id int32) bool { return slices.Contains(p.Replicas, id) }

// Clone copies p with its own Replicas, ISR, Adding and Removing, for a
// change that must not touch a published image.
func (p Partition) Clone() Partition {
	p.Replicas = slices.Clone(p.Replicas)
	p.ISR = slices.Clone(p.ISR)
	p.Adding = slices.Clone(p.Adding)
	p.Removing = slices.Clone(p.Removing)
	return p
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
	for i, r := range p.Adding {
		if !slices.Contains(p.Replicas, r) || slices.Contains(p.Removing, r) || slices.Contains(p.Adding[:i], r) {
			return fmt.Errorf("adding %v: replica %d outside replicas %v, also removing %v, or twice", p.Adding, r, p.Replicas, p.Removing)
		}
	}
	for i, r := range p.Removing {
		if !slices.Contains(p.Replicas, r) || slices.Contains(p.Removing[:i], r) {
			return fmt.Errorf("removing %v: replica %d outside replicas %v or twice", p.Removing, r, p.Replicas)
		}
	}
	if p.LeaderEpoch < 0 || p.PartitionEpoch < 0 {
		return fmt.Errorf("negative epoch %d/%d", p.LeaderEpoch, p.PartitionEpoch)
	}
	return nil
}

// The internal topics, Kafka's Topic.isInternal: the coordinators write
// them; a client's produce to one is refused (INVALID_TOPIC_EXCEPTION), so
// every producer batch in them is a coordinator's.
const (
	OffsetsTopic          = "__consumer_offsets"
	TransactionStateTopic = "__transaction_state"
)

// IsInternal reports whether topic is one of the internal topics.
func IsInternal(topic string) bool {
	return topic == OffsetsTopic || topic == TransactionStateTopic || topic == ShareGroupStateTopic
}

// ShareGroupStateTopic keeps share-partition state (KIP-932's
// ShareCoordinator, cluster/share).
const ShareGroupStateTopic = "__share_group_state"

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
	// Scram holds the SCRAM credentials of the metadata log, by user and
	// mechanism (AlterUserScramCredentials); a single broker has none.
	Scram map[string]map[int8]sasl.Credential
	// ACLs are the ACL bindings of the metadata log (CreateAcls,
	// DeleteAcls), what the authorizer decides by; a single broker has
	// none.
	ACLs []acl.Binding
	// GroupConfigs are the dynamic configs of groups (group_configs.go),
	// by group id. Replicated.
	GroupConfigs map[string]map[string]string
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
	ConfigTimestampType = "message.timestamp.type"
	ConfigRetentionSize = "retention.bytes"
	ConfigSegmentBytes  = "segment.bytes"
)
