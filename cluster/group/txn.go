package group

import (
	"context"
	"slices"

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
		vals = append(vals, committed{offsetValue: v})
	}
	s.mu.Lock()
	g, e := s.validateTxnCommit(req)
	var out *txnWrite
	if e == nil && !c.cfg.Bugs.TxnOffsetsEarly {
		// Pending before the write (a stable fetch waits for it), but
		// apart from the producer's written offsets: those may be an
		// earlier transaction's whose marker has not landed yet (EndTxn
		// answers before its markers are written, KIP-890), and this
		// write may yet be refused (CONCURRENT_TRANSACTIONS).
		out = g.startTxnWrite(req.ProducerID, keys, vals)
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
		switch {
		case out != nil:
			g.finishTxnWrite(req.ProducerID, out, base, e != nil)
		case e == nil:
			// The planted bug TxnOffsetsEarly: the group sees the
			// offsets now, before the transaction ends.
			for i, k := range keys {
				v := vals[i]
				v.logOffset = base + int64(i)
				g.offsets[k] = v
			}
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

// addTxnOffset parks a transactional offset written at v.logOffset until
// its transaction's marker; of two for one partition, the later in the log
// stays.
func (g *Group) addTxnOffset(pid int64, k TopicPartition, v committed) {
	m := g.txnOffsets[pid]
	if m == nil {
		m = map[TopicPartition]committed{}
		g.txnOffsets[pid] = m
	}
	if cur, ok := m[k]; !ok || cur.logOffset < v.logOffset {
		m[k] = v
	}
}

// txnWrite is a TxnOffsetCommit whose write is out. Its offsets count as
// pending to a stable fetch, but they are not in the log yet: a marker of
// the producer that lands meanwhile ends only what is before it in the log,
// which this write may or may not turn out to be (ends keeps those markers
// until its log offsets are known).
type txnWrite struct {
	keys []TopicPartition
	vals []committed
	ends []txnEnd
}

func (g *Group) startTxnWrite(pid int64, keys []TopicPartition, vals []committed) *txnWrite {
	w := &txnWrite{keys: keys, vals: vals}
	g.txnWrites[pid] = append(g.txnWrites[pid], w)
	return w
}

// finishTxnWrite settles a write's offsets once its answer is in: a failed
// write leaves nothing behind; a written offset is ended by a marker that
// landed after it while the write was out, else it is pending until its
// own marker (Kafka replays the record at its append, in log order with the
// markers: OffsetMetadataManager.replay and replayEndTransactionMarker).
func (g *Group) finishTxnWrite(pid int64, w *txnWrite, base int64, failed bool) {
	ws := slices.DeleteFunc(g.txnWrites[pid], func(x *txnWrite) bool { return x == w })
	if len(ws) == 0 {
		delete(g.txnWrites, pid)
	} else {
		g.txnWrites[pid] = ws
	}
	if failed {
		return
	}
	for i, k := range w.keys {
		v := w.vals[i]
		v.logOffset = base + int64(i)
		if end, ok := w.endAfter(v.logOffset); ok {
			if end.commit {
				g.materialize(k, v)
			}
			continue
		}
		g.addTxnOffset(pid, k, v)
	}
}

// endAfter is the first marker the write saw land after log offset off.
func (w *txnWrite) endAfter(off int64) (txnEnd, bool) {
	for _, e := range w.ends {
		if e.at > off {
			return e, true
		}
	}
	return txnEnd{}, false
}

// materialize makes a committed transaction's offset the group's, unless
// the group's is later in the log.
func (g *Group) materialize(k TopicPartition, v committed) {
	if cur, ok := g.offsets[k]; !ok || cur.logOffset < v.logOffset {
		g.offsets[k] = v
	}
}

// completeTxn applies a marker of the producer's transaction, ending the
// log below end.at (Kafka's completePendingTxnOffsetCommit): its pending
// offsets there are materialized (commit) or dropped (abort). An offset at
// or past end.at is a later transaction's, and stays pending; a write still
// out learns of the marker when it is answered.
func (g *Group) completeTxn(end txnEnd) {
	for _, w := range g.txnWrites[end.pid] {
		w.ends = append(w.ends, end)
	}
	pending := g.txnOffsets[end.pid]
	for k, v := range pending {
		if v.logOffset >= end.at {
			continue
		}
		delete(pending, k)
		if end.commit {
			g.materialize(k, v)
		}
	}
	if len(pending) == 0 {
		delete(g.txnOffsets, end.pid)
	}
}

// hasPendingTxnOffset reports whether a transaction not yet ended commits
// an offset for k (OffsetFetch's UNSTABLE_OFFSET_COMMIT), written or with
// its write out.
func (g *Group) hasPendingTxnOffset(k TopicPartition) bool {
	for _, m := range g.txnOffsets {
		if _, ok := m[k]; ok {
			return true
		}
	}
	for _, ws := range g.txnWrites {
		for _, w := range ws {
			if slices.Contains(w.keys, k) {
				return true
			}
		}
	}
	return false
}

// CompleteTxn is called once a transaction's marker is written on a
// __consumer_offsets partition (onTransactionCompleted), end being the log
// end offset just past the marker: the producer's pending offsets below it
// in that partition's groups are materialized or dropped. A shard still
// loading applies it after its replay.
func (c *Coordinator) CompleteTxn(partition int32, pid int64, commit bool, end int64) {
	s, ok := c.rt.Shard(partition)
	if !ok {
		return // not the coordinator: the next load replays the marker
	}
	s.mu.Lock()
	defer s.unlock()
	if s.loading {
		s.lateMarkers = append(s.lateMarkers, txnEnd{pid, commit, end})
		return
	}
	for _, g := range s.groups {
		g.completeTxn(txnEnd{pid, commit, end})
	}
}

// txnEnd is a transaction marker of producer pid: it ends the producer's
// transactional offsets in the log below at.
type txnEnd struct {
	pid    int64
	commit bool
	at     int64
}
