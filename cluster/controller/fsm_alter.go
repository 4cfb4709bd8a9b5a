package controller

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/meta"
)

// applyAlterPartition validates and applies ISR changes requested by a
// partition leader. Each item is judged on its own, against the image as
// it is at apply time.
func applyAlterPartition(img *Image, r alterRec) applyResult {
	b, ok := img.Brokers[r.BrokerID]
	if !ok || b.Epoch != r.BrokerEpoch {
		return applyResult{Code: kerr.StaleBrokerEpoch.Code}
	}
	res := applyResult{Items: make([]itemResult, len(r.Items))}
	for i, it := range r.Items {
		res.Items[i] = alterOne(img, r.BrokerID, it)
	}
	return res
}

func alterOne(img *Image, sender int32, it alterItem) itemResult {
	var t TopicInfo
	var ok bool
	if it.ByID {
		if t, ok = img.TopicByID(it.TopicID); !ok {
			return itemResult{Code: kerr.UnknownTopicID.Code}
		}
	} else if t, ok = img.Topics[it.Topic]; !ok {
		return itemResult{Code: kerr.UnknownTopicOrPartition.Code}
	}
	if it.Partition < 0 || int(it.Partition) >= len(t.Partitions) {
		return itemResult{Code: kerr.UnknownTopicOrPartition.Code}
	}
	p := &t.Partitions[it.Partition]
	switch {
	case p.Leader != sender:
		return itemResult{Code: kerr.NotLeaderForPartition.Code, Partition: *p}
	case it.LeaderEpoch != p.LeaderEpoch:
		return itemResult{Code: kerr.FencedLeaderEpoch.Code, Partition: *p}
	case it.PartitionEpoch != p.PartitionEpoch:
		return itemResult{Code: kerr.InvalidUpdateVersion.Code, Partition: *p}
	}
	if !validISR(*p, it.NewISR) {
		return itemResult{Code: kerr.InvalidRequest.Code, Partition: *p}
	}
	for j, r := range it.NewISR {
		if p.InISR(r) {
			continue
		}
		// KIP-841: only a live broker may join; KIP-903: and only the
		// incarnation the leader saw catch up.
		if !img.live(r) {
			return itemResult{Code: kerr.IneligibleReplica.Code, Partition: *p}
		}
		if j < len(it.ISREpochs) && it.ISREpochs[j] >= 0 && it.ISREpochs[j] != img.Brokers[r].Epoch {
			return itemResult{Code: kerr.IneligibleReplica.Code, Partition: *p}
		}
	}
	setLeaderAndISR(p, p.Leader, it.NewISR)
	return itemResult{Partition: p.Clone()}
}

// validISR: non-empty, no duplicates, within the assignment, holds the leader.
func validISR(p meta.Partition, isr []int32) bool {
	if len(isr) == 0 || !slices.Contains(isr, p.Leader) {
		return false
	}
	for i, r := range isr {
		if !p.IsReplica(r) || slices.Contains(isr[:i], r) {
			return false
		}
	}
	return true
}
