package wire

// The authorizer's questions, asked where Kafka's KafkaApis and AuthHelper
// ask them: each handler names the operation and resource it needs, and
// answers Kafka's error for a refusal (TOPIC_AUTHORIZATION_FAILED,
// GROUP_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED,
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED). Without Options.Authz every
// question is answered yes. The ACLs are the broker's image's: a change
// reaches this broker when it applies the metadata log's record.

import (
	"math"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/acl"
	"gregor/cluster/share"
)

// principal is the connection's KafkaPrincipal: its SASL user, or
// ANONYMOUS on a listener without SASL (or before authenticating).
func (a *connAuth) principal() string {
	if a == nil || a.phase != phaseDone || a.user == "" {
		return acl.Anonymous
	}
	return "User:" + a.user
}

func remoteHost(c net.Conn) string {
	addr := c.RemoteAddr()
	if addr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}

// authorized asks the authorizer whether the request's principal may do op
// on the resource.
func (s *Server) authorized(hdr header, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if s.opts.Authz == nil {
		return true
	}
	return s.opts.Authz.Authorize(s.b.Image().ACLs, acl.Action{Principal: hdr.principal, Host: hdr.host,
		Operation: op, ResourceType: rt, ResourceName: name})
}

// topicAuthorized, groupAuthorized, clusterAuthorized and
// txnIDAuthorized are authorized on one resource type.
func (s *Server) topicAuthorized(hdr header, op kmsg.ACLOperation, topic string) bool {
	return s.authorized(hdr, op, kmsg.ACLResourceTypeTopic, topic)
}

func (s *Server) groupAuthorized(hdr header, op kmsg.ACLOperation, group string) bool {
	return s.authorized(hdr, op, kmsg.ACLResourceTypeGroup, group)
}

func (s *Server) clusterAuthorized(hdr header, op kmsg.ACLOperation) bool {
	return s.authorized(hdr, op, kmsg.ACLResourceTypeCluster, acl.ClusterName)
}

func (s *Server) txnIDAuthorized(hdr header, op kmsg.ACLOperation, id string) bool {
	return s.authorized(hdr, op, kmsg.ACLResourceTypeTransactionalId, id)
}

// anyTopicAuthorized is Kafka 3.x's IDEMPOTENT_WRITE fallback
// (AuthHelper.authorizeByResourceType): op allowed on some topic.
func (s *Server) anyTopicAuthorized(hdr header, op kmsg.ACLOperation) bool {
	if s.opts.Authz == nil {
		return true
	}
	return s.opts.Authz.AuthorizeByResourceType(s.b.Image().ACLs, hdr.principal, hdr.host, op, kmsg.ACLResourceTypeTopic)
}

// topicReader is share.Reader for the request's principal: READ on the
// topic; nil (everything) without the authorizer.
func (s *Server) topicReader(hdr header) share.Reader {
	if s.opts.Authz == nil {
		return nil
	}
	return func(topic string) bool { return s.topicAuthorized(hdr, kmsg.ACLOperationRead, topic) }
}

// describesAll is AuthHelper.filterByAuthorized's answer for topics: the
// principal may DESCRIBE every one.
func (s *Server) describesAll(hdr header, topics []string) bool {
	for _, t := range topics {
		if !s.topicAuthorized(hdr, kmsg.ACLOperationDescribe, t) {
			return false
		}
	}
	return true
}

// createAuthorized is KafkaApis' CREATE check for a new topic: on the
// cluster, or on the topic.
func (s *Server) createAuthorized(hdr header, topic string) bool {
	return s.clusterAuthorized(hdr, kmsg.ACLOperationCreate) || s.topicAuthorized(hdr, kmsg.ACLOperationCreate, topic)
}

