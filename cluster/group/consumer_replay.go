package group

import (
	"encoding/json"
	"time"

	"gregor/cluster/coordinator"
)

// applyConsumer replays one record of a KIP-848 consumer group
// (GroupCoordinatorShard.replay of the ConsumerGroup* records): the last
// record of each key wins, a tombstone deletes what the key names, and
// ConsumerGroupMetadata's tombstone ends the group's consumer type.
func (rg replayed) applyConsumer(k recordKey, r coordinator.Record) {
	g := rg.get(k.Group)
	if r.Value == nil && k.Kind == kindCGMetadata {
		g.cg = nil
		return
	}
	if g.cg == nil {
		if r.Value == nil {
			return
		}
		g.clearMembership()
		g.cg = newConsumerGroup()
	}
	g.known = true
	cg := g.cg
	member := func() *cmember {
		m := cg.members[k.Member]
		if m == nil {
			m = &cmember{id: k.Member, state: memberStable, assigned: assignment{}, pendingRevocation: assignment{}, assignedAt: map[tp]int32{}}
			cg.members[k.Member] = m
		}
		return m
	}
	switch k.Kind {
	case kindCGMetadata:
		var v cgMetaValue
		if json.Unmarshal(r.Value, &v) == nil {
			cg.epoch, cg.subscription = v.Epoch, v.Subscription
			if cg.subscription == nil {
				cg.subscription = map[string]topicMeta{}
			}
		}
	case kindCGTargetMetadata:
		var v targetMetaValue
		if json.Unmarshal(r.Value, &v) == nil {
			cg.assignmentEpoch = v.Epoch
		}
	case kindCGTargetMember:
		var v targetValue
		if r.Value == nil {
			delete(cg.target, k.Member)
		} else if json.Unmarshal(r.Value, &v) == nil {
			cg.target[k.Member] = v.Partitions.norm()
		}
	case kindCGMember:
		var v cmemberValue
		if r.Value == nil {
			if m := cg.members[k.Member]; m != nil && m.instanceID != nil && cg.static[*m.instanceID] == m.id {
				delete(cg.static, *m.instanceID)
			}
			delete(cg.members, k.Member)
		} else if json.Unmarshal(r.Value, &v) == nil {
			m := member()
			m.instanceID, m.rackID, m.clientID, m.clientHost = v.InstanceID, v.RackID, v.ClientID, v.ClientHost
			m.subscribedNames, m.regex, m.assignor = v.Names, v.Regex, v.Assignor
			m.rebalance = msDuration(v.RebalanceMs)
			if m.instanceID != nil {
				cg.static[*m.instanceID] = m.id
			}
		}
	case kindCGCurrent:
		var v ccurrentValue
		if r.Value != nil && json.Unmarshal(r.Value, &v) == nil {
			m := member()
			m.epoch, m.prevEpoch, m.state = v.Epoch, v.PrevEpoch, v.State
			m.committedEpoch, m.hasCommitted = v.Epoch, true // replayed: committed
			m.assigned, m.pendingRevocation = v.Assigned.norm(), v.Pending.norm()
			m.left = v.Epoch == staticLeaveEpoch
			m.assignedAt = map[tp]int32{}
			for _, a := range v.AssignedAt {
				m.assignedAt[tp{a.Topic, a.Partition}] = a.Epoch
			}
		}
	}
}

// loaded finishes a consumer group after its replay: the partition owners
// rebuilt from the members' current assignments, a member that has
// metadata but no current assignment record yet starting from nothing,
// and every member's session timer armed afresh (Kafka's onLoaded).
func (s *shard) loadedConsumerGroup(g *Group) {
	cg := g.cg
	cg.owners = map[tp]string{}
	for _, m := range cg.members {
		if m.state == "" {
			m.state = memberStable
		}
		cg.claim(m)
		s.resetConsumerSession(g, m)
		if m.state == memberUnrevoked {
			s.armRebalanceTimeout(g, m)
		}
	}
}

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }
