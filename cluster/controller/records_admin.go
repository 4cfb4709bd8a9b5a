package controller

// The admin records: config changes (AlterConfigs and
// IncrementalAlterConfigs), partition additions (CreatePartitions), leader
// elections on request (ElectLeaders) and replica reassignments
// (AlterPartitionReassignments, KIP-455). Like every record they carry the
// intent; the FSM computes the effect against the image it applies to, so
// every node derives the same image.

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/meta"
)

// configRec sets and deletes the dynamic configs of one resource: a topic,
// the cluster-wide broker default (Broker with Name ""), or one broker.
type configRec struct {
	Type   kmsg.ConfigResourceType `json:"type"`
	Name   string                  `json:"name"`
	Set    map[string]string       `json:"set,omitempty"`
	Delete []string                `json:"delete,omitempty"`
	// Replace: the resource's dynamic configs become exactly Set
	// (AlterConfigs, the legacy API, replaces them all).
	Replace bool `json:"replace,omitempty"`
}

type createPartsRec struct {
	Topic string `json:"topic"`
	// Assignment lists the replicas of each new partition, in order.
	Assignment [][]int32 `json:"assignment"`
}

type partitionRef struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

type electRec struct {
	Items []partitionRef `json:"items"`
	// Unclean: ElectLeaders with ElectionType 1 (KIP-460); else preferred.
	Unclean bool `json:"unclean,omitempty"`
}

type reassignItem struct {
	partitionRef
	// Target is the wanted replica set in preference order; nil cancels
	// the reassignment in progress.
	Target []int32 `json:"target"`
}

type reassignRec struct {
	Items []reassignItem `json:"items"`
}

func applyConfigs(img *Image, r configRec, pol electPolicy) applyResult {
	var into map[string]string
	switch {
	case r.Type == kmsg.ConfigResourceTypeTopic:
		t, ok := img.Topics[r.Name]
		if !ok {
			return applyResult{Code: kerr.UnknownTopicOrPartition.Code}
		}
		if t.Configs == nil {
			t.Configs = map[string]string{}
		}
		into = t.Configs // a clone: Apply works on a copy of the image
		img.Topics[r.Name] = t
	case r.Type == kmsg.ConfigResourceTypeBroker && r.Name == "":
		if img.ClusterConfigs == nil {
			img.ClusterConfigs = map[string]string{}
		}
		into = img.ClusterConfigs
	case r.Type == kmsg.ConfigResourceTypeBroker:
		id, err := strconv.ParseInt(r.Name, 10, 32)
		if err != nil {
			return applyResult{Code: kerr.InvalidRequest.Code}
		}
		if img.BrokerConfigs == nil {
			img.BrokerConfigs = map[int32]map[string]string{}
		}
		if img.BrokerConfigs[int32(id)] == nil {
			img.BrokerConfigs[int32(id)] = map[string]string{}
		}
		into = img.BrokerConfigs[int32(id)]
	case r.Type == kmsg.ConfigResourceTypeGroupConfig:
		if img.GroupConfigs == nil {
			img.GroupConfigs = map[string]map[string]string{}
		}
		if img.GroupConfigs[r.Name] == nil {
			img.GroupConfigs[r.Name] = map[string]string{}
		}
		into = img.GroupConfigs[r.Name]
	default:
		return applyResult{Code: kerr.InvalidRequest.Code}
	}
	if r.Replace {
		clear(into)
	}
	for k, v := range r.Set {
		into[k] = v
	}
	for _, k := range r.Delete {
		delete(into, k)
	}
	// Kafka applies unclean.leader.election.enable at runtime: once it is on,
	// an offline partition gets an out-of-sync live replica as leader
	// (KIP-704's controller behaviour). Any config change re-runs the
	// offline elections; with unclean election off it changes nothing.
	reviveOffline(img, pol)
	return applyResult{}
}

func applyCreatePartitions(img *Image, r createPartsRec) applyResult {
	t, ok := img.Topics[r.Topic]
	if !ok {
		return applyResult{Code: kerr.UnknownTopicOrPartition.Code}
	}
	for _, reps := range r.Assignment {
		if len(reps) == 0 {
			return applyResult{Code: kerr.InvalidReplicaAssignment.Code}
		}
		t.Partitions = append(t.Partitions, newPartition(img, r.Topic, int32(len(t.Partitions)), reps))
	}
	img.Topics[r.Topic] = t
	return applyResult{Topic: t}
}

// partitionFor finds a partition for mutation, or the error code.
func partitionFor(img *Image, ref partitionRef) (*meta.Partition, TopicInfo, int16) {
	t, ok := img.Topics[ref.Topic]
	if !ok || ref.Partition < 0 || int(ref.Partition) >= len(t.Partitions) {
		return nil, t, kerr.UnknownTopicOrPartition.Code
	}
	return &t.Partitions[ref.Partition], t, 0
}

