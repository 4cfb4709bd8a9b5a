package wire

// DescribeGroups: v0-5. Unknown groups are described as Dead.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(15, 0, 5, handleDescribeGroups) }

func handleDescribeGroups(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.DescribeGroupsRequest)
	c := s.coordinator()
	if c == nil {
		resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, g := range req.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.CoordinatorNotAvailable.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return now(resp)
	}
	r := c.DescribeGroups(req)
	r.SetVersion(req.Version)
	return now(r)
}
