package controller

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/meta"
)

// Admin requests brokers forward to the active controller. Each is checked
// against the current image, then proposed as one record; the record is
// checked again at apply time (records_admin.go).

// configChange is one resource's requested change, before validation.
type configChange struct {
	typ     kmsg.ConfigResourceType
	name    string
	set     map[string]string
	del     []string
	replace bool
}

// check validates a config change against img, as Kafka's
// ControllerConfigurationValidator and LogConfig.validate do.
func (ch configChange) check(img *Image) (*kerr.Error, string) {
	switch ch.typ {
	case kmsg.ConfigResourceTypeTopic:
		t, ok := img.Topics[ch.name]
		if !ok {
			return kerr.UnknownTopicOrPartition, fmt.Sprintf("topic %q does not exist", ch.name)
		}
		rf := 0
		if len(t.Partitions) > 0 {
			p := t.Partitions[0]
			rf = len(p.Replicas) - len(p.Removing)
		}
		for _, k := range ch.del {
			if _, ok := meta.LookupTopicConfig(k); !ok {
				return kerr.InvalidConfig, "Unknown topic config name: " + k
			}
		}
		return meta.ValidateTopicConfigs(ch.set, rf)
	case kmsg.ConfigResourceTypeBroker:
		if ch.name != "" {
			if _, err := strconv.ParseInt(ch.name, 10, 32); err != nil {
				return kerr.InvalidRequest, fmt.Sprintf("broker resource %q: give a broker id, or \"\" for the cluster-wide default", ch.name)
			}
		}
		dynamic := meta.DynamicBrokerConfigs()
		for _, k := range append(slices.Sorted(func(yield func(string) bool) {
			for k := range ch.set {
				if !yield(k) {
					return
				}
			}
		}), ch.del...) {
			c, ok := meta.LookupBrokerConfig(k)
			if !ok || !slices.Contains(dynamic, k) {
				return kerr.InvalidConfig, fmt.Sprintf("Cannot update these configs dynamically: %s (this cluster changes %s at runtime)", k, strings.Join(dynamic, ", "))
			}
			if v, set := ch.set[k]; set {
				if err := c.Check(v); err != nil {
					return kerr.InvalidConfig, strings.Replace(err.Error(), c.Name, k, 1)
				}
			}
		}
		return nil, ""
	case kmsg.ConfigResourceTypeGroupConfig:
		if ch.name == "" {
			return kerr.InvalidRequest, "a group resource needs a group id"
		}
		return meta.ValidateGroupConfigs(ch.set, ch.del)
	}
	return kerr.InvalidRequest, fmt.Sprintf("resource type %d: only topics (2), brokers (4) and groups (32) have configs here", ch.typ)
}

// alterConfig validates and (unless validateOnly) proposes one change.
func (c *Controller) alterConfig(ch configChange, validateOnly bool) (int16, *string) {
	if e, msg := ch.check(c.Image()); e != nil {
		return e.Code, kmsg.StringPtr(msg)
	}
	if validateOnly {
		return 0, nil
	}
	res, err := c.propose(record{Policy: c.cfg.policy(), Configs: &configRec{Type: ch.typ, Name: ch.name,
		Set: ch.set, Delete: ch.del, Replace: ch.replace}})
	if err != nil {
		return errCode(err), nil
	}
	return res.Code, nil
}

func (c *Controller) handleAlterConfigs(r *kmsg.AlterConfigsRequest) *kmsg.AlterConfigsResponse {
	resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, rr := range r.Resources {
		out := kmsg.NewAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
		ch := configChange{typ: rr.ResourceType, name: rr.ResourceName, set: map[string]string{}, replace: true}
		for _, cf := range rr.Configs {
			if cf.Value != nil {
				ch.set[cf.Name] = *cf.Value
			}
		}
		out.ErrorCode, out.ErrorMessage = c.alterConfig(ch, r.ValidateOnly)
		resp.Resources = append(resp.Resources, out)
	}
	return resp
}

func (c *Controller) handleIncrementalAlterConfigs(r *kmsg.IncrementalAlterConfigsRequest) *kmsg.IncrementalAlterConfigsResponse {
	resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, rr := range r.Resources {
		out := kmsg.NewIncrementalAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
		ch := configChange{typ: rr.ResourceType, name: rr.ResourceName, set: map[string]string{}}
		for _, cf := range rr.Configs {
			switch cf.Op {
			case kmsg.IncrementalAlterConfigOpSet:
				if cf.Value != nil {
					ch.set[cf.Name] = *cf.Value
				}
			case kmsg.IncrementalAlterConfigOpDelete:
				ch.del = append(ch.del, cf.Name)
			default:
				// APPEND and SUBTRACT apply to list configs only, and
				// none of those is one this cluster acts on.
				out.ErrorCode = kerr.InvalidConfig.Code
				out.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Config value append/subtract is not allowed for config key: %s", cf.Name))
			}
		}
		if out.ErrorCode == 0 {
			out.ErrorCode, out.ErrorMessage = c.alterConfig(ch, r.ValidateOnly)
		}
		resp.Resources = append(resp.Resources, out)
	}
	return resp
}

