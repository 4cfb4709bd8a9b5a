package wire

// ShareGroupDescribe: v1 (KIP-932).
//
// Behaviour: each group's epoch, state (Empty or Stable), members, their
// subscriptions and assignments, from its coordinator (Groups.Describe);
// GROUP_ID_NOT_FOUND for a group that is not a share group here. With the
// authorizer (KafkaApis.handleShareGroupDescribe): DESCRIBE on each group,
// its authorized operations when asked, and (KAFKA-18817) a group whose
// members' assignments name a topic the caller may not DESCRIBE answered
// TOPIC_AUTHORIZATION_FAILED without its members.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(77, 1, 1, handleShareGroupDescribe) }

func handleShareGroupDescribe(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.ShareGroupDescribeRequest)
	sb := s.shareBackend()
	if sb == nil {
		return unsupported(hdr)
	}
	// KafkaApis.handleShareGroupDescribe: DESCRIBE on each group.
	allowed, denied := s.authorizedGroups(hdr, kmsg.ACLOperationDescribe, req.GroupIDs)
	cp := *req
	cp.GroupIDs = allowed
	r := sb.ShareGroups().Describe(&cp)
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.ErrorCode != 0 {
			continue
		}
		if req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = s.authorizedOperations(hdr, kmsg.ACLResourceTypeGroup, g.GroupID)
		}
		var topics []string
		for _, m := range g.Members {
			for _, tp := range m.Assignment.TopicPartitions {
				topics = append(topics, tp.Topic)
			}
		}
		if s.opts.Authz != nil && !s.describesAll(hdr, topics) {
			// KAFKA-18817, as KAFKA-18813 for consumer groups.
			hidden := kmsg.NewShareGroupDescribeResponseGroup()
			msg := topicsHiddenMessage
			hidden.GroupID, hidden.ErrorCode, hidden.ErrorMessage = g.GroupID, kerr.TopicAuthorizationFailed.Code, &msg
			*g = hidden
		}
	}
	for _, g := range denied {
		rg := kmsg.NewShareGroupDescribeResponseGroup()
		rg.GroupID, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		r.Groups = append(r.Groups, rg)
	}
	return now(r)
}
