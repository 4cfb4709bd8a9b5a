package wire

// ConsumerGroupDescribe: v0-1 (KIP-848; v1: MemberType). A group that is
// not a consumer group is GROUP_ID_NOT_FOUND.
//
// With the authorizer (KafkaApis.handleConsumerGroupDescribe): DESCRIBE on
// each group (GROUP_AUTHORIZATION_FAILED), the group's authorized
// operations when asked, and (Kafka 4.0, KAFKA-18813) a group one of whose
// members' assignments or target assignments names a topic the caller may
// not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED without its members.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(69, 0, 1, handleConsumerGroupDescribe) }

func handleConsumerGroupDescribe(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.ConsumerGroupDescribeRequest)
	c := s.coordinator()
	if !s.opts.ConsumerProtocol || c == nil {
		e := kerr.CoordinatorNotAvailable
		if !s.opts.ConsumerProtocol {
			e = kerr.UnsupportedVersion // KafkaApis, protocol off
		}
		resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
		for _, g := range req.Groups {
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode = g, e.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return now(resp)
	}
	// KafkaApis.handleConsumerGroupDescribe: DESCRIBE on each group.
	allowed, denied := s.authorizedGroups(hdr, kmsg.ACLOperationDescribe, req.Groups)
	cp := *req
	cp.Groups = allowed
	r := c.ConsumerGroupDescribe(&cp)
	r.SetVersion(req.Version)
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.ErrorCode != 0 {
			continue
		}
		if req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = s.authorizedOperations(hdr, kmsg.ACLResourceTypeGroup, g.Group)
		}
		if s.opts.Authz != nil && !s.describesAll(hdr, consumerGroupTopics(g)) {
			*g = topicsHidden(g.Group)
		}
	}
	for _, g := range denied {
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		r.Groups = append(r.Groups, rg)
	}
	return now(r)
}

// consumerGroupTopics are the topics of a group's members' assignments
// and target assignments.
func consumerGroupTopics(g *kmsg.ConsumerGroupDescribeResponseGroup) []string {
	var out []string
	for _, m := range g.Members {
		for _, a := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
			for _, tp := range a.TopicPartitions {
				out = append(out, tp.Topic)
			}
		}
	}
	return out
}

// topicsHiddenMessage is KafkaApis' (KAFKA-18813) for a group the caller
// may describe but one of whose topics it may not.
const topicsHiddenMessage = "The group has described topic(s) that the client is not authorized to describe."

// topicsHidden is what KafkaApis.handleConsumerGroupDescribe answers for
// such a group: its id, TOPIC_AUTHORIZATION_FAILED, no members.
func topicsHidden(group string) kmsg.ConsumerGroupDescribeResponseGroup {
	g := kmsg.NewConsumerGroupDescribeResponseGroup()
	msg := topicsHiddenMessage
	g.Group, g.ErrorCode, g.ErrorMessage = group, kerr.TopicAuthorizationFailed.Code, &msg
	return g
}
