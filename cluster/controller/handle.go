package controller

import (
	"context"
	"errors"
	"fmt"
	"gregor/cluster/faultpoint"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Handle answers a controller RPC: AlterPartition (56), BrokerRegistration
// (62), BrokerHeartbeat (63), and the admin requests brokers forward:
// CreateTopics (19), DeleteTopics (20), AlterConfigs (33), CreatePartitions
// (37), ElectLeaders (43), IncrementalAlterConfigs (44) and
// AlterPartitionReassignments (45), CreateAcls (30), DeleteAcls (31) and
// AlterUserScramCredentials (51). The response has the request's version. A node
// that is not the active controller answers NOT_CONTROLLER (in the error
// field(s) of the response, as Kafka does); a raft leader still applying
// its predecessors' entries first waits to become active. The error return
// is only for keys it does not handle.
func (c *Controller) Handle(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if Handles(req.Key()) {
		c.awaitActive(ctx)
	}
	switch r := req.(type) {
	case *kmsg.BrokerRegistrationRequest:
		return c.handleRegistration(r), nil
	case *kmsg.BrokerHeartbeatRequest:
		return c.handleHeartbeat(r), nil
	case *kmsg.AlterPartitionRequest:
		return c.handleAlterPartition(r), nil
	case *kmsg.CreateTopicsRequest:
		return c.handleCreateTopics(ctx, r), nil
	case *kmsg.DeleteTopicsRequest:
		return c.handleDeleteTopics(ctx, r), nil
	}
	if !c.IsActive() {
		// Admin requests answer NOT_CONTROLLER in their top-level or
		// per-item error fields, where the forwarding broker looks.
		return notControllerResponse(req), nil
	}
	switch r := req.(type) {
	case *kmsg.AlterConfigsRequest:
		return c.handleAlterConfigs(r), nil
	case *kmsg.IncrementalAlterConfigsRequest:
		return c.handleIncrementalAlterConfigs(r), nil
	case *kmsg.CreatePartitionsRequest:
		return c.handleCreatePartitions(r), nil
	case *kmsg.ElectLeadersRequest:
		return c.handleElectLeaders(r), nil
	case *kmsg.AlterPartitionAssignmentsRequest:
		return c.handleAlterPartitionReassignments(r), nil
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return c.handleAlterUserScram(r), nil
	case *kmsg.CreateACLsRequest:
		return c.handleCreateACLs(r), nil
	case *kmsg.DeleteACLsRequest:
		return c.handleDeleteACLs(r), nil
	}
	return nil, fmt.Errorf("controller: API key %d is not a controller API", req.Key())
}

// Handles reports whether Handle serves API key key.
func Handles(key int16) bool {
	switch key {
	case 19, 20, 56, 62, 63, 30, 31, 33, 37, 43, 44, 45, 51:
		return true
	}
	return false
}

// errCode maps a proposal error to a Kafka error code.
func errCode(err error) int16 {
	if err == nil {
		return 0
	}
	if errors.Is(err, errNotActive) {
		return kerr.NotController.Code
	}
	return kerr.UnknownServerError.Code
}

func (c *Controller) handleRegistration(r *kmsg.BrokerRegistrationRequest) *kmsg.BrokerRegistrationResponse {
	resp := r.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	resp.BrokerEpoch = -1
	if !c.IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	if c.cfg.ClusterID != "" && r.ClusterID != "" && r.ClusterID != c.cfg.ClusterID {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return resp
	}
	if len(r.Listeners) == 0 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	l := r.Listeners[0]
	res, err := c.propose(record{Policy: c.cfg.policy(),
		Register: &registerRec{ID: r.BrokerID, Host: l.Host, Port: int32(l.Port)}})
	if err != nil {
		resp.ErrorCode = errCode(err)
		return resp
	}
	c.touch(r.BrokerID)
	faultpoint.Hit(faultpoint.BrokerRegistered, faultpoint.Attrs{Node: c.cfg.NodeID, Broker: r.BrokerID})
	resp.ErrorCode = res.Code
	resp.BrokerEpoch = res.Broker.Epoch
	return resp
}

// handleHeartbeat keeps a broker's session alive and moves it between
// states: fenced -> unfenced on its first plain heartbeat after
// registration; -> fenced on WantFence; -> controlled shutdown on
// WantShutdown, answered ShouldShutdown once it leads nothing (which the
// shutdown record guarantees when it applies).
func (c *Controller) handleHeartbeat(r *kmsg.BrokerHeartbeatRequest) *kmsg.BrokerHeartbeatResponse {
	resp := r.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	resp.IsFenced = true
	if !c.IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	b, code := current(c.Image(), brokerRec{ID: r.BrokerID, Epoch: r.BrokerEpoch})
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	c.touch(r.BrokerID)
	rec := &brokerRec{ID: b.ID, Epoch: b.Epoch}
	var out record
	switch {
	case r.WantShutdown && !b.ShuttingDown:
		out = record{Shutdown: rec}
	case r.WantFence && !b.Fenced:
		out = record{Fence: rec}
	case !r.WantFence && !r.WantShutdown && b.Fenced && !b.ShuttingDown:
		out = record{Unfence: rec}
	}
	if out.Shutdown != nil || out.Fence != nil || out.Unfence != nil {
		out.Policy = c.cfg.policy()
		res, err := c.propose(out)
		if err != nil {
			resp.ErrorCode = errCode(err)
			return resp
		}
		if res.Code != 0 {
			resp.ErrorCode = res.Code
			return resp
		}
		b = res.Broker
	}
	resp.IsCaughtUp = r.CurrentMetadataOffset >= b.Epoch
	resp.IsFenced = b.Fenced
	resp.ShouldShutdown = b.ShuttingDown && len(c.Image().LeaderOf(b.ID)) == 0
	return resp
}

func (c *Controller) handleAlterPartition(r *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	resp := r.ResponseKind().(*kmsg.AlterPartitionResponse)
	if !c.IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	rec := alterRec{BrokerID: r.BrokerID, BrokerEpoch: r.BrokerEpoch}
	byID := r.Version >= 2
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			it := alterItem{Topic: t.Topic, TopicID: t.TopicID, ByID: byID, Partition: p.Partition,
				LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: p.NewISR}
			if r.Version >= 3 {
				it.NewISR = nil
				for _, e := range p.NewEpochISR {
					it.NewISR = append(it.NewISR, e.BrokerID)
					it.ISREpochs = append(it.ISREpochs, e.BrokerEpoch)
				}
			}
			rec.Items = append(rec.Items, it)
		}
	}
	res, err := c.propose(record{AlterPartition: &rec})
	if err != nil || res.Code != 0 {
		resp.ErrorCode = res.Code
		if err != nil {
			resp.ErrorCode = errCode(err)
		}
		return resp
	}
	i := 0
	for _, t := range r.Topics {
		rt := kmsg.NewAlterPartitionResponseTopic()
		rt.Topic, rt.TopidID = t.Topic, t.TopicID
		for range t.Partitions {
			ir := res.Items[i]
			i++
			rp := kmsg.NewAlterPartitionResponseTopicPartition()
			rp.Partition = rec.Items[i-1].Partition
			rp.ErrorCode = ir.Code
			if ir.Code == 0 {
				rp.LeaderID = ir.Partition.Leader
				rp.LeaderEpoch = ir.Partition.LeaderEpoch
				rp.ISR = ir.Partition.ISR
				rp.PartitionEpoch = ir.Partition.PartitionEpoch
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