// requestChecks are the APIs one resource authorizes as a whole, as
// KafkaApis answers them: the code is the refusal's, set in the
// response's top-level error (errorResponse), 0 allowed. Per-item checks
// (Produce, Fetch, Metadata, ListOffsets, OffsetCommit, OffsetFetch,
// CreateTopics, DeleteTopics, the ACL APIs) are in their handlers.
var requestChecks = map[int16]func(s *Server, hdr header, req kmsg.Request) int16{
	11: func(s *Server, hdr header, r kmsg.Request) int16 {
		return s.groupCheck(hdr, kmsg.ACLOperationRead, r.(*kmsg.JoinGroupRequest).Group)
	},
	12: func(s *Server, hdr header, r kmsg.Request) int16 {
		return s.groupCheck(hdr, kmsg.ACLOperationRead, r.(*kmsg.HeartbeatRequest).Group)
	},
	13: func(s *Server, hdr header, r kmsg.Request) int16 {
		return s.groupCheck(hdr, kmsg.ACLOperationRead, r.(*kmsg.LeaveGroupRequest).Group)
	},
	14: func(s *Server, hdr header, r kmsg.Request) int16 {
		return s.groupCheck(hdr, kmsg.ACLOperationRead, r.(*kmsg.SyncGroupRequest).Group)
	},
	22: func(s *Server, hdr header, r kmsg.Request) int16 {
		return s.initProducerIDCheck(hdr, r.(*kmsg.InitProducerIDRequest))
	},
	24: func(s *Server, hdr header, _ kmsg.Request) int16 {
		if hdr.version < 4 {
			return 0 // a client's: checked per transaction in the handler
		}
		return clusterCheck(kmsg.ACLOperationClusterAction)(s, hdr, nil) // a leader's (KIP-890)
	},
	25: func(s *Server, hdr header, r kmsg.Request) int16 {
		req := r.(*kmsg.AddOffsetsToTxnRequest)
		if c := s.txnIDCheck(hdr, req.TransactionalID); c != 0 {
			return c
		}
		return s.groupCheck(hdr, kmsg.ACLOperationRead, req.Group)
	},
	26: func(s *Server, hdr header, r kmsg.Request) int16 {
		return s.txnIDCheck(hdr, r.(*kmsg.EndTxnRequest).TransactionalID)
	},
	47: func(s *Server, hdr header, r kmsg.Request) int16 {
		return s.groupCheck(hdr, kmsg.ACLOperationDelete, r.(*kmsg.OffsetDeleteRequest).Group)
	},
	// The KIP-848 and KIP-932 heartbeats: READ on the group, then (Kafka
	// 4.0, KAFKA-18813 and KAFKA-18817) DESCRIBE on every subscribed topic
	// named (a regex subscription's topics are not filtered here).
	68: func(s *Server, hdr header, r kmsg.Request) int16 {
		req := r.(*kmsg.ConsumerGroupHeartbeatRequest)
		if c := s.groupCheck(hdr, kmsg.ACLOperationRead, req.Group); c != 0 {
			return c
		}
		return s.subscribedCheck(hdr, req.SubscribedTopicNames)
	},
	76: func(s *Server, hdr header, r kmsg.Request) int16 {
		req := r.(*kmsg.ShareGroupHeartbeatRequest)
		if c := s.groupCheck(hdr, kmsg.ACLOperationRead, req.GroupID); c != 0 {
			return c
		}
		return s.subscribedCheck(hdr, req.SubscribedTopicNames)
	},
	// KIP-932's share reads: READ on the group (each topic's READ is
	// asked per partition, share.Reader).
	78: func(s *Server, hdr header, r kmsg.Request) int16 {
		return s.groupCheck(hdr, kmsg.ACLOperationRead, deref(r.(*kmsg.ShareFetchRequest).GroupID))
	},
	79: func(s *Server, hdr header, r kmsg.Request) int16 {
		return s.groupCheck(hdr, kmsg.ACLOperationRead, deref(r.(*kmsg.ShareAcknowledgeRequest).GroupID))
	},
	// The cluster's admin APIs: ALTER, or DESCRIBE to look.
	35: clusterCheck(kmsg.ACLOperationDescribe),
	43: clusterCheck(kmsg.ACLOperationAlter),
	45: clusterCheck(kmsg.ACLOperationAlter),
	46: clusterCheck(kmsg.ACLOperationDescribe),
	50: clusterCheck(kmsg.ACLOperationDescribe),
	// The controller RPCs: CLUSTER_ACTION, the brokers' own (super user).
	56: clusterCheck(kmsg.ACLOperationClusterAction),
	62: clusterCheck(kmsg.ACLOperationClusterAction),
	63: clusterCheck(kmsg.ACLOperationClusterAction),
}

