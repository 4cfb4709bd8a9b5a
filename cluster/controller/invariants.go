package controller

import (
	"fmt"

	"gregor/cluster/meta"
)

// checkInvariants verifies the image invariants: each partition's own
// (meta.Partition.Check), and those only the image can check: a partition
// stored where its topic and index say, and a leader that is a registered,
// live broker. It runs after every apply (O(image size)).
func checkInvariants(img *Image) error {
	for name, t := range img.Topics {
		if t.Name != name {
			return fmt.Errorf("topic keyed %q named %q", name, t.Name)
		}
		for i, p := range t.Partitions {
			if err := checkPartition(img, p); err != nil {
				return fmt.Errorf("%s/%d: %w", name, i, err)
			}
			if p.Index != int32(i) || p.Topic != name {
				return fmt.Errorf("%s/%d: stored as %s/%d", name, i, p.Topic, p.Index)
			}
		}
	}
	return nil
}

func checkPartition(img *Image, p meta.Partition) error {
	if err := p.Check(); err != nil {
		return err
	}
	if p.Leader != meta.NoLeader && !img.live(p.Leader) {
		return fmt.Errorf("leader %d is not a live broker", p.Leader)
	}
	return nil
}
