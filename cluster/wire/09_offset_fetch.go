package wire

// OffsetFetch: v0-9 (v8: several groups; v9: a consumer group member's id
// and epoch, STALE_MEMBER_EPOCH / UNKNOWN_MEMBER_ID, KIP-848). Partitions
// without a commit answer offset -1; null topics (v2+) return every commit.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(9, 0, 9, handleOffsetFetch) }

func handleOffsetFetch(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.OffsetFetchRequest)
	c := s.coordinator()
	if c == nil {
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		for _, g := range req.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, kerr.CoordinatorNotAvailable.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return now(resp)
	}
	if s.opts.Authz != nil && req.Version < 8 && !s.groupAuthorized(hdr, kmsg.ACLOperationDescribe, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return now(resp)
	}
	var denied []kmsg.OffsetFetchResponseGroup
	if s.opts.Authz != nil && req.Version >= 8 {
		cp := *req
		cp.Groups = nil
		for _, g := range req.Groups {
			if s.groupAuthorized(hdr, kmsg.ACLOperationDescribe, g.Group) {
				cp.Groups = append(cp.Groups, g)
				continue
			}
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, kerr.GroupAuthorizationFailed.Code
			denied = append(denied, rg)
		}
		req = &cp
	}
	r := c.OffsetFetch(req)
	r.SetVersion(req.Version)
	r.Groups = append(r.Groups, denied...)
	return now(r)
}
