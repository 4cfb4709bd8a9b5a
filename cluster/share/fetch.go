package share

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/sleep"
)

// maxFetchWait bounds a share fetch's long poll whatever the client asks.
const maxFetchWait = 30 * time.Second

// Fetch answers ShareFetch (KIP-932, v1-2): the session's epoch first, then
// the piggybacked acknowledgements, each written before it is answered,
// then records acquired from the session's partitions, waiting up to
// MaxWaitMillis for some when there are none. read says whether the
// caller may READ a topic (nil: every one): a partition of a topic it may
// not is answered TOPIC_AUTHORIZATION_FAILED, neither acknowledged nor
// fetched, but stays in the session (KafkaApis.handleShareFetchRequest
// asks at every request, so a later grant lets it be fetched).
func (m *Manager) Fetch(ctx context.Context, req *kmsg.ShareFetchRequest, read Reader) *kmsg.ShareFetchResponse {
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	if !memberValid(req.MemberID) || req.GroupID == nil || *req.GroupID == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	group, member := *req.GroupID, *req.MemberID
	resp.AcquisitionLockTimeoutMillis = int32(m.LockDuration(group) / time.Millisecond)
	if req.IsRenewAck && (req.MaxBytes != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxWaitMillis != 0) {
		resp.ErrorCode = kerr.InvalidRequest.Code // KIP-1222: a renewal fetches nothing
		return resp
	}
	if m.env.ClassicGroup(group) {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}
	s, e := m.session(group, member, req.ShareSessionEpoch, true)
	if e != nil {
		resp.ErrorCode = e.Code
		return resp
	}
	out := newFetchOut(resp)
	if req.ShareSessionEpoch != -1 {
		m.mu.Lock()
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				s.parts[tidp{t.TopicID, p.Partition}] = struct{}{}
			}
		}
		for _, t := range req.ForgottenTopicsData {
			for _, p := range t.Partitions {
				delete(s.parts, tidp{t.TopicID, p})
			}
		}
		m.mu.Unlock()
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if len(p.AcknowledgementBatches) == 0 {
				continue
			}
			var bs []AckBatch
			for _, b := range p.AcknowledgementBatches {
				bs = append(bs, AckBatch{First: b.FirstOffset, Last: b.LastOffset, Types: b.AcknowledgeTypes})
			}
			rp := out.partition(t.TopicID, p.Partition)
			if !read.allows(m, t.TopicID) {
				rp.AcknowledgeErrorCode = kerr.TopicAuthorizationFailed.Code // KafkaApis.handleAcknowledgements
				continue
			}
			if e := m.ackOne(ctx, group, member, "ShareFetch", t.TopicID, p.Partition, bs); e != nil {
				rp.AcknowledgeErrorCode = e.Code
			}
		}
	}
	if req.ShareSessionEpoch == -1 {
		m.closeSession(ctx, group, member, s)
		return out.done(m)
	}
	if req.IsRenewAck {
		return out.done(m)
	}
	m.fetchRecords(ctx, group, member, s, req, read, out)
	return out.done(m)
}

// Reader says whether the caller may READ a topic; nil allows every one.
type Reader func(topic string) bool

// allows is r's answer for a topic ID; an unknown ID is allowed here and
// answered UNKNOWN_TOPIC_ID where it is looked up.
func (r Reader) allows(m *Manager, id [16]byte) bool {
	if r == nil {
		return true
	}
	topic, _, ok := m.env.TopicByID(id)
	return !ok || r(topic)
}

// fetchRecords acquires from the session's partitions until some are
// acquired, an error is to be answered, or the wait ends. Bounded by the
// deadline: each pass either answers or waits for a change.
func (m *Manager) fetchRecords(ctx context.Context, group, member string, s *session, req *kmsg.ShareFetchRequest, read Reader, out *fetchOut) {
	deadline := time.Now().Add(min(time.Duration(req.MaxWaitMillis)*time.Millisecond, maxFetchWait))
	max := int(req.MaxRecords)
	if max <= 0 {
		max = 500 // KIP-1206's default max.poll.records
	}
	lock := m.LockDuration(group)
	for {
		m.mu.Lock()
		parts := slices.SortedFunc(maps.Keys(s.parts), func(a, b tidp) int {
			if c := slices.Compare(a.id[:], b.id[:]); c != 0 {
				return c
			}
			return int(a.partition - b.partition)
		})
		m.mu.Unlock()
		if len(parts) > 0 {
			if parts = m.deny(parts, read, out); len(parts) == 0 {
				return // every partition refused: nothing to wait for (KafkaApis)
			}
		}
		var watches []<-chan struct{}
		got := 0
		for _, tp := range parts {
			if got >= max {
				break
			}
			n, w := m.fetchOne(ctx, group, member, tp, max-got, lock, out)
			got += n
			watches = append(watches, w...)
		}
		if got > 0 || out.failed || !time.Now().Before(deadline) || ctx.Err() != nil {
			return
		}
		if len(watches) == 0 {
			// Nothing to watch: the long poll waits out its deadline.
			sleep.Until(ctx, deadline)
			return
		}
		if !sleep.UntilAny(ctx, watches, deadline) {
			return
		}
	}
}

// deny answers the partitions of topics read refuses
// TOPIC_AUTHORIZATION_FAILED (KafkaApis.handleFetchFromShareFetchRequest)
// and returns the others.
func (m *Manager) deny(parts []tidp, read Reader, out *fetchOut) []tidp {
	return slices.DeleteFunc(parts, func(tp tidp) bool {
		if read.allows(m, tp.id) {
			return false
		}
		out.partition(tp.id, tp.partition).ErrorCode = kerr.TopicAuthorizationFailed.Code
		return true
	})
}

