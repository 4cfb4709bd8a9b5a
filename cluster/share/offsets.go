package share

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The share-group offsets admin APIs (KIP-932), on the group coordinator,
// which asks the share coordinator of each share partition. Alter and
// delete need an empty group (NON_EMPTY_GROUP): a member's leader could be
// writing the state meanwhile.

// known returns the share group for id, creating an empty one when create
// is set (AlterShareGroupOffsets on a new group makes it, as Kafka's
// GroupMetadataManager.getOrMaybeCreateShareGroup does). The shard is
// unlocked on return; what it returns is a copy to read without the lock.
func (g *Groups) known(id string, create bool) (members int, states map[string][]int32, e *kerr.Error) {
	if g.env.ClassicGroup(id) {
		return 0, nil, kerr.GroupIDNotFound
	}
	s, e := g.shard(id)
	if e != nil {
		return 0, nil, e
	}
	defer s.mu.Unlock()
	grp := s.groups[id]
	if grp == nil {
		if !create {
			return 0, nil, kerr.GroupIDNotFound
		}
		grp = newShareGroup(id)
		s.groups[id] = grp
	}
	states = map[string][]int32{}
	for t, ps := range grp.states {
		states[t] = slices.Sorted(maps.Keys(ps))
	}
	return len(grp.members), states, nil
}

// noteStates records (or, with del, forgets) share partitions with state.
func (g *Groups) noteStates(id, topic string, parts []int32, del bool) {
	s, e := g.shard(id)
	if e != nil {
		return
	}
	defer s.mu.Unlock()
	grp := s.groups[id]
	if grp == nil {
		return
	}
	if del {
		delete(grp.states, topic)
		return
	}
	if grp.states[topic] == nil {
		grp.states[topic] = map[int32]struct{}{}
	}
	for _, p := range parts {
		grp.states[topic][p] = struct{}{}
	}
}

// DescribeOffsets answers DescribeShareGroupOffsets (v0): each share
// partition's start offset from its share coordinator; null topics mean
// every share partition the group has state for.
func (g *Groups) DescribeOffsets(ctx context.Context, req *kmsg.DescribeShareGroupOffsetsRequest) *kmsg.DescribeShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, rg := range req.Groups {
		og := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		og.GroupID = rg.GroupID
		_, states, e := g.known(rg.GroupID, false)
		if e != nil {
			og.ErrorCode = e.Code
			resp.Groups = append(resp.Groups, og)
			continue
		}
		want := states
		if rg.Topics != nil {
			want = map[string][]int32{}
			for _, t := range rg.Topics {
				want[t.Topic] = t.Partitions
			}
		}
		for _, topic := range slices.Sorted(maps.Keys(want)) {
			ot := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			ot.Topic = topic
			tid, _, ok := g.env.TopicByName(topic)
			ot.TopicID = tid
			for _, p := range want[topic] {
				op := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				op.Partition, op.StartOffset, op.LeaderEpoch, op.Lag = p, -1, -1, -1
				if !ok {
					op.ErrorCode = kerr.UnknownTopicOrPartition.Code
				} else if st, e := g.env.ReadState(ctx, StateKey{rg.GroupID, tid, p}, -1); e != nil {
					op.ErrorCode = e.Code
				} else {
					op.StartOffset = st.StartOffset
				}
				ot.Partitions = append(ot.Partitions, op)
			}
			og.Topics = append(og.Topics, ot)
		}
		resp.Groups = append(resp.Groups, og)
	}
	return resp
}

// AlterOffsets answers AlterShareGroupOffsets (v0): each share partition
// restarts at the given start offset with a new state epoch
// (InitializeShareGroupState), its in-flight records forgotten.
func (g *Groups) AlterOffsets(ctx context.Context, req *kmsg.AlterShareGroupOffsetsRequest) *kmsg.AlterShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	members, _, e := g.known(req.GroupID, true)
	if e == nil && members > 0 {
		e = kerr.NonEmptyGroup
	}
	if e != nil {
		resp.ErrorCode = e.Code
		return resp
	}
	for _, t := range req.Topics {
		ot := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		ot.Topic = t.Topic
		tid, n, ok := g.env.TopicByName(t.Topic)
		ot.TopicID = tid
		var done []int32
		for _, p := range t.Partitions {
			op := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			op.Partition = p.Partition
			switch {
			case !ok || p.Partition < 0 || p.Partition >= n:
				op.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.StartOffset < 0:
				op.ErrorCode = kerr.InvalidRequest.Code
			default:
				if e := g.env.InitializeState(ctx, StateKey{req.GroupID, tid, p.Partition}, p.StartOffset); e != nil {
					op.ErrorCode = e.Code
				} else {
					done = append(done, p.Partition)
				}
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		g.noteStates(req.GroupID, t.Topic, done, false)
		resp.Topics = append(resp.Topics, ot)
	}
	return resp
}

// DeleteOffsets answers DeleteShareGroupOffsets (v0): the share state of
// every partition of each topic is deleted (DeleteShareGroupState).
func (g *Groups) DeleteOffsets(ctx context.Context, req *kmsg.DeleteShareGroupOffsetsRequest) *kmsg.DeleteShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	members, _, e := g.known(req.GroupID, false)
	if e == nil && members > 0 {
		e = kerr.NonEmptyGroup
	}
	if e != nil {
		resp.ErrorCode = e.Code
		return resp
	}
	for _, t := range req.Topics {
		ot := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		ot.Topic = t.Topic
		tid, n, ok := g.env.TopicByName(t.Topic)
		ot.TopicID = tid
		if !ok {
			ot.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, ot)
			continue
		}
		for p := int32(0); p < n; p++ {
			if e := g.env.DeleteState(ctx, StateKey{req.GroupID, tid, p}); e != nil {
				ot.ErrorCode = e.Code
				break
			}
		}
		if ot.ErrorCode == 0 {
			g.noteStates(req.GroupID, t.Topic, nil, true)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp
}
