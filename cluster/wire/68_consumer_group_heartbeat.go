package wire

// ConsumerGroupHeartbeat: v0-1 (KIP-848; v1: SubscribedTopicRegex, the
// client names its member id, KIP-1082).
//
// Behaviour (cluster/group): join at epoch 0, leave at -1 (-2 static),
// member and group epochs, the server-side uniform and range assignors,
// revoke-before-assign reconciliation, the broker's session and rebalance
// timeouts; answered once the records it wrote to __consumer_offsets are
// committed, on the connection's writing side.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(68, 0, 1, handleConsumerGroupHeartbeat) }

func handleConsumerGroupHeartbeat(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.ConsumerGroupHeartbeatRequest)
	c := s.coordinator()
	if !s.opts.ConsumerProtocol || c == nil {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		if !s.opts.ConsumerProtocol {
			resp.ErrorCode = kerr.UnsupportedVersion.Code // KafkaApis, protocol off
		}
		return now(resp)
	}
	wait := c.ConsumerGroupHeartbeat(ctx, hdr.clientID, "", req)
	return reply{later: func() kmsg.Response {
		r := wait()
		r.SetVersion(req.Version)
		return r
	}}
}

// consumerProtocolKey is whether key belongs to KIP-848's consumer protocol,
// offered only with Options.ConsumerProtocol. Kafka answers these
// UNSUPPORTED_VERSION when the protocol is off
// (KafkaApis.handleConsumerGroupHeartbeat); gregor also leaves them out of
// ApiVersions, since franz-go chooses the protocol by key 68's presence.
func consumerProtocolKey(key int16) bool { return key == 68 || key == 69 }

// groupVersionFeature is Kafka's GroupVersion.FEATURE_NAME: level 1 turns on
// the consumer protocol (Kafka 4's default).
const groupVersionFeature = "group.version"

// addGroupVersion advertises group.version 1, supported and finalized
// (KIP-584 features, ApiVersions v3+): set once, with the cluster.
func addGroupVersion(resp *kmsg.ApiVersionsResponse) {
	sf := kmsg.NewApiVersionsResponseSupportedFeature()
	sf.Name, sf.MinVersion, sf.MaxVersion = groupVersionFeature, 0, 1
	resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	ff := kmsg.NewApiVersionsResponseFinalizedFeature()
	ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = groupVersionFeature, 1, 1
	resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	resp.FinalizedFeaturesEpoch = 1
}
