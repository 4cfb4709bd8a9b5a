package wire

// The admin APIs' per-item checks, as KafkaApis, ConfigAdminManager and
// ControllerApis ask them: an item refused is answered with its code and
// never reaches the controller; the rest are forwarded as one request.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/controller"
)

// configCheck is the check of a config resource (DESCRIBE_CONFIGS or
// ALTER_CONFIGS): a topic's on the topic (TOPIC_AUTHORIZATION_FAILED), a
// group's on the group (GROUP_AUTHORIZATION_FAILED), a broker's, a broker
// logger's and client metrics' on the cluster (CLUSTER_AUTHORIZATION_FAILED).
func (s *Server) configCheck(hdr header, op kmsg.ACLOperation, rt kmsg.ConfigResourceType, name string) int16 {
	switch rt {
	case kmsg.ConfigResourceTypeTopic:
		if !s.topicAuthorized(hdr, op, name) {
			return kerr.TopicAuthorizationFailed.Code
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if !s.groupAuthorized(hdr, op, name) {
			return kerr.GroupAuthorizationFailed.Code
		}
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics:
		if !s.clusterAuthorized(hdr, op) {
			return kerr.ClusterAuthorizationFailed.Code
		}
	}
	return 0
}

// forwardThen forwards req (its authorized items) to the controller and
// lets add append the refused ones to the answer; with none left it is
// not forwarded.
func (s *Server) forwardThen(ctx context.Context, hdr header, req kmsg.Request, some bool, add func(kmsg.Response)) reply {
	if !some {
		resp := req.ResponseKind()
		add(resp)
		return now(resp)
	}
	r := forwardToController(s, ctx, hdr, req)
	if r.resp != nil {
		add(r.resp)
	}
	return r
}

// handleAlterConfigs: ALTER_CONFIGS on each resource
// (ConfigAdminManager.authorizeResources).
func handleAlterConfigs(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.AlterConfigsRequest)
	if s.opts.Authz == nil {
		return forwardToController(s, ctx, hdr, req)
	}
	cp := *req
	cp.Resources = nil
	var denied []kmsg.AlterConfigsResponseResource
	for _, r := range req.Resources {
		if c := s.configCheck(hdr, kmsg.ACLOperationAlterConfigs, r.ResourceType, r.ResourceName); c != 0 {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = r.ResourceType, r.ResourceName, c
			denied = append(denied, rr)
			continue
		}
		cp.Resources = append(cp.Resources, r)
	}
	return s.forwardThen(ctx, hdr, &cp, len(cp.Resources) > 0, func(resp kmsg.Response) {
		r := resp.(*kmsg.AlterConfigsResponse)
		r.Resources = append(r.Resources, denied...)
	})
}

// handleIncrementalAlterConfigs: ALTER_CONFIGS on each resource.
func handleIncrementalAlterConfigs(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.IncrementalAlterConfigsRequest)
	if s.opts.Authz == nil {
		return forwardToController(s, ctx, hdr, req)
	}
	cp := *req
	cp.Resources = nil
	var denied []kmsg.IncrementalAlterConfigsResponseResource
	for _, r := range req.Resources {
		if c := s.configCheck(hdr, kmsg.ACLOperationAlterConfigs, r.ResourceType, r.ResourceName); c != 0 {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = r.ResourceType, r.ResourceName, c
			denied = append(denied, rr)
			continue
		}
		cp.Resources = append(cp.Resources, r)
	}
	return s.forwardThen(ctx, hdr, &cp, len(cp.Resources) > 0, func(resp kmsg.Response) {
		r := resp.(*kmsg.IncrementalAlterConfigsResponse)
		r.Resources = append(r.Resources, denied...)
	})
}

// handleCreatePartitions: ALTER on each topic (ControllerApis
// .handleCreatePartitions: TOPIC_AUTHORIZATION_FAILED).
func handleCreatePartitions(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	if s.opts.Authz == nil {
		return forwardToController(s, ctx, hdr, req)
	}
	cp := *req
	cp.Topics = nil
	var denied []kmsg.CreatePartitionsResponseTopic
	for _, t := range req.Topics {
		if !s.topicAuthorized(hdr, kmsg.ACLOperationAlter, t.Topic) {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
			denied = append(denied, rt)
			continue
		}
		cp.Topics = append(cp.Topics, t)
	}
	return s.forwardThen(ctx, hdr, &cp, len(cp.Topics) > 0, func(resp kmsg.Response) {
		r := resp.(*kmsg.CreatePartitionsResponse)
		r.Topics = append(r.Topics, denied...)
	})
}

// handleAlterUserScramCredentials: ALTER on the cluster, or every user's
// result CLUSTER_AUTHORIZATION_FAILED (ControllerApis
// .handleAlterUserScramCredentials, the request's getErrorResponse).
func handleAlterUserScramCredentials(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.AlterUserSCRAMCredentialsRequest)
	if s.clusterAuthorized(hdr, kmsg.ACLOperationAlter) {
		return forwardToController(s, ctx, hdr, req)
	}
	return now(controller.ErrorResponse(req, kerr.ClusterAuthorizationFailed.Code, ""))
}
