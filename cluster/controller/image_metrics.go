package controller

import (
	"strconv"

	"gregor/cluster/meta"
)

// FencedBrokers counts registered brokers that are fenced.
func (img *Image) FencedBrokers() int {
	n := 0
	for _, b := range img.Brokers {
		if b.Fenced {
			n++
		}
	}
	return n
}

// OfflinePartitions counts partitions without a leader
// (Kafka's OfflinePartitionsCount).
func (img *Image) OfflinePartitions() int {
	n := 0
	for _, t := range img.Topics {
		for _, p := range t.Partitions {
			if p.Leader == meta.NoLeader {
				n++
			}
		}
	}
	return n
}

// UnderReplicated counts partitions whose ISR is smaller than the
// assignment (the controller's view of UnderReplicatedPartitions).
func (img *Image) UnderReplicated() int {
	n := 0
	for _, t := range img.Topics {
		for _, p := range t.Partitions {
			if len(p.ISR) < len(p.Replicas) {
				n++
			}
		}
	}
	return n
}

// UncleanElection is the topic's unclean.leader.election.enable, or def.
func (t TopicInfo) UncleanElection(def bool) bool {
	if v, err := strconv.ParseBool(t.Configs[meta.ConfigUnclean]); err == nil {
		return v
	}
	return def
}

// uncleanFor resolves unclean.leader.election.enable for topic t as the
// controller applies it: the topic's own config, else the dynamic
// cluster-wide default (AlterConfigs at runtime), else the proposing
// controller's static default carried in the record's policy.
func (img *Image) uncleanFor(t TopicInfo, pol electPolicy) bool {
	def := pol.UncleanDefault
	if v, err := strconv.ParseBool(img.ClusterConfigs[meta.ConfigUnclean]); err == nil {
		def = v
	}
	return t.UncleanElection(def)
}

// ISRSizes maps "topic/partition" to the ISR size, for a per-partition gauge.
func (img *Image) ISRSizes() map[string]int {
	out := map[string]int{}
	for _, t := range img.Topics {
		for _, p := range t.Partitions {
			out[t.Name+"/"+strconv.Itoa(int(p.Index))] = len(p.ISR)
		}
	}
	return out
}
