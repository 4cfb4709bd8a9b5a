package share

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The share-state RPCs between a share-partition leader (or the group
// coordinator) and the share coordinator (KIP-932's
// Initialize/Read/Write/DeleteShareGroupState), one share partition per
// request from this side; the serving side answers every partition asked.

// ReadRequest is the ReadShareGroupState of k by a leader in leaderEpoch.
func ReadRequest(k StateKey, leaderEpoch int32) *kmsg.ReadShareGroupStateRequest {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = k.Group
	t := kmsg.NewReadShareGroupStateRequestTopic()
	t.TopicID = k.TopicID
	p := kmsg.NewReadShareGroupStateRequestTopicPartition()
	p.Partition, p.LeaderEpoch = k.Partition, leaderEpoch
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// ParseRead is the state or error of a ReadShareGroupState answer.
func ParseRead(resp *kmsg.ReadShareGroupStateResponse) (PartitionState, *kerr.Error) {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
				return PartitionState{}, e.(*kerr.Error)
			}
			st := PartitionState{StateEpoch: p.StateEpoch, StartOffset: p.StartOffset, LeaderEpoch: -1}
			for _, b := range p.StateBatches {
				st.Batches = append(st.Batches, StateBatch{First: b.FirstOffset, Last: b.LastOffset, State: b.DeliveryState, Count: b.DeliveryCount})
			}
			return st, nil
		}
	}
	return PartitionState{}, kerr.UnknownServerError
}

// WriteRequest is the WriteShareGroupState of k's whole state.
func WriteRequest(k StateKey, st PartitionState) *kmsg.WriteShareGroupStateRequest {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.SetVersion(0)
	req.GroupID = k.Group
	t := kmsg.NewWriteShareGroupStateRequestTopic()
	t.TopicID = k.TopicID
	p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset = k.Partition, st.StateEpoch, st.LeaderEpoch, st.StartOffset
	for _, b := range st.Batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.First, b.Last, b.State, b.Count
		p.StateBatches = append(p.StateBatches, sb)
	}
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// InitializeRequest is the InitializeShareGroupState of k at start.
func InitializeRequest(k StateKey, start int64) *kmsg.InitializeShareGroupStateRequest {
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = k.Group
	t := kmsg.NewInitializeShareGroupStateRequestTopic()
	t.TopicID = k.TopicID
	p := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	p.Partition, p.StartOffset = k.Partition, start
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// DeleteRequest is the DeleteShareGroupState of k.
func DeleteRequest(k StateKey) *kmsg.DeleteShareGroupStateRequest {
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = k.Group
	t := kmsg.NewDeleteShareGroupStateRequestTopic()
	t.TopicID = k.TopicID
	p := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	p.Partition = k.Partition
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// FirstError is the first partition error of a write, initialize or
// delete answer (nil when none).
func FirstError(codes []int16) *kerr.Error {
	for _, c := range codes {
		if e := kerr.ErrorForCode(c); e != nil {
			return e.(*kerr.Error)
		}
	}
	return nil
}

func code(e *kerr.Error) int16 {
	if e == nil {
		return 0
	}
	return e.Code
}

// ServeRead answers a ReadShareGroupState.
func (c *StateCoordinator) ServeRead(ctx context.Context, req *kmsg.ReadShareGroupStateRequest) *kmsg.ReadShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			st, e := c.Read(ctx, StateKey{req.GroupID, t.TopicID, p.Partition}, p.LeaderEpoch)
			rp.ErrorCode, rp.StateEpoch, rp.StartOffset = code(e), st.StateEpoch, st.StartOffset
			for _, b := range st.Batches {
				sb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
				sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.First, b.Last, b.State, b.Count
				rp.StateBatches = append(rp.StateBatches, sb)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// ServeWrite answers a WriteShareGroupState.
func (c *StateCoordinator) ServeWrite(ctx context.Context, req *kmsg.WriteShareGroupStateRequest) *kmsg.WriteShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			st := PartitionState{StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, StartOffset: p.StartOffset}
			for _, b := range p.StateBatches {
				st.Batches = append(st.Batches, StateBatch{First: b.FirstOffset, Last: b.LastOffset, State: b.DeliveryState, Count: b.DeliveryCount})
			}
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = code(c.Write(ctx, StateKey{req.GroupID, t.TopicID, p.Partition}, st))
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// ServeInitialize answers an InitializeShareGroupState. The state epoch
// is the coordinator's: the previous one plus one, whatever was asked.
func (c *StateCoordinator) ServeInitialize(ctx context.Context, req *kmsg.InitializeShareGroupStateRequest) *kmsg.InitializeShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = code(c.Initialize(ctx, StateKey{req.GroupID, t.TopicID, p.Partition}, p.StartOffset))
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// ServeDelete answers a DeleteShareGroupState.
func (c *StateCoordinator) ServeDelete(ctx context.Context, req *kmsg.DeleteShareGroupStateRequest) *kmsg.DeleteShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = code(c.Delete(ctx, StateKey{req.GroupID, t.TopicID, p.Partition}))
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
