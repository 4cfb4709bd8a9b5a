package wire

// DescribeAcls: v1-3 (Kafka 4's range; v0, before pattern types, was
// removed by KIP-896).
//
// Behaviour: CLUSTER DESCRIBE is checked (CLUSTER_AUTHORIZATION_FAILED
// otherwise, AclApis.handleDescribeAcls); the filter is validated
// (INVALID_REQUEST for an UNKNOWN field) and matched against this broker's
// image, the metadata log's ACL bindings as this broker has applied them;
// the answer groups the bindings by resource pattern, as AclApis does.
// Without --authorizer Kafka answers SECURITY_DISABLED; so does gregor.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/acl"
)

func init() { register(29, 1, 3, handleDescribeACLs) }

func handleDescribeACLs(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if s.opts.Authz == nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr("No Authorizer is configured on the broker")
		return now(resp)
	}
	if !s.clusterAuthorized(hdr, kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return now(resp)
	}
	f := acl.Filter{ResourceType: req.ResourceType, ResourceName: req.ResourceName, PatternType: req.ResourcePatternType,
		Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType}
	if e := f.Validate(); e != nil {
		resp.ErrorCode, resp.ErrorMessage = e.Code, kmsg.StringPtr(e.Msg)
		return now(resp)
	}
	type pattern struct {
		rt   kmsg.ACLResourceType
		name string
		pt   kmsg.ACLResourcePatternType
	}
	at := map[pattern]int{}
	for _, b := range s.b.Image().ACLs {
		if !f.Matches(b) {
			continue
		}
		p := pattern{b.ResourceType, b.ResourceName, b.PatternType}
		i, ok := at[p]
		if !ok {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName, r.ResourcePatternType = p.rt, p.name, p.pt
			i = len(resp.Resources)
			at[p] = i
			resp.Resources = append(resp.Resources, r)
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, a)
	}
	return now(resp)
}
