package group

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/coordinator"
	"gregor/cluster/faultpoint"
)

// TxnWrite says which transaction a TxnOffsetCommit belongs to.
type TxnWrite struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	// AddPartition: the transaction version 2 client did not add the
	// group's partition to the transaction (TxnOffsetCommit v5, KIP-890
	// part 2); the write adds it.
	AddPartition bool
}

// TxnLog is a Log that also takes transactional writes: the records go in
// one transactional batch of the producer, checked like a produce of it
// (epoch fencing, the transaction verified with its coordinator).
type TxnLog interface {
	coordinator.Log
	AppendTxn(ctx context.Context, epoch int32, w TxnWrite, recs []coordinator.Record) (base int64, err *kerr.Error)
}

// TxnOffsetCommit handles TxnOffsetCommit (GroupCoordinator.handleTxnCommitOffsets):
// checked against the group like a commit, but not for a rebalance in
// progress (KIP-447), written as part of the producer's transaction, and
// materialized only when its COMMIT marker arrives (CompleteTxn).
func (c *Coordinator) TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) func() *kmsg.TxnOffsetCommitResponse {
	resp := kmsg.NewPtrTxnOffsetCommitResponse()
	type slot struct{ t, p int }
	var ok []slot
	for ti, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			if p.Metadata != nil && len(*p.Metadata) > maxMetadataBytes {
				rp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
			} else {
				ok = append(ok, slot{ti, len(rt.Partitions)})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	failAll := func(e *kerr.Error) *kmsg.TxnOffsetCommitResponse {
		for _, sl := range ok {
			resp.Topics[sl.t].Partitions[sl.p].ErrorCode = e.Code
		}
		return resp
	}
	s, e := c.shardFor(req.Group)
	if e != nil {
		return ready(failAll(e))
	}
	tl, isTxn := s.log.(TxnLog)
	if !isTxn {
		return ready(failAll(kerr.CoordinatorNotAvailable))
	}
	if len(ok) == 0 {
		s.mu.Lock()
		_, e := s.validateTxnCommit(req)
		s.unlock()
		if e != nil {
			return ready(failAll(e))
		}
		return ready(resp)
	}
	now := c.cfg.Clock.Now().UnixMilli()
	recs := make([]coordinator.Record, 0, len(ok))
	keys := make([]TopicPartition, 0, len(ok))
	vals := make([]committed, 0, len(ok))
	for _, sl := range ok {
		t := req.Topics[sl.t]
		p := t.Partitions[sl.p]
		v := offsetValue{Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, CommitMs: now}
		if p.Metadata != nil {
			v.Metadata = *p.Metadata
		}
		recs = append(recs, offsetRecord(req.Group, t.Topic, p.Partition, &v))
		keys = append(keys, TopicPartition{t.Topic, p.Partition})
		vals = append(vals, committed{offsetValue: v, logOffset: inFlight})
	}
	s.mu.Lock()
	g, e := s.validateTxnCommit(req)
	if e == nil && !c.cfg.Bugs.TxnOffsetsEarly {
		// Pending before the write, as Kafka's prepareTxnOffsetCommit: a
		// fencing abort that lands meanwhile drops them, and the write,
		// of the fenced epoch, then fails.
		for i, k := range keys {
			g.addTxnOffset(req.ProducerID, k, vals[i])
		}
	}
	s.unlock()
	if e != nil {
		return ready(failAll(e))
	}
	w := TxnWrite{TransactionalID: req.TransactionalID, ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch, AddPartition: req.Version >= 5}
	return func() *kmsg.TxnOffsetCommitResponse {
		base, e := s.writeTxn(ctx, tl, w, recs)
		s.mu.Lock()
		defer s.unlock()
		if s.unloaded || s.groups[g.id] != g {
			if e != nil {
				return failAll(e)
			}
			return resp // in the log; the next load has it
		}
		pending := g.txnOffsets[req.ProducerID]
		for i, k := range keys {
			v, ok := pending[k]
			switch {
			case e != nil:
				if ok && v.logOffset == inFlight {
					delete(pending, k)
				}
			case c.cfg.Bugs.TxnOffsetsEarly:
				// The planted bug: the group sees the offset now.
				v = vals[i]
				v.logOffset = base + int64(i)
				g.offsets[k] = v
			case ok && v.logOffset == inFlight:
				v.logOffset = base + int64(i)
				pending[k] = v
			}
		}
		if len(pending) == 0 {
			// A failed write took the producer's last pending offset: the
			// group no longer waits for its marker (and may be deleted).
			delete(g.txnOffsets, req.ProducerID)
		}
		if e != nil {
			return failAll(e)
		}
		if len(keys) > 0 {
			faultpoint.Hit(faultpoint.TxnOffsetsApplied, faultpoint.Attrs{Node: c.cfg.Node, Topic: keys[0].Topic, Partition: keys[0].Partition,
				Group: g.id, Txn: req.TransactionalID})
		}
		return resp
	}
}

// inFlight is the log offset of a pending transactional offset whose write
// has not returned yet.
const inFlight = -1

// validateTxnCommit is doTxnCommitOffsets' check: a group that does not
// exist yet is created; a member id and generation, when given (v3+,
// KIP-447), must match. Caller holds mu.
func (s *shard) validateTxnCommit(req *kmsg.TxnOffsetCommitRequest) (*Group, *kerr.Error) {
	if s.unloaded {
		return nil, kerr.NotCoordinator
	}
	g := s.groups[req.Group]
	if g == nil {
		g = newGroup(req.Group)
		g.known = true
		s.groups[req.Group] = g
	}
	if g.cg != nil && g.state != Dead {
		// The STALE_MEMBER_EPOCH a consumer group answers is not a
		// TxnOffsetCommit error: ILLEGAL_GENERATION
		// (OffsetMetadataManager.validateTransactionalOffsetCommit).
		e := g.cg.validateCommit(req.MemberID, req.Generation, false)
		if e == kerr.StaleMemberEpoch {
			e = kerr.IllegalGeneration
		}
		return g, e
	}
	switch {
	case g.state == Dead:
		return nil, kerr.CoordinatorNotAvailable
	case fenced(g, req.MemberID, req.InstanceID):
		return nil, kerr.FencedInstanceID
	case req.MemberID != "" && g.members[req.MemberID] == nil:
		return nil, kerr.UnknownMemberID
	case req.Generation >= 0 && req.Generation != g.generation:
		return nil, kerr.IllegalGeneration
	}
	g.known = true
	return g, nil
}

// writeTxn is write for a transactional batch, with the errors a
// TxnOffsetCommit answers (GroupMetadataManager.maybeConvertOffsetCommitError,
// and AddPartitionsToTxnManager's PRODUCER_FENCED -> INVALID_PRODUCER_EPOCH
// for a verification the coordinator refused).
func (s *shard) writeTxn(ctx context.Context, tl TxnLog, w TxnWrite, recs []coordinator.Record) (int64, *kerr.Error) {
	ctx, cancel := context.WithTimeout(ctx, s.c.cfg.WriteTimeout)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	base, e := tl.AppendTxn(ctx, s.epoch, w, recs)
	switch e {
	case kerr.NetworkException:
		e = kerr.CoordinatorLoadInProgress
	case kerr.ProducerFenced:
		e = kerr.InvalidProducerEpoch
	}
	return base, appendError(e)
}

func (g *Group) addTxnOffset(pid int64, k TopicPartition, v committed) {
	m := g.txnOffsets[pid]
	if m == nil {
		m = map[TopicPartition]committed{}
		g.txnOffsets[pid] = m
	}
	m[k] = v
}

// completeTxn materializes (commit) or drops (abort) a producer's pending
// offsets (completePendingTxnOffsetCommit): a pending offset replaces the
// committed one only if it was written later in the log. One still in
// flight is dropped either way: a commit cannot precede its write's answer.
func (g *Group) completeTxn(pid int64, commit bool) {
	pending := g.txnOffsets[pid]
	delete(g.txnOffsets, pid)
	if !commit {
		return
	}
	for k, v := range pending {
		if v.logOffset == inFlight {
			continue
		}
		if cur, ok := g.offsets[k]; !ok || cur.logOffset < v.logOffset {
			g.offsets[k] = v
		}
	}
}

// hasPendingTxnOffset reports whether a transaction not yet ended commits
// an offset for k (OffsetFetch's UNSTABLE_OFFSET_COMMIT).
func (g *Group) hasPendingTxnOffset(k TopicPartition) bool {
	for _, m := range g.txnOffsets {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// CompleteTxn is called once a transaction's marker is written on a
// __consumer_offsets partition (onTransactionCompleted): the producer's
// pending offsets in that partition's groups are materialized or dropped.
// A shard still loading applies it after its replay.
func (c *Coordinator) CompleteTxn(partition int32, pid int64, commit bool) {
	s, ok := c.rt.Shard(partition)
	if !ok {
		return // not the coordinator: the next load replays the marker
	}
	s.mu.Lock()
	defer s.unlock()
	if s.loading {
		s.lateMarkers = append(s.lateMarkers, txnEnd{pid, commit})
		return
	}
	for _, g := range s.groups {
		g.completeTxn(pid, commit)
	}
}

// txnEnd is a transaction's end seen while its shard was loading.
type txnEnd struct {
	pid    int64
	commit bool
}
