package wire

// FindCoordinator: v0-6 (v4: a batch of CoordinatorKeys, KIP-699; v5: the
// client understands TRANSACTION_ABORTABLE, KIP-890, which a lookup never
// answers; v6: key type SHARE, KIP-932).
//
// Behaviour:
//   - group keys (type 0): the leader of the group's __consumer_offsets
//     partition (Kafka's abs(hashCode) % partitions); the topic is created
//     on first use; COORDINATOR_NOT_AVAILABLE while it has no leader;
//   - transaction keys (type 1): the leader of the transactional id's
//     __transaction_state partition (the same hash), the topic created on
//     first use;
//   - share keys (type 2, v6+: KafkaApis.getCoordinator answers
//     INVALID_REQUEST below): "groupId:topicId:partition", the leader of
//     the share partition's __share_group_state partition (the share
//     coordinator, ShareCoordinatorService.partitionFor); a broker without
//     share groups answers COORDINATOR_NOT_AVAILABLE, as Kafka's does;
//   - other types: INVALID_REQUEST;
//   - with the authorizer, DESCRIBE on the group or TransactionalId, and
//     CLUSTER_ACTION for a share key, first (coordinatorRefusal).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(10, 0, 6, handleFindCoordinator) }

// ShareCoordinatorFinder is implemented by brokers that can name a share
// partition's share coordinator (FindCoordinator key type SHARE); msg
// explains an INVALID_REQUEST.
type ShareCoordinatorFinder interface {
	FindShareCoordinator(ctx context.Context, key string) (c Coordinator, e *kerr.Error, msg string)
}

// coordinatorTypeShare is Kafka's CoordinatorType.SHARE and the first
// FindCoordinator version that may ask for it.
const (
	coordinatorTypeShare int8  = 2
	shareLookupVersion   int16 = 6
)

func handleFindCoordinator(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key, rc.NodeID, rc.Port = key, -1, -1
		e := s.coordinatorRefusal(hdr, req.CoordinatorType, key)
		var c Coordinator
		gb, isGroup := s.b.(GroupBackend)
		tb, isTxn := s.b.(TxnBackend)
		sf, isShare := s.b.(ShareCoordinatorFinder)
		switch {
		case e != nil: // refused before any lookup
		case req.CoordinatorType == coordinatorTypeShare && req.Version >= shareLookupVersion && isShare:
			var msg string
			if c, e, msg = sf.FindShareCoordinator(ctx, key); msg != "" {
				rc.ErrorMessage = &msg
			}
		case req.CoordinatorType == coordinatorTypeShare && req.Version >= shareLookupVersion:
			e = kerr.CoordinatorNotAvailable
		case req.CoordinatorType == 1 && isTxn:
			c, e = tb.FindTxnCoordinator(ctx, key)
		case req.CoordinatorType == 0 && isGroup:
			c, e = gb.FindCoordinator(ctx, key)
		case req.CoordinatorType == 0 || req.CoordinatorType == 1:
			e = kerr.CoordinatorNotAvailable
		default:
			e = kerr.InvalidRequest
			msg := "coordinator type must be 0 (group), 1 (transaction) or, from version 6, 2 (share)"
			rc.ErrorMessage = &msg
		}
		if e == nil {
			rc.NodeID, rc.Host, rc.Port = c.NodeID, c.Host, c.Port
		}
		if e != nil {
			rc.ErrorCode = e.Code
		}
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	if req.Version < 4 {
		rc := resp.Coordinators[0]
		resp.Coordinators = nil
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = rc.ErrorCode, rc.ErrorMessage, rc.NodeID, rc.Host, rc.Port
	}
	return now(resp)
}

// coordinatorRefusal is KafkaApis.getCoordinator's authorization, before
// any lookup: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or on the
// TransactionalId (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); a share
// partition's coordinator is the brokers' own question, CLUSTER_ACTION on
// the cluster (Kafka throws, failing every key: the type is the request's).
func (s *Server) coordinatorRefusal(hdr header, keyType int8, key string) *kerr.Error {
	switch {
	case keyType == 0 && !s.groupAuthorized(hdr, kmsg.ACLOperationDescribe, key):
		return kerr.GroupAuthorizationFailed
	case keyType == 1 && !s.txnIDAuthorized(hdr, kmsg.ACLOperationDescribe, key):
		return kerr.TransactionalIDAuthorizationFailed
	case keyType == coordinatorTypeShare && hdr.version >= shareLookupVersion && !s.clusterAuthorized(hdr, kmsg.ACLOperationClusterAction):
		return kerr.ClusterAuthorizationFailed
	}
	return nil
}
