package wire

// DescribeCluster: v0-1 (KIP-700).
//
// Behaviour: the cluster id, the live (unfenced) brokers, and as controller
// the node Metadata names (controllerForClients: KRaft brokers name a live
// broker, which forwards controller requests). Answered to every
// principal; the cluster's authorized operations only when asked
// (AuthHelper.authorizedOperations: a bit per operation allowed, each of
// them without the authorizer), -2^31 otherwise. v1's EndpointType 1 (brokers) is
// the only endpoint type served; 2 (controllers) is
// UNSUPPORTED_ENDPOINT_TYPE, as Kafka brokers answer (KIP-919).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(60, 0, 1, handleDescribeCluster) }

func handleDescribeCluster(s *Server, _ context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ClusterAuthorizedOperations = -2147483648 // Integer.MIN_VALUE: not requested
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = s.clusterAuthorizedOperations(hdr)
	}
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		resp.ErrorMessage = kmsg.StringPtr("only broker endpoints (type 1) are described")
		return now(resp)
	}
	resp.EndpointType = 1
	im := s.b.Image()
	resp.ClusterID = s.b.ClusterID()
	resp.ControllerID = s.controllerForClients(im)
	for _, b := range liveBrokers(im) {
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port = b.ID, b.Host, b.Port
		resp.Brokers = append(resp.Brokers, rb)
	}
	return now(resp)
}
