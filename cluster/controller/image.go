package controller

import (
	"maps"
	"slices"

	"gregor/cluster/acl"
	"gregor/cluster/meta"
	"gregor/cluster/sasl"
)

// BrokerInfo is one registered broker as the quorum knows it.
type BrokerInfo struct {
	ID   int32
	Host string
	Port int32
	// Epoch is the raft index of the broker's latest registration: it
	// grows with every restart, so a request carrying an older epoch comes
	// from a dead incarnation.
	Epoch int64
	// Fenced: not eligible as leader or new ISR member. A broker is fenced
	// from registration until its first heartbeat, and again when its
	// session expires or it asks to be.
	Fenced bool
	// ShuttingDown: in controlled shutdown (cleared by re-registration).
	// Like Fenced, it makes the broker ineligible for leadership and ISR.
	ShuttingDown bool
}

// Live reports whether b may lead or join an ISR.
func (b BrokerInfo) Live() bool { return !b.Fenced && !b.ShuttingDown }

// TopicInfo is one topic: name, id, explicit configs and partitions.
type TopicInfo struct {
	Name string
	ID   [16]byte
	// Configs holds only configs set at creation; defaults come from the
	// brokers' configuration.
	Configs map[string]string
	// Invariant (checkInvariants): Partitions[i].Index == i.
	Partitions []meta.Partition
}

func (t TopicInfo) clone() TopicInfo {
	c := t
	c.Configs = make(map[string]string, len(t.Configs))
	for k, v := range t.Configs {
		c.Configs[k] = v
	}
	c.Partitions = make([]meta.Partition, len(t.Partitions))
	for i, p := range t.Partitions {
		c.Partitions[i] = p.Clone()
	}
	return c
}

// Image is the metadata image: the FSM state after applying the raft log up
// to Version. An Image is immutable once published; readers must not modify
// its maps or slices. Each apply publishes a fresh Image.
type Image struct {
	// Version is the raft index of the last applied entry.
	Version uint64
	Brokers map[int32]BrokerInfo
	Topics  map[string]TopicInfo
	// TopicsCreated counts topic creations ever; it rotates the replica
	// assignment's start broker.
	TopicsCreated int64
	// ClusterConfigs are the dynamic cluster-wide broker configs
	// (AlterConfigs on the default broker resource), by broker config name;
	// BrokerConfigs the dynamic configs of single brokers.
	ClusterConfigs map[string]string           `json:",omitempty"`
	BrokerConfigs  map[int32]map[string]string `json:",omitempty"`
	// Scram holds the SCRAM credentials by user and mechanism (Kafka's
	// UserScramCredentialRecords); replaced whole by each change.
	Scram map[string]map[int8]sasl.Credential `json:",omitempty"`
	// ACLs are the ACL bindings (Kafka's AccessControlEntryRecords);
	// replaced whole by each change.
	ACLs []acl.Binding `json:",omitempty"`
	// GroupConfigs are the dynamic configs of groups, by group id
	// (IncrementalAlterConfigs on a GROUP resource, KIP-848/KIP-932).
	GroupConfigs map[string]map[string]string `json:",omitempty"`
}

func emptyImage() *Image {
	return &Image{Brokers: map[int32]BrokerInfo{}, Topics: map[string]TopicInfo{}}
}

// clone deep-copies the image so an apply can mutate the copy. O(size), and
// applies are rare (registrations, fencing, ISR changes, topic changes).
func (img *Image) clone() *Image {
	c := &Image{Version: img.Version, TopicsCreated: img.TopicsCreated,
		Brokers: make(map[int32]BrokerInfo, len(img.Brokers)),
		Topics:  make(map[string]TopicInfo, len(img.Topics))}
	for id, b := range img.Brokers {
		c.Brokers[id] = b
	}
	for n, t := range img.Topics {
		c.Topics[n] = t.clone()
	}
	c.ClusterConfigs = maps.Clone(img.ClusterConfigs)
	c.Scram = img.Scram // applyScram replaces it, never modifies it
	c.ACLs = img.ACLs   // applyACLs replaces it, never modifies it
	if img.GroupConfigs != nil {
		c.GroupConfigs = make(map[string]map[string]string, len(img.GroupConfigs))
		for id, m := range img.GroupConfigs {
			c.GroupConfigs[id] = maps.Clone(m)
		}
	}
	if img.BrokerConfigs != nil {
		c.BrokerConfigs = make(map[int32]map[string]string, len(img.BrokerConfigs))
		for id, m := range img.BrokerConfigs {
			c.BrokerConfigs[id] = maps.Clone(m)
		}
	}
	return c
}

// Partition looks up one partition.
func (img *Image) Partition(topic string, partition int32) (meta.Partition, bool) {
	t, ok := img.Topics[topic]
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return meta.Partition{}, false
	}
	return t.Partitions[partition], true
}

// TopicByID finds a topic by its id.
func (img *Image) TopicByID(id [16]byte) (TopicInfo, bool) {
	for _, t := range img.Topics {
		if t.ID == id {
			return t, true
		}
	}
	return TopicInfo{}, false
}

// TopicNames returns the topic names, sorted.
func (img *Image) TopicNames() []string {
	return slices.Sorted(maps.Keys(img.Topics))
}

// BrokerIDs returns the registered broker ids, sorted.
func (img *Image) BrokerIDs() []int32 {
	return slices.Sorted(maps.Keys(img.Brokers))
}

// live reports whether broker id is registered and live.
func (img *Image) live(id int32) bool {
	b, ok := img.Brokers[id]
	return ok && b.Live()
}

// LeaderOf returns the partitions broker id leads.
func (img *Image) LeaderOf(id int32) []meta.Partition {
	var out []meta.Partition
	for _, n := range img.TopicNames() {
		for _, p := range img.Topics[n].Partitions {
			if p.Leader == id {
				out = append(out, p)
			}
		}
	}
	return out
}