// fetchOne acquires from one partition: how many records, and what to wait
// on when none.
func (m *Manager) fetchOne(ctx context.Context, group, member string, tp tidp, max int, lock time.Duration, out *fetchOut) (int, []<-chan struct{}) {
	topic, _, ok := m.env.TopicByID(tp.id)
	if !ok {
		out.partition(tp.id, tp.partition).ErrorCode = kerr.UnknownTopicID.Code
		out.failed = true
		return 0, nil
	}
	sp, e := m.partition(ctx, group, topic, tp.id, tp.partition)
	if e != nil {
		rp := out.partition(tp.id, tp.partition)
		rp.ErrorCode = e.Code
		if e == kerr.NotLeaderForPartition {
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = m.hint(topic, tp.partition, out.endpoints)
		}
		out.failed = true
		return 0, nil
	}
	defer sp.unlock()
	runs, raw, e := sp.acquire(member, max, lock)
	if e != nil {
		rp := out.partition(tp.id, tp.partition)
		rp.ErrorCode = retriable(e).Code
		out.failed = true
		return 0, nil
	}
	if len(runs) == 0 {
		return 0, []<-chan struct{}{sp.p.Watch(), sp.avail}
	}
	rp := out.partition(tp.id, tp.partition)
	rp.Records = raw
	n := 0
	for _, r := range runs {
		a := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
		a.FirstOffset, a.LastOffset, a.DeliveryCount = r.First, r.Last, r.Count
		rp.AcquiredRecords = append(rp.AcquiredRecords, a)
		n += int(r.Last - r.First + 1)
	}
	return n, nil
}

// fetchOut is a ShareFetch response being built, a partition at most once.
type fetchOut struct {
	resp      *kmsg.ShareFetchResponse
	parts     map[tidp]*kmsg.ShareFetchResponseTopicPartition
	order     []tidp
	endpoints map[int32]LeaderHint
	failed    bool
}

func newFetchOut(resp *kmsg.ShareFetchResponse) *fetchOut {
	return &fetchOut{resp: resp, parts: map[tidp]*kmsg.ShareFetchResponseTopicPartition{}, endpoints: map[int32]LeaderHint{}}
}

func (o *fetchOut) partition(id [16]byte, p int32) *kmsg.ShareFetchResponseTopicPartition {
	k := tidp{id, p}
	if rp := o.parts[k]; rp != nil {
		return rp
	}
	rp := kmsg.NewShareFetchResponseTopicPartition()
	rp.Partition = p
	// Kafka's schema default: no leader hint (0 would name node 0).
	rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
	rp.Records = []byte{}
	o.parts[k] = &rp
	o.order = append(o.order, k)
	return &rp
}

// done assembles the response: topics in first-seen order.
func (o *fetchOut) done(m *Manager) *kmsg.ShareFetchResponse {
	idx := map[[16]byte]int{}
	for _, k := range o.order {
		i, ok := idx[k.id]
		if !ok {
			i = len(o.resp.Topics)
			idx[k.id] = i
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID = k.id
			o.resp.Topics = append(o.resp.Topics, t)
		}
		o.resp.Topics[i].Partitions = append(o.resp.Topics[i].Partitions, *o.parts[k])
	}
	for _, id := range slices.Sorted(maps.Keys(o.endpoints)) {
		h := o.endpoints[id]
		ep := kmsg.NewShareFetchResponseNodeEndpoint()
		ep.NodeID, ep.Host, ep.Port = h.Node, h.Host, h.Port
		o.resp.NodeEndpoints = append(o.resp.NodeEndpoints, ep)
	}
	return o.resp
}

// Acknowledge answers ShareAcknowledge (v1-2): the session's next epoch
// (or -1, closing it after the acknowledgements), each partition's
// acknowledgements written before the answer; a partition of a topic read
// refuses is answered TOPIC_AUTHORIZATION_FAILED and not acknowledged.
func (m *Manager) Acknowledge(ctx context.Context, req *kmsg.ShareAcknowledgeRequest, read Reader) *kmsg.ShareAcknowledgeResponse {
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	if !memberValid(req.MemberID) || req.GroupID == nil || *req.GroupID == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	group, member := *req.GroupID, *req.MemberID
	resp.AcquisitionLockTimeoutMillis = int32(m.LockDuration(group) / time.Millisecond)
	s, e := m.session(group, member, req.ShareSessionEpoch, false)
	if e != nil {
		resp.ErrorCode = e.Code
		return resp
	}
	endpoints := map[int32]LeaderHint{}
	for _, t := range req.Topics {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = p.Partition
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
			var bs []AckBatch
			for _, b := range p.AcknowledgementBatches {
				bs = append(bs, AckBatch{First: b.FirstOffset, Last: b.LastOffset, Types: b.AcknowledgeTypes})
			}
			if !read.allows(m, t.TopicID) {
				// KafkaApis.handleAcknowledgements: READ on the topic.
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if e := m.ackOne(ctx, group, member, "ShareAcknowledge", t.TopicID, p.Partition, bs); e != nil {
				rp.ErrorCode = e.Code
				if topic, _, ok := m.env.TopicByID(t.TopicID); ok && e == kerr.NotLeaderForPartition {
					rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = m.hint(topic, p.Partition, endpoints)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	for _, id := range slices.Sorted(maps.Keys(endpoints)) {
		h := endpoints[id]
		ep := kmsg.NewShareAcknowledgeResponseNodeEndpoint()
		ep.NodeID, ep.Host, ep.Port = h.Node, h.Host, h.Port
		resp.NodeEndpoints = append(resp.NodeEndpoints, ep)
	}
	if req.ShareSessionEpoch == -1 {
		m.closeSession(ctx, group, member, s)
	}
	return resp
}
