package wire

// WriteTxnMarkers: v0-2 (from transaction coordinators).
//
// Behaviour: for every marker and partition this broker leads, a COMMIT or
// ABORT control batch is appended acks=all (Kafka's
// handleWriteTxnMarkersRequest) and the partition's producer state updated:
// the producer's transaction there ends, and the LSO moves once the marker
// is replicated. A marker of an older producer epoch is
// INVALID_PRODUCER_EPOCH; with v2's TransactionVersion 2 (KIP-1228) the
// epoch must be newer than the partition's, not equal; a version 2 retry of
// a marker already written is answered without writing again. A marker of
// an older coordinator epoch is TRANSACTION_COORDINATOR_FENCED. Once a
// marker is in on a __consumer_offsets partition, the group coordinator
// materializes (or drops) the transaction's offsets.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/group"
	"gregor/cluster/replica"
	"gregor/cluster/storage"
)

func init() { register(27, 0, 2, handleWriteTxnMarkers) }

// markerWait bounds the acks=all wait of a marker (Kafka: request.timeout.ms).
const markerWait = 10 * time.Second

func handleWriteTxnMarkers(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	type waitFor struct {
		mi, ti, pi int
		p          *replica.Partition
		end        int64
		epoch      int32
	}
	var waits []waitFor
	if s.opts.Authz != nil && !s.clusterAuthorized(hdr, kmsg.ACLOperationClusterAction) {
		return now(writeTxnMarkersError(req, kerr.ClusterAuthorizationFailed.Code)) // KafkaApis: CLUSTER_ACTION
	}
	im := s.b.Image()
	for mi, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		mk := storage.Marker{Commit: m.Committed, CoordinatorEpoch: m.CoordinatorEpoch}
		tv := int16(m.TransactionVersion) // 0 below v2: the legacy rule
		for ti, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for pi, idx := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = idx
				p := s.b.Partition(t.Topic, idx)
				switch {
				case p == nil && im.Topics[t.Topic] != nil:
					rp.ErrorCode = kerr.NotLeaderForPartition.Code
				case p == nil:
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				default:
					res, e := p.AppendMarker(m.ProducerID, m.ProducerEpoch, mk, tv, time.Now())
					if e != nil {
						rp.ErrorCode = e.Code
					} else {
						waits = append(waits, waitFor{mi, ti, pi, p, res.EndOffset, res.Epoch})
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	if len(waits) == 0 {
		return now(resp)
	}
	return reply{later: func() kmsg.Response {
		wctx, cancel := context.WithTimeout(ctx, markerWait)
		defer cancel()
		for _, w := range waits {
			rp := &resp.Markers[w.mi].Topics[w.ti].Partitions[w.pi]
			if e := w.p.WaitCommitted(wctx, w.end, w.epoch); e != nil {
				rp.ErrorCode = e.Code
				continue
			}
			m := req.Markers[w.mi]
			if topic := m.Topics[w.ti].Topic; topic == group.Topic {
				if c := s.coordinator(); c != nil {
					c.CompleteTxn(m.Topics[w.ti].Partitions[w.pi], m.ProducerID, m.Committed, w.end)
				}
			}
		}
		return resp
	}}
}

// writeTxnMarkersError answers every partition of every marker with code,
// as the request's getErrorResponse.
func writeTxnMarkersError(req *kmsg.WriteTxnMarkersRequest, code int16) *kmsg.WriteTxnMarkersResponse {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp
}