// applyElect runs ElectLeaders, item by item (KIP-183 preferred, KIP-460
// unclean), as Kafka's ReplicationControlManager.electLeader does:
//   - preferred: the first assigned replica, if live and in the ISR
//     (else PREFERRED_LEADER_NOT_AVAILABLE); ELECTION_NOT_NEEDED when it
//     already leads;
//   - unclean: only for a partition without a leader (else
//     ELECTION_NOT_NEEDED): a live ISR member if any, else any live
//     replica, which becomes the whole ISR; ELIGIBLE_LEADERS_NOT_AVAILABLE
//     when no replica is live.
func applyElect(img *Image, r electRec, pol electPolicy) applyResult {
	res := applyResult{Codes: make([]int16, len(r.Items))}
	for i, ref := range r.Items {
		p, _, code := partitionFor(img, ref)
		if code != 0 {
			res.Codes[i] = code
			continue
		}
		if r.Unclean {
			if p.Leader != meta.NoLeader {
				res.Codes[i] = kerr.ElectionNotNeeded.Code
				continue
			}
			leader, isr := elect(*p, img.live, true, electPolicy{ElectOutsideISR: pol.ElectOutsideISR})
			if leader == meta.NoLeader {
				res.Codes[i] = kerr.EligibleLeadersNotAvailable.Code
				continue
			}
			setLeaderAndISR(p, leader, isr)
			continue
		}
		preferred := p.Replicas[0]
		switch {
		case p.Leader == preferred:
			res.Codes[i] = kerr.ElectionNotNeeded.Code
		case !img.live(preferred) || !p.InISR(preferred):
			res.Codes[i] = kerr.PreferredLeaderNotAvailable.Code
		default:
			setLeaderAndISR(p, preferred, p.ISR)
		}
	}
	return res
}

// applyReassign starts, replaces or cancels reassignments (KIP-455, as
// Kafka's ReplicationControlManager and PartitionReassignmentReplicas do):
// the replicas become the target followed by the old replicas not in it;
// the replicas being added join as followers and enter the ISR once caught
// up, which completes the reassignment (completeReassignment). A cancel
// returns to the replicas the partition had before.
func applyReassign(img *Image, r reassignRec) applyResult {
	res := applyResult{Codes: make([]int16, len(r.Items))}
	for i, it := range r.Items {
		p, _, code := partitionFor(img, it.partitionRef)
		if code != 0 {
			res.Codes[i] = code
			continue
		}
		// The replicas before any reassignment in progress.
		orig := without(p.Replicas, p.Adding)
		target := it.Target
		if target == nil {
			if !p.Reassigning() {
				res.Codes[i] = kerr.NoReassignmentInProgress.Code
				continue
			}
			target = orig
		}
		for _, b := range target {
			if _, ok := img.Brokers[b]; !ok {
				res.Codes[i] = kerr.InvalidReplicaAssignment.Code
				break
			}
		}
		if res.Codes[i] != 0 {
			continue
		}
		replicas := append(slices.Clone(target), without(orig, target)...)
		isr := intersect(p.ISR, replicas)
		if len(isr) == 0 {
			// Every in-sync replica would go: nothing could lead.
			res.Codes[i] = kerr.InvalidReplicaAssignment.Code
			continue
		}
		leader := p.Leader
		if leader != meta.NoLeader && !slices.Contains(replicas, leader) {
			leader = meta.NoLeader
		}
		p.Replicas = replicas
		p.Adding, p.Removing = without(target, orig), without(orig, target)
		if len(p.Adding) == 0 {
			p.Adding = nil
		}
		if len(p.Removing) == 0 {
			p.Removing = nil
		}
		if leader == meta.NoLeader {
			q := *p
			q.ISR = isr
			leader, isr = elect(q, img.live, false, electPolicy{})
		}
		if !setLeaderAndISR(p, leader, isr) {
			p.PartitionEpoch++ // the replicas changed
		}
		completeReassignment(img, p)
	}
	return res
}

// completeReassignment finishes a reassignment whose target replicas are
// all in the ISR: the replicas become the target, the removed ones leave the
// ISR, and leadership moves to a target replica if a removed one led. It
// reports whether it finished one.
func completeReassignment(img *Image, p *meta.Partition) bool {
	if !p.Reassigning() {
		return false
	}
	target := without(p.Replicas, p.Removing)
	for _, r := range target {
		if !p.InISR(r) {
			return false
		}
	}
	isr := intersect(p.ISR, target)
	leader := p.Leader
	if !slices.Contains(target, leader) {
		leader = meta.NoLeader
		for _, r := range target {
			if img.live(r) && slices.Contains(isr, r) {
				leader = r
				break
			}
		}
		if leader == meta.NoLeader {
			return false // wait for a target replica to be live
		}
	}
	p.Replicas, p.Adding, p.Removing = target, nil, nil
	if !setLeaderAndISR(p, leader, isr) {
		p.PartitionEpoch++
	}
	return true
}

// without returns a's members not in b, in a's order.
func without(a, b []int32) []int32 {
	out := make([]int32, 0, len(a))
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// intersect returns a's members that are in b, in a's order.
func intersect(a, b []int32) []int32 {
	out := make([]int32, 0, len(a))
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
