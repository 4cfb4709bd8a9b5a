package wire

// ConsumerGroupDescribe: v0-1 (KIP-848; v1: MemberType). A group that is
// not a consumer group is GROUP_ID_NOT_FOUND.

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
	for _, g := range denied {
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		r.Groups = append(r.Groups, rg)
	}
	return now(r)
}
