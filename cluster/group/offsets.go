package group

import (
	"cmp"
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/coordinator"
	"gregor/cluster/faultpoint"
)

// maxMetadataBytes is offset.metadata.max.bytes.
const maxMetadataBytes = 4096

// OffsetCommit handles an OffsetCommit request: validated against the
// group's membership, written to __consumer_offsets and answered once
// committed (acks=all); only then does OffsetFetch see it.
func (c *Coordinator) OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) func() *kmsg.OffsetCommitResponse {
	resp := kmsg.NewPtrOffsetCommitResponse()
	type slot struct{ t, p int }
	var ok []slot
	for ti, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			if p.Metadata != nil && len(*p.Metadata) > maxMetadataBytes {
				rp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
			} else {
				ok = append(ok, slot{ti, len(rt.Partitions)})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	failAll := func(e *kerr.Error) *kmsg.OffsetCommitResponse {
		for _, sl := range ok {
			resp.Topics[sl.t].Partitions[sl.p].ErrorCode = e.Code
		}
		return resp
	}
	s, e := c.shardFor(req.Group)
	if e != nil {
		return ready(failAll(e))
	}
	s.mu.Lock()
	g, e := s.validateCommit(req)
	s.unlock()
	if e != nil {
		return ready(failAll(e))
	}
	if len(ok) == 0 {
		return ready(resp)
	}
	now := c.cfg.Clock.Now().UnixMilli()
	recs := make([]coordinator.Record, 0, len(ok))
	vals := make([]committed, 0, len(ok))
	keys := make([]TopicPartition, 0, len(ok))
	for _, sl := range ok {
		t := req.Topics[sl.t]
		p := t.Partitions[sl.p]
		v := offsetValue{Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, CommitMs: now}
		if p.Metadata != nil {
			v.Metadata = *p.Metadata
		}
		recs = append(recs, offsetRecord(g.id, t.Topic, p.Partition, &v))
		vals = append(vals, committed{offsetValue: v})
		keys = append(keys, TopicPartition{t.Topic, p.Partition})
	}
	return func() *kmsg.OffsetCommitResponse {
		base, e := s.write(ctx, recs)
		if e != nil {
			return failAll(e)
		}
		s.mu.Lock()
		defer s.unlock()
		if s.unloaded || s.groups[g.id] != g {
			return resp // committed in the log; the next load has it
		}
		for i, k := range keys {
			v := vals[i]
			v.logOffset = base + int64(i)
			if cur, ok := g.offsets[k]; !ok || cur.logOffset < v.logOffset {
				g.offsets[k] = v
			}
		}
		faultpoint.Hit(faultpoint.OffsetCommitApplied, faultpoint.Attrs{Node: c.cfg.Node, Topic: keys[0].Topic, Partition: keys[0].Partition, Group: g.id})
		return resp
	}
}

// validateCommit is Kafka's check of a commit against the group. A commit
// with generation -1 and no member id stores offsets for a group with no
// members (a "simple" group, e.g. kadm's CommitOffsets). Caller holds mu.
func (s *shard) validateCommit(req *kmsg.OffsetCommitRequest) (*Group, *kerr.Error) {
	if s.unloaded {
		return nil, kerr.NotCoordinator
	}
	g := s.groups[req.Group]
	if g == nil {
		if req.Generation >= 0 {
			return nil, kerr.IllegalGeneration
		}
		g = newGroup(req.Group)
		g.known = true
		s.groups[req.Group] = g
		return g, nil
	}
	if g.cg != nil {
		return g, g.cg.validateCommit(req.MemberID, req.Generation, req.Version < 9)
	}
	if fenced(g, req.MemberID, req.InstanceID) {
		return nil, kerr.FencedInstanceID
	}
	if req.Generation < 0 && g.state == Empty {
		g.known = true
		return g, nil
	}
	m := g.members[req.MemberID]
	switch {
	case m == nil:
		return nil, kerr.UnknownMemberID
	case req.Generation != g.generation:
		return nil, kerr.IllegalGeneration
	case g.state == CompletingRebalance:
		return nil, kerr.RebalanceInProgress
	}
	if m.joinWait == nil && m.syncWait == nil {
		s.resetSession(g, m) // a commit is a sign of life, as in Kafka
	}
	return g, nil
}

// OffsetFetch handles an OffsetFetch request (v8+: several groups).
// Partitions with no commit answer offset -1.
func (c *Coordinator) OffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := kmsg.NewPtrOffsetFetchResponse()
	if req.Version < 8 {
		var topics []kmsg.OffsetFetchRequestGroupTopic
		for _, t := range req.Topics {
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = t.Topic, t.Partitions
			topics = append(topics, gt)
		}
		rg := c.fetchGroup(req.Group, nil, -1, topics, req.Topics == nil, req.RequireStable)
		resp.ErrorCode = rg.ErrorCode
		for _, t := range rg.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	for _, rg := range req.Groups {
		resp.Groups = append(resp.Groups, c.fetchGroup(rg.Group, rg.MemberID, rg.MemberEpoch, rg.Topics, rg.Topics == nil, req.RequireStable))
	}
	return resp
}

// fetchGroup answers one group's OffsetFetch. requireStable (v7+, KIP-447):
// a partition with an offset committed by a transaction not yet ended is
// UNSTABLE_OFFSET_COMMIT, so the new owner of a partition waits for the
// old one's transaction instead of reading the offset before it.
func (c *Coordinator) fetchGroup(id string, memberID *string, memberEpoch int32, topics []kmsg.OffsetFetchRequestGroupTopic, all, requireStable bool) kmsg.OffsetFetchResponseGroup {
	rg := kmsg.NewOffsetFetchResponseGroup()
	rg.Group = id
	s, e := c.shardFor(id)
	if e != nil {
		rg.ErrorCode = e.Code
		return rg
	}
	s.mu.Lock()
	defer s.unlock()
	if s.unloaded {
		rg.ErrorCode = kerr.NotCoordinator.Code
		return rg
	}
	g := s.groups[id]
	if g != nil && g.cg != nil {
		if e := g.cg.validateFetch(memberID, memberEpoch); e != nil {
			rg.ErrorCode = e.Code
			return rg
		}
	}
	if all {
		byTopic := map[string]int{}
		if g != nil {
			for _, k := range sortedKeys(g.offsets) {
				i, ok := byTopic[k.Topic]
				if !ok {
					i = len(topics)
					byTopic[k.Topic] = i
					gt := kmsg.NewOffsetFetchRequestGroupTopic()
					gt.Topic = k.Topic
					topics = append(topics, gt)
				}
				topics[i].Partitions = append(topics[i].Partitions, k.Partition)
			}
		}
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
			if g != nil && requireStable && g.hasPendingTxnOffset(TopicPartition{t.Topic, p}) {
				rp.ErrorCode = kerr.UnstableOffsetCommit.Code
			} else if g != nil {
				if v, ok := g.offsets[TopicPartition{t.Topic, p}]; ok {
					md := v.Metadata
					rp.Offset, rp.LeaderEpoch, rp.Metadata = v.Offset, v.LeaderEpoch, &md
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		rg.Topics = append(rg.Topics, rt)
	}
	return rg
}

func sortedKeys(m map[TopicPartition]committed) []TopicPartition {
	out := make([]TopicPartition, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// DeleteGroups handles a DeleteGroups request: an empty group's metadata
// and offsets are tombstoned in __consumer_offsets.
func (c *Coordinator) DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) func() *kmsg.DeleteGroupsResponse {
	return func() *kmsg.DeleteGroupsResponse {
		resp := kmsg.NewPtrDeleteGroupsResponse()
		for _, id := range req.Groups {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group = id
			if e := c.deleteGroup(ctx, id); e != nil {
				rg.ErrorCode = e.Code
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
}

func (c *Coordinator) deleteGroup(ctx context.Context, id string) *kerr.Error {
	s, e := c.shardFor(id)
	if e != nil {
		return e
	}
	s.mu.Lock()
	g := s.groups[id]
	switch {
	case s.unloaded:
		s.unlock()
		return kerr.NotCoordinator
	case g == nil || !g.known:
		s.unlock()
		return kerr.GroupIDNotFound
	case g.state != Empty || (g.cg != nil && len(g.cg.members) > 0):
		s.unlock()
		return kerr.NonEmptyGroup
	}
	g.state = Dead
	recs := []coordinator.Record{groupRecord(id, nil)}
	if g.cg != nil {
		recs = append(recs, cgTombstone(id))
	}
	for _, k := range sortedKeys(g.offsets) {
		recs = append(recs, offsetRecord(id, k.Topic, k.Partition, nil))
	}
	s.unlock()
	_, e = s.write(ctx, recs)
	s.mu.Lock()
	defer s.unlock()
	if s.groups[id] != g {
		return e
	}
	if e != nil {
		g.state = Empty
		return e
	}
	g.stopTimers()
	delete(s.groups, id)
	return nil
}
