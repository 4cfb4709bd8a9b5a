package wire

// Metadata: v0-12.
//
// Behaviour:
//   - brokers are the registered, unfenced brokers; the controller id is the
//     active controller when it is a live broker, else a live broker (which
//     forwards controller requests, as KRaft brokers do);
//   - v0 is served because kafka-python's version probe sends Metadata v0
//     right behind ApiVersions v0 on the same connection: refusing it closed
//     the connection, and kafka-python 2.0.2 drops the bytes it read when it
//     sees the close, so the ApiVersions answer was lost and the broker
//     taken for Kafka 0.9 (IncompatibleBrokerVersion in KafkaAdminClient);
//   - a nil topic list (v0: an empty one) means all topics; topics may be named or (v10+) given
//     by id;
//   - a missing topic is created with the broker defaults only when the
//     request allows it AND the broker was started with auto-creation on;
//     the answer is then LEADER_NOT_AVAILABLE, as in Kafka, and clients retry;
//   - a partition without a live leader answers LEADER_NOT_AVAILABLE with
//     leader -1; fenced replicas are listed as offline;
//   - with the authorizer (KafkaApis.handleTopicMetadataRequest): all topics
//     are the ones the principal may DESCRIBE; a named one it may not is
//     TOPIC_AUTHORIZATION_FAILED, as is one it may not CREATE (on the
//     cluster or the topic) when the request would auto-create it;
//   - the authorized operations (v8+) when asked: each described topic's,
//     and (v8-10) the cluster's, as AuthHelper.authorizedOperations.

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/meta"
)

func init() { register(3, 0, 12, handleMetadata) }

func handleMetadata(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	im := s.b.Image()
	for _, b := range liveBrokers(im) {
		rb := kmsg.NewMetadataResponseBroker()
		rb.NodeID, rb.Host, rb.Port = b.ID, b.Host, b.Port
		resp.Brokers = append(resp.Brokers, rb)
	}
	cid := s.b.ClusterID()
	resp.ClusterID = &cid
	// Clients send admin requests to the "controller"; like KRaft brokers we
	// name a live broker when the active controller is not one (a
	// controller-only voter), and brokers forward to the real one.
	resp.ControllerID = s.controllerForClients(im)

	var names []string
	if req.Topics == nil || req.Version == 0 && len(req.Topics) == 0 {
		// KafkaApis: all topics means all the principal may DESCRIBE.
		names = slices.DeleteFunc(im.SortedTopics(), func(n string) bool { return !s.topicAuthorized(hdr, kmsg.ACLOperationDescribe, n) })
	}
	byID := map[string]bool{} // the topics the request names by ID
	for _, rt := range req.Topics {
		if rt.Topic != nil {
			names = append(names, *rt.Topic)
			continue
		}
		if t := im.TopicByID(rt.TopicID); t != nil {
			names = append(names, t.Name)
			byID[t.Name] = true
		} else {
			mt := kmsg.NewMetadataResponseTopic()
			mt.TopicID = rt.TopicID
			mt.ErrorCode = kerr.UnknownTopicID.Code
			resp.Topics = append(resp.Topics, mt)
		}
	}
	for _, name := range names {
		t := im.Topics[name]
		mt := kmsg.NewMetadataResponseTopic()
		n := name
		mt.Topic = &n
		if !s.topicAuthorized(hdr, kmsg.ACLOperationDescribe, name) {
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			if byID[name] {
				// KafkaApis.handleTopicMetadataRequest: asked by ID, the
				// ID is answered and the name withheld (null).
				mt.Topic, mt.TopicID = nil, t.ID
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if t == nil {
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if req.AllowAutoTopicCreation && s.b.AutoCreateTopics() && req.Topics != nil && !s.createAuthorized(hdr, name) {
				mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			s.topicOperations(hdr, req, &mt, name)
			if req.AllowAutoTopicCreation && s.b.AutoCreateTopics() && req.Topics != nil {
				if _, kerrCode, _ := s.b.CreateTopic(ctx, TopicSpec{Name: name, Partitions: -1, RF: -1}); kerrCode == nil || kerrCode == kerr.TopicAlreadyExists {
					mt.ErrorCode = kerr.LeaderNotAvailable.Code
				}
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		s.topicOperations(hdr, req, &mt, name)
		mt.TopicID = t.ID
		mt.IsInternal = t.Internal
		for _, p := range t.Partitions {
			mp := kmsg.NewMetadataResponseTopicPartition()
			mp.Partition = p.Index
			mp.Leader = p.Leader
			mp.LeaderEpoch = p.LeaderEpoch
			mp.Replicas = append([]int32(nil), p.Replicas...)
			mp.ISR = append([]int32(nil), p.ISR...)
			for _, r := range p.Replicas {
				if b, ok := im.Brokers[r]; !ok || b.Fenced {
					mp.OfflineReplicas = append(mp.OfflineReplicas, r)
				}
			}
			if p.Leader == meta.NoLeader {
				mp.ErrorCode = kerr.LeaderNotAvailable.Code
			}
			mt.Partitions = append(mt.Partitions, mp)
		}
		resp.Topics = append(resp.Topics, mt)
	}
	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		// KafkaApis: the cluster's operations to a principal that may
		// DESCRIBE it, else none (v11+ asks DescribeCluster, KIP-700).
		resp.AuthorizedOperations = 0
		if s.clusterAuthorized(hdr, kmsg.ACLOperationDescribe) {
			resp.AuthorizedOperations = s.clusterAuthorizedOperations(hdr)
		}
	}
	return now(resp)
}

// topicOperations sets a described topic's authorized operations when
// asked (v8+, IncludeTopicAuthorizedOperations): KafkaApis sets them on
// the topics the principal may describe, including the unknown ones it
// answers, and leaves the refused ones at the schema's default.
func (s *Server) topicOperations(hdr header, req *kmsg.MetadataRequest, mt *kmsg.MetadataResponseTopic, name string) {
	if req.Version >= 8 && req.IncludeTopicAuthorizedOperations {
		mt.AuthorizedOperations = s.authorizedOperations(hdr, kmsg.ACLResourceTypeTopic, name)
	}
}

// controllerForClients is the node Metadata and DescribeCluster name as the
// controller: the active controller when it is a live broker, else this
// broker if live, else the lowest live broker id (-1 with none). Like KRaft
// brokers, the one named forwards controller requests to the real one.
func (s *Server) controllerForClients(im *meta.Image) int32 {
	live := func(id int32) bool { b, ok := im.Brokers[id]; return ok && !b.Fenced }
	if live(im.ControllerID) {
		return im.ControllerID
	}
	if live(s.b.NodeID()) {
		return s.b.NodeID()
	}
	for _, id := range sortedBrokerIDs(im) {
		if live(id) {
			return id
		}
	}
	return -1
}

// liveBrokers are the registered, unfenced brokers in id order: the ones
// Metadata and DescribeCluster show clients.
func liveBrokers(im *meta.Image) []meta.Broker {
	var out []meta.Broker
	for _, id := range sortedBrokerIDs(im) {
		if b := im.Brokers[id]; !b.Fenced {
			out = append(out, b)
		}
	}
	return out
}

func sortedBrokerIDs(im *meta.Image) []int32 {
	return slices.Sorted(maps.Keys(im.Brokers))
}
