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

// MinISR is the topic's min.insync.replicas, or def when unset or invalid.
func (t TopicInfo) MinISR(def int) int {
	if v, err := strconv.Atoi(t.Configs[meta.ConfigMinISR]); err == nil && v > 0 {
		return v
	}
	return def
}

// UncleanElection is the topic's unclean.leader.election.enable, or def.
func (t TopicInfo) UncleanElection(def bool) bool {
	if v, err := strconv.ParseBool(t.Configs[meta.ConfigUnclean]); err == nil {
		return v
	}
	return def
}

// UnderMinISR counts partitions whose ISR is smaller than the topic's
// min.insync.replicas (minISRDefault when the topic does not set it).
func (img *Image) UnderMinISR(minISRDefault int) int {
	n := 0
	for _, t := range img.Topics {
		min := t.MinISR(minISRDefault)
		for _, p := range t.Partitions {
			if len(p.ISR) < min {
				n++
			}
		}
	}
	return n
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