// handleCreatePartitions grows topics (KIP-195): the new count must exceed
// the current one (INVALID_PARTITIONS otherwise); new partitions get the
// topic's replication factor, spread as at creation, or the assignment
// given.
func (c *Controller) handleCreatePartitions(r *kmsg.CreatePartitionsRequest) *kmsg.CreatePartitionsResponse {
	resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for _, rt := range r.Topics {
		out := kmsg.NewCreatePartitionsResponseTopic()
		out.Topic = rt.Topic
		fail := func(e *kerr.Error, msg string) {
			out.ErrorCode, out.ErrorMessage = e.Code, kmsg.StringPtr(msg)
		}
		img := c.Image()
		t, ok := img.Topics[rt.Topic]
		switch {
		case !ok:
			fail(kerr.UnknownTopicOrPartition, fmt.Sprintf("topic %q does not exist", rt.Topic))
		case int(rt.Count) <= len(t.Partitions):
			fail(kerr.InvalidPartitions, fmt.Sprintf("Topic currently has %d partitions, which is higher than the requested %d.", len(t.Partitions), rt.Count))
		default:
			add := int(rt.Count) - len(t.Partitions)
			var as [][]int32
			if rt.Assignment != nil {
				if len(rt.Assignment) != add {
					fail(kerr.InvalidReplicaAssignment, fmt.Sprintf("%d assignments for %d new partitions", len(rt.Assignment), add))
					break
				}
				for _, a := range rt.Assignment {
					as = append(as, a.Replicas)
				}
				if !validAssignment(img, as) || len(as[0]) != len(t.Partitions[0].Replicas) {
					fail(kerr.InvalidReplicaAssignment, "replicas must be distinct registered brokers, as many as the topic's replication factor")
					break
				}
			} else if as, ok = assignReplicas(img, int32(add), int16(len(t.Partitions[0].Replicas))); !ok {
				fail(kerr.InvalidReplicationFactor, "the topic's replication factor exceeds the live brokers")
				break
			}
			if r.ValidateOnly {
				break
			}
			res, err := c.propose(record{CreatePartitions: &createPartsRec{Topic: rt.Topic, Assignment: as}})
			if err != nil {
				out.ErrorCode = errCode(err)
			} else {
				out.ErrorCode = res.Code
			}
		}
		resp.Topics = append(resp.Topics, out)
	}
	return resp
}

// handleElectLeaders runs preferred (type 0) or unclean (type 1) elections
// (KIP-183, KIP-460). A nil topic list means every partition; partitions
// where no election was needed are then left out of the answer, as Kafka
// does.
func (c *Controller) handleElectLeaders(r *kmsg.ElectLeadersRequest) *kmsg.ElectLeadersResponse {
	resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
	all := r.Topics == nil
	var refs []partitionRef
	if all {
		img := c.Image()
		for _, n := range img.TopicNames() {
			for _, p := range img.Topics[n].Partitions {
				refs = append(refs, partitionRef{Topic: n, Partition: p.Index})
			}
		}
	}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			refs = append(refs, partitionRef{Topic: t.Topic, Partition: p})
		}
	}
	if r.ElectionType != 0 && r.ElectionType != 1 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	codes := make([]int16, len(refs))
	if len(refs) > 0 {
		res, err := c.propose(record{Policy: c.cfg.policy(), Elect: &electRec{Items: refs, Unclean: r.ElectionType == 1}})
		switch {
		case err != nil:
			resp.ErrorCode = errCode(err)
			return resp
		case res.Code != 0:
			resp.ErrorCode = res.Code
			return resp
		}
		codes = res.Codes
	}
	byTopic := map[string]int{}
	for i, ref := range refs {
		if all && codes[i] == kerr.ElectionNotNeeded.Code {
			continue
		}
		j, ok := byTopic[ref.Topic]
		if !ok {
			j = len(resp.Topics)
			byTopic[ref.Topic] = j
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = ref.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition, rp.ErrorCode = ref.Partition, codes[i]
		resp.Topics[j].Partitions = append(resp.Topics[j].Partitions, rp)
	}
	return resp
}

// handleAlterPartitionReassignments starts or cancels reassignments
// (KIP-455). A target must name distinct registered brokers.
func (c *Controller) handleAlterPartitionReassignments(r *kmsg.AlterPartitionAssignmentsRequest) *kmsg.AlterPartitionAssignmentsResponse {
	resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	var items []reassignItem
	type slot struct{ t, p int }
	var slots []slot
	img := c.Image()
	for _, t := range r.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			if p.Replicas != nil && (len(p.Replicas) == 0 || !validAssignment(img, [][]int32{p.Replicas})) {
				rp.ErrorCode = kerr.InvalidReplicaAssignment.Code
				rp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("replicas %v: give distinct registered broker ids", p.Replicas))
			} else {
				items = append(items, reassignItem{partitionRef: partitionRef{Topic: t.Topic, Partition: p.Partition}, Target: p.Replicas})
				slots = append(slots, slot{len(resp.Topics), len(rt.Partitions)})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(items) == 0 {
		return resp
	}
	res, err := c.propose(record{Reassign: &reassignRec{Items: items}})
	if err != nil {
		resp.ErrorCode = errCode(err)
		return resp
	}
	for i, s := range slots {
		resp.Topics[s.t].Partitions[s.p].ErrorCode = res.Codes[i]
	}
	return resp
}
