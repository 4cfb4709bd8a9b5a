package wire

// DeleteTopics: v1-6.
//
// Behaviour: topics by name, or (v6) by id; an unknown topic answers
// UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID by id). Replicas are closed
// and their logs removed once the deletion is published.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(20, 1, 6, handleDeleteTopics) }

func handleDeleteTopics(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	var targets []struct {
		name *string
		id   [16]byte
	}
	for _, n := range req.TopicNames {
		name := n
		targets = append(targets, struct {
			name *string
			id   [16]byte
		}{&name, [16]byte{}})
	}
	for _, t := range req.Topics {
		targets = append(targets, struct {
			name *string
			id   [16]byte
		}{t.Topic, t.TopicID})
	}
	im := s.b.Image()
	for _, t := range targets {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.TopicID = t.id
		name := ""
		if t.name != nil {
			name = *t.name
		} else if topic := im.TopicByID(t.id); topic != nil {
			name = topic.Name
		} else {
			rt.ErrorCode = kerr.UnknownTopicID.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		n := name
		rt.Topic = &n
		if !s.topicAuthorized(hdr, kmsg.ACLOperationDelete, name) {
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code // KafkaApis: DELETE on the topic
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		if topic := im.Topics[name]; topic != nil {
			rt.TopicID = topic.ID
		}
		if e, msg := s.b.DeleteTopic(ctx, name); e != nil {
			rt.ErrorCode = e.Code
			if msg != "" {
				rt.ErrorMessage = &msg
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return now(resp)
}