// clusterCheck asks for op on the cluster (CLUSTER_AUTHORIZATION_FAILED).
func clusterCheck(op kmsg.ACLOperation) func(s *Server, hdr header, _ kmsg.Request) int16 {
	return func(s *Server, hdr header, _ kmsg.Request) int16 {
		if s.clusterAuthorized(hdr, op) {
			return 0
		}
		return kerr.ClusterAuthorizationFailed.Code
	}
}

func (s *Server) groupCheck(hdr header, op kmsg.ACLOperation, group string) int16 {
	if s.groupAuthorized(hdr, op, group) {
		return 0
	}
	return kerr.GroupAuthorizationFailed.Code
}

// subscribedCheck is TOPIC_AUTHORIZATION_FAILED unless the principal may
// DESCRIBE every subscribed topic.
func (s *Server) subscribedCheck(hdr header, topics []string) int16 {
	if s.describesAll(hdr, topics) {
		return 0
	}
	return kerr.TopicAuthorizationFailed.Code
}

func (s *Server) txnIDCheck(hdr header, id string) int16 {
	if s.txnIDAuthorized(hdr, kmsg.ACLOperationWrite, id) {
		return 0
	}
	return kerr.TransactionalIDAuthorizationFailed.Code
}

// initProducerIDCheck is KafkaApis.handleInitProducerIdRequest: WRITE on
// the transactional id; without one, IDEMPOTENT_WRITE on the cluster or
// (Kafka 3.x, KIP-679) WRITE on some topic.
func (s *Server) initProducerIDCheck(hdr header, req *kmsg.InitProducerIDRequest) int16 {
	if req.TransactionalID != nil {
		return s.txnIDCheck(hdr, *req.TransactionalID)
	}
	if s.clusterAuthorized(hdr, kmsg.ACLOperationIdempotentWrite) || s.anyTopicAuthorized(hdr, kmsg.ACLOperationWrite) {
		return 0
	}
	return kerr.ClusterAuthorizationFailed.Code
}

// checkRequest answers a request its whole-request check refuses; ok false
// lets it through.
func (s *Server) checkRequest(hdr header, req kmsg.Request) (reply, bool) {
	check := requestChecks[hdr.key]
	if s.opts.Authz == nil || check == nil {
		return reply{}, false
	}
	code := check(s, hdr, req)
	if code == 0 {
		return reply{}, false
	}
	resp := errorResponse(req, code)
	if ip, ok := resp.(*kmsg.InitProducerIDResponse); ok {
		ip.ProducerID, ip.ProducerEpoch = -1, -1
	}
	return now(resp), true
}

// authorizedGroups splits groups into those the principal may do op on
// and those it may not, as AuthHelper.partitionSeqByAuthorized: the denied
// ones are answered GROUP_AUTHORIZATION_FAILED, the rest go on.
func (s *Server) authorizedGroups(hdr header, op kmsg.ACLOperation, groups []string) (allowed, denied []string) {
	if s.opts.Authz == nil {
		return groups, nil
	}
	for _, g := range groups {
		if s.groupAuthorized(hdr, op, g) {
			allowed = append(allowed, g)
		} else {
			denied = append(denied, g)
		}
	}
	return allowed, denied
}

// deref is a nullable string's value, "" for null.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// supportedOperations are the operations an ACL may name on each resource
// type (AclEntry.supportedOperations).
var supportedOperations = map[kmsg.ACLResourceType][]kmsg.ACLOperation{
	kmsg.ACLResourceTypeCluster: {kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs,
		kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe},
	kmsg.ACLResourceTypeTopic: {kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs},
	kmsg.ACLResourceTypeGroup: {kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs},
}

// authorizedOperations is AuthHelper.authorizedOperations: bit 1<<code of
// each operation the principal may do on the resource (every supported
// one without the authorizer).
func (s *Server) authorizedOperations(hdr header, rt kmsg.ACLResourceType, name string) int32 {
	var bits int32
	for _, op := range supportedOperations[rt] {
		if s.authorized(hdr, op, rt, name) {
			bits |= 1 << int8(op)
		}
	}
	return bits
}

// clusterAuthorizedOperations is authorizedOperations on the cluster.
func (s *Server) clusterAuthorizedOperations(hdr header) int32 {
	return s.authorizedOperations(hdr, kmsg.ACLResourceTypeCluster, acl.ClusterName)
}

// notRequested is the authorized-operations fields' schema default
// (Integer.MIN_VALUE): not asked for.
const notRequested = math.MinInt32
