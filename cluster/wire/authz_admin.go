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

// splitRefused keeps the items check lets through and answers the rest
// with check's refusal.
func splitRefused[T, R any](items []T, check func(T) (R, bool)) (kept []T, refused []R) {
	for _, it := range items {
		if r, no := check(it); no {
			refused = append(refused, r)
		} else {
			kept = append(kept, it)
		}
	}
	return kept, refused
}

// handleAlterConfigs: ALTER_CONFIGS on each resource
// (ConfigAdminManager.authorizeResources).
func handleAlterConfigs(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.AlterConfigsRequest)
	if s.opts.Authz == nil {
		return forwardToController(s, ctx, hdr, req)
	}
	cp := *req
	var denied []kmsg.AlterConfigsResponseResource
	cp.Resources, denied = splitRefused(req.Resources, func(r kmsg.AlterConfigsRequestResource) (kmsg.AlterConfigsResponseResource, bool) {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		rr.ErrorCode = s.configCheck(hdr, kmsg.ACLOperationAlterConfigs, r.ResourceType, r.ResourceName)
		return rr, rr.ErrorCode != 0
	})
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
	var denied []kmsg.IncrementalAlterConfigsResponseResource
	cp.Resources, denied = splitRefused(req.Resources, func(r kmsg.IncrementalAlterConfigsRequestResource) (kmsg.IncrementalAlterConfigsResponseResource, bool) {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		rr.ErrorCode = s.configCheck(hdr, kmsg.ACLOperationAlterConfigs, r.ResourceType, r.ResourceName)
		return rr, rr.ErrorCode != 0
	})
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
	var denied []kmsg.CreatePartitionsResponseTopic
	cp.Topics, denied = splitRefused(req.Topics, func(t kmsg.CreatePartitionsRequestTopic) (kmsg.CreatePartitionsResponseTopic, bool) {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		if !s.topicAuthorized(hdr, kmsg.ACLOperationAlter, t.Topic) {
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		}
		return rt, rt.ErrorCode != 0
	})
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
