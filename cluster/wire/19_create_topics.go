package wire

// CreateTopics: v2-7.
//
// Behaviour:
//   - NumPartitions / ReplicationFactor of -1 take the broker defaults;
//     explicit replica assignments are refused (INVALID_REQUEST);
//   - configs are validated (min.insync.replicas must be <= the replication
//     factor: otherwise acks=all could never succeed, and we say so);
//   - ValidateOnly validates without creating;
//   - in a cluster the active controller creates the topic and brokers learn
//     it from the replicated metadata.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(19, 2, 7, handleCreateTopics) }

func handleCreateTopics(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		if !s.createAuthorized(hdr, t.Topic) {
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code // KafkaApis: CREATE on the cluster or the topic
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		if len(t.ReplicaAssignment) > 0 {
			rt.ErrorCode = kerr.InvalidRequest.Code
			msg := "explicit replica assignments are not supported; give NumPartitions and ReplicationFactor"
			rt.ErrorMessage = &msg
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		spec := TopicSpec{Name: t.Topic, Partitions: t.NumPartitions, RF: t.ReplicationFactor, Configs: map[string]string{}, ValidateOnly: req.ValidateOnly}
		for _, c := range t.Configs {
			if c.Value != nil {
				spec.Configs[c.Name] = *c.Value
			}
		}
		topic, e, msg := s.b.CreateTopic(ctx, spec)
		if e != nil {
			rt.ErrorCode = e.Code
			if msg != "" {
				rt.ErrorMessage = &msg
			}
		} else if topic != nil {
			rt.TopicID = topic.ID
			rt.NumPartitions = int32(len(topic.Partitions))
			if len(topic.Partitions) > 0 {
				rt.ReplicationFactor = int16(len(topic.Partitions[0].Replicas))
			}
			for k, v := range topic.Configs {
				c := kmsg.NewCreateTopicsResponseTopicConfig()
				c.Name = k
				val := v
				c.Value = &val
				c.Source = int8(kmsg.ConfigSourceDynamicTopicConfig)
				rt.Configs = append(rt.Configs, c)
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return now(resp)
}
