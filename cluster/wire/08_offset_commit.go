package wire

// OffsetCommit: v0-9 (v9: KIP-848, the generation is a consumer group
// member's epoch; a consumer-protocol member must use v9+).
//
// Behaviour: validated against the group (UNKNOWN_MEMBER_ID,
// ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID; generation
// -1 with no member id for a group with no members), written to
// __consumer_offsets and answered once committed as acks=all would be.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(8, 0, 9, handleOffsetCommit) }

func handleOffsetCommit(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.OffsetCommitRequest)
	c := s.coordinator()
	if c == nil {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.CoordinatorNotAvailable.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return now(resp)
	}
	allowed, denied := s.commitAuthorized(hdr, req)
	if len(allowed.Topics) == 0 && len(denied.Topics) > 0 {
		return now(denied)
	}
	wait := c.OffsetCommit(ctx, allowed)
	return reply{later: func() kmsg.Response {
		r := wait()
		r.SetVersion(req.Version)
		r.Topics = append(r.Topics, denied.Topics...)
		return r
	}}
}

// commitAuthorized is KafkaApis.handleOffsetCommitRequest's check: READ on
// the group (else every partition GROUP_AUTHORIZATION_FAILED), READ on each
// topic (else its partitions TOPIC_AUTHORIZATION_FAILED). allowed is the
// request with only the topics that may be committed; denied the answer
// for the others.
func (s *Server) commitAuthorized(hdr header, req *kmsg.OffsetCommitRequest) (allowed *kmsg.OffsetCommitRequest, denied *kmsg.OffsetCommitResponse) {
	denied = req.ResponseKind().(*kmsg.OffsetCommitResponse)
	if s.opts.Authz == nil {
		return req, denied
	}
	groupOK := s.groupAuthorized(hdr, kmsg.ACLOperationRead, req.Group)
	cp := *req
	cp.Topics = nil
	for _, t := range req.Topics {
		code := kerr.GroupAuthorizationFailed.Code
		if groupOK {
			if s.topicAuthorized(hdr, kmsg.ACLOperationRead, t.Topic) {
				cp.Topics = append(cp.Topics, t)
				continue
			}
			code = kerr.TopicAuthorizationFailed.Code
		}
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		denied.Topics = append(denied.Topics, rt)
	}
	return &cp, denied
}
