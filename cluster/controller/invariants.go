package controller

import (
	"fmt"
	"slices"
)

// checkInvariants verifies the image invariants documented on
// PartitionState. It runs after every apply (O(image size)).
func checkInvariants(img *Image) error {
	for name, t := range img.Topics {
		if t.Name != name {
			return fmt.Errorf("topic keyed %q named %q", name, t.Name)
		}
		for i, p := range t.Partitions {
			if err := checkPartition(img, p); err != nil {
				return fmt.Errorf("%s/%d: %w", name, i, err)
			}
			if p.Partition != int32(i) || p.Topic != name {
				return fmt.Errorf("%s/%d: stored as %s/%d", name, i, p.Topic, p.Partition)
			}
		}
	}
	return nil
}

func checkPartition(img *Image, p PartitionState) error {
	if len(p.Replicas) == 0 {
		return fmt.Errorf("no replicas")
	}
	for i, r := range p.Replicas {
		if slices.Contains(p.Replicas[:i], r) {
			return fmt.Errorf("replica %d twice in %v", r, p.Replicas)
		}
	}
	if len(p.ISR) == 0 {
		return fmt.Errorf("empty ISR")
	}
	for i, r := range p.ISR {
		if !p.IsReplica(r) {
			return fmt.Errorf("ISR %v not within replicas %v", p.ISR, p.Replicas)
		}
		if slices.Contains(p.ISR[:i], r) {
			return fmt.Errorf("ISR member %d twice in %v", r, p.ISR)
		}
	}
	if p.Leader != NoLeader {
		if !p.InISR(p.Leader) {
			return fmt.Errorf("leader %d outside ISR %v", p.Leader, p.ISR)
		}
		if !img.live(p.Leader) {
			return fmt.Errorf("leader %d is not a live broker", p.Leader)
		}
	}
	for _, r := range p.Adding {
		if !p.IsReplica(r) || slices.Contains(p.Removing, r) {
			return fmt.Errorf("adding replica %d outside replicas %v or also removing %v", r, p.Replicas, p.Removing)
		}
	}
	for _, r := range p.Removing {
		if !p.IsReplica(r) {
			return fmt.Errorf("removing replica %d outside replicas %v", r, p.Replicas)
		}
	}
	if p.LeaderEpoch < 0 || p.PartitionEpoch < 0 {
		return fmt.Errorf("negative epoch %d/%d", p.LeaderEpoch, p.PartitionEpoch)
	}
	return nil
}
