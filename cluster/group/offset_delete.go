package group

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/coordinator"
)

// OffsetDelete handles an OffsetDelete request (KIP-496), as Kafka's
// GroupMetadataManager does: an unknown or dead group is GROUP_ID_NOT_FOUND;
// a group with members that does not use the consumer protocol is
// NON_EMPTY_GROUP; in a consumer group with members, partitions of topics
// some member subscribes to answer GROUP_SUBSCRIBED_TO_TOPIC and keep their
// offsets; every other named partition's offset is tombstoned in
// __consumer_offsets (a partition without a commit is answered without
// error, as Kafka does).
func (c *Coordinator) OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) func() *kmsg.OffsetDeleteResponse {
	resp := kmsg.NewPtrOffsetDeleteResponse()
	s, e := c.shardFor(req.Group)
	if e != nil {
		resp.ErrorCode = e.Code
		return ready(resp)
	}
	s.mu.Lock()
	g := s.groups[req.Group]
	switch {
	case s.unloaded:
		e = kerr.NotCoordinator
	case g == nil || !g.known || g.state == Dead:
		e = kerr.GroupIDNotFound
	case len(g.members) > 0 && g.protocolType != "consumer":
		e = kerr.NonEmptyGroup
	}
	if e != nil {
		s.mu.Unlock()
		resp.ErrorCode = e.Code
		return ready(resp)
	}
	subscribed := subscribedTopics(g)
	var recs []coordinator.Record
	var gone []TopicPartition
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			k := TopicPartition{t.Topic, p.Partition}
			switch _, has := g.offsets[k]; {
			case slices.Contains(subscribed, t.Topic):
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			case has:
				recs = append(recs, offsetRecord(g.id, t.Topic, p.Partition, nil))
				gone = append(gone, k)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	s.mu.Unlock()
	if len(recs) == 0 {
		return ready(resp)
	}
	return func() *kmsg.OffsetDeleteResponse {
		if _, e := s.write(ctx, recs); e != nil {
			for i := range resp.Topics {
				for j := range resp.Topics[i].Partitions {
					if resp.Topics[i].Partitions[j].ErrorCode == 0 {
						resp.Topics[i].Partitions[j].ErrorCode = e.Code
					}
				}
			}
			return resp
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.groups[g.id] == g {
			for _, k := range gone {
				delete(g.offsets, k)
			}
		}
		return resp
	}
}

// subscribedTopics lists the topics the members of a consumer group
// subscribe to, from their metadata for the group's chosen protocol.
// Caller holds the shard lock.
func subscribedTopics(g *Group) []string {
	var out []string
	if g.cg != nil {
		// A consumer group's subscription metadata (ConsumerGroup.isSubscribedToTopic).
		for n := range g.cg.subscription {
			out = append(out, n)
		}
	}
	for _, m := range g.members {
		var md kmsg.ConsumerMemberMetadata
		if md.ReadFrom(m.metadataFor(g.protocol)) != nil {
			continue
		}
		for _, t := range md.Topics {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}
