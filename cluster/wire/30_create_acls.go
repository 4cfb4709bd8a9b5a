package wire

// CreateAcls: v1-3 (Kafka 4's range, KIP-896).
//
// Behaviour: CLUSTER ALTER is checked here (every creation answered
// CLUSTER_AUTHORIZATION_FAILED otherwise, AclApis.handleCreateAcls), then
// the request is forwarded to the active controller (KIP-590), which
// validates each creation as AclControlManager.createAcls does and writes
// the new bindings as one record of the metadata log (cluster/controller,
// acls.go); a broker enforces them once it has applied that record. A
// broker without --authorizer answers SECURITY_DISABLED; a single broker
// (no quorum) INVALID_REQUEST naming the fix.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/acl"
)

func init() { register(30, 1, 3, handleACLChange) }

// handleACLChange serves CreateAcls and DeleteAcls: the broker's checks,
// then the controller.
func handleACLChange(s *Server, ctx context.Context, hdr header, req kmsg.Request) reply {
	code := int16(0)
	switch {
	case s.opts.Authz == nil:
		code = kerr.SecurityDisabled.Code
	case !s.clusterAuthorized(hdr, kmsg.ACLOperationAlter):
		code = kerr.ClusterAuthorizationFailed.Code
	default:
		return forwardToController(s, ctx, hdr, req)
	}
	if resp := acl.ErrorResponse(req, code, nil); resp != nil {
		return now(resp)
	}
	return unsupported(hdr)
}
