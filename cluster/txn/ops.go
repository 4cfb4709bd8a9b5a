package txn

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ProducerIDEpoch is a producer id and epoch, as KIP-360's InitProducerId
// carries the caller's current ones.
type ProducerIDEpoch struct {
	ID    int64
	Epoch int16
}

// InitProducerID handles InitProducerId with a transactional id
// (TransactionCoordinator.handleInitProducerId): a new id at epoch 0 the
// first time, an epoch bump after (fencing the previous producer); an open
// transaction of the old epoch is aborted first and the caller told
// CONCURRENT_TRANSACTIONS, to retry once the abort is done.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeoutMs int32, expected *ProducerIDEpoch) (int64, int16, *kerr.Error) {
	switch {
	case id == "":
		return noProducerID, noEpoch, kerr.InvalidRequest
	case timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > c.cfg.MaxTimeout:
		return noProducerID, noEpoch, kerr.InvalidTransactionTimeout
	}
	s, e := c.shardFor(id)
	if e != nil {
		return noProducerID, noEpoch, e
	}
	s.mu.Lock()
	m := s.txns[id]
	s.unlock()
	if m == nil {
		pid, e := c.env.NewProducerID(ctx)
		if e != nil {
			return noProducerID, noEpoch, e
		}
		s.mu.Lock()
		if s.unloaded {
			s.unlock()
			return noProducerID, noEpoch, kerr.NotCoordinator
		}
		if m = s.txns[id]; m == nil {
			m = newMeta(id, pid, timeoutMs, s.nowMs())
			s.txns[id] = m
		}
		s.unlock()
	}
	s.mu.Lock()
	t, fence, e := s.prepareInit(ctx, m, timeoutMs, expected)
	s.unlock()
	if e != nil {
		return noProducerID, noEpoch, e
	}
	if fence {
		if e := s.fenceAndAbort(ctx, m); e != nil {
			return noProducerID, noEpoch, e
		}
		return noProducerID, noEpoch, kerr.ConcurrentTransactions
	}
	if e := s.write(ctx, m, t, false); e != nil {
		return noProducerID, noEpoch, e
	}
	s.mu.Lock()
	defer s.unlock()
	s.c.cfg.Logger.Info("initialized transactional id", "txn", id, "producer", m.ProducerID, "epoch", m.Epoch, "partition", s.partition)
	return m.ProducerID, m.Epoch, nil
}

// prepareInit is prepareInitProducerIdTransit; fence reports that an
// ongoing transaction must be aborted first. Caller holds s.mu.
func (s *shard) prepareInit(ctx context.Context, m *Meta, timeoutMs int32, expected *ProducerIDEpoch) (Transit, bool, *kerr.Error) {
	if s.unloaded || s.txns[m.ID] != m {
		return Transit{}, false, kerr.NotCoordinator
	}
	// KIP-360: the caller's id must be the current one (or the previous one
	// with an exhausted epoch: a retry across a rotation).
	valid := expected == nil || m.Epoch == noEpoch || expected.ID == m.ProducerID ||
		expected.ID == m.PrevProducerID && epochExhausted(expected.Epoch)
	switch {
	case m.pending != "":
		return Transit{}, false, kerr.ConcurrentTransactions
	case !valid:
		return Transit{}, false, kerr.ProducerFenced
	}
	switch m.State {
	case PrepareAbort, PrepareCommit:
		return Transit{}, false, kerr.ConcurrentTransactions
	case CompleteAbort, CompleteCommit, Empty:
		if epochExhausted(m.Epoch) && (expected == nil || expected.Epoch == m.Epoch) {
			// The id allocation is a local file write: quick enough to hold
			// the shard for.
			pid, e := s.c.env.NewProducerID(ctx)
			if e != nil {
				return Transit{}, false, e
			}
			return m.prepareRotate(pid, timeoutMs, s.nowMs(), expected != nil), false, nil
		}
		var exp *int16
		if expected != nil {
			exp = &expected.Epoch
		}
		t, e := m.prepareIncrementEpoch(timeoutMs, exp, s.nowMs())
		return t, false, e
	case Ongoing:
		// Abort the open transaction at a bumped epoch first; the caller
		// retries and bumps again (so a fence that exhausts the epoch
		// rotates the id on the retry).
		return Transit{}, true, nil
	}
	panic("txn " + m.ID + ": InitProducerId in state " + string(m.State))
}

// fenceAndAbort bumps the epoch of an ongoing transaction, fencing its
// producer, and aborts it (prepareFenceProducerEpoch then endTransaction
// with isFromClient=false, at the cluster's transaction version). With
// version 2 the abort bumps once more, as Kafka's does: the fenced
// producer's EndTxn then cannot pass for a retry.
func (s *shard) fenceAndAbort(ctx context.Context, m *Meta) *kerr.Error {
	s.mu.Lock()
	if s.unloaded || s.txns[m.ID] != m {
		s.unlock()
		return kerr.NotCoordinator
	}
	if m.State != Ongoing || m.pending != "" {
		s.unlock()
		return kerr.ConcurrentTransactions
	}
	f := m.prepareFence()
	m.pending = ""
	m.Epoch, m.LastEpoch = f.Epoch, noEpoch
	t := m.prepareEnd(PrepareAbort, s.c.cfg.Version, noProducerID, s.nowMs())
	s.c.cfg.Logger.Info("fencing producer and aborting its transaction", "txn", m.ID, "producer", m.ProducerID, "epoch", m.Epoch)
	s.unlock()
	if e := s.write(ctx, m, t, false); e != nil {
		s.mu.Lock()
		m.failedFence = true
		s.unlock()
		return e
	}
	s.mu.Lock()
	defer s.unlock()
	if s.unloaded || s.txns[m.ID] != m || m.State != PrepareAbort || m.pending != "" {
		return kerr.NotCoordinator
	}
	s.startCompletionLocked(m)
	return nil
}

// AbortTimedOut aborts every open transaction past its timeout, fencing its
// producer (abortTimedOutTransactions).
func (c *Coordinator) AbortTimedOut() {
	shards, _ := c.loadedShards()
	for _, s := range shards {
		now := s.nowMs()
		var late []*Meta
		s.mu.Lock()
		for _, m := range s.txns {
			if m.State == Ongoing && m.pending == "" && m.StartMs+int64(m.TimeoutMs) < now {
				late = append(late, m)
			}
		}
		s.unlock()
		for _, m := range late {
			c.cfg.Logger.Info("aborting transaction past its timeout", "txn", m.ID, "producer", m.ProducerID, "timeout_ms", m.TimeoutMs)
			c.background(func() {
				if e := s.fenceAndAbort(s.ctx, m); e != nil && !errors.Is(e, kerr.ConcurrentTransactions) {
					c.cfg.Logger.Warn("aborting timed out transaction", "txn", m.ID, "err", e)
				}
			})
		}
	}
}

// lookup finds an id's metadata checked against the caller's producer id
// and epoch, as AddPartitionsToTxn and its verification do. Caller holds s.mu.
func (s *shard) lookup(id string, pid int64, epoch int16) (*Meta, *kerr.Error) {
	m := s.txns[id]
	switch {
	case m == nil || m.ProducerID != pid:
		return nil, kerr.InvalidProducerIDMapping
	case m.Epoch != epoch:
		return nil, kerr.ProducerFenced
	}
	return m, nil
}

// AddPartitions handles AddPartitionsToTxn (handleAddPartitionsToTransaction),
// from a client (version 1) or from a partition leader adding the partition
// a produce or a TxnOffsetCommit touches (version 2, KIP-890 part 2).
func (c *Coordinator) AddPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []TopicPartition) *kerr.Error {
	if id == "" {
		return kerr.InvalidRequest
	}
	s, e := c.shardFor(id)
	if e != nil {
		return e
	}
	s.mu.Lock()
	m, e := s.lookup(id, pid, epoch)
	if e == nil {
		switch {
		case m.pending != "" || m.State == PrepareCommit || m.State == PrepareAbort:
			e = kerr.ConcurrentTransactions
		case m.State == Ongoing && m.hasAll(parts):
			s.unlock()
			return nil
		}
	}
	if e != nil {
		s.unlock()
		return e
	}
	t := m.prepareAddPartitions(parts, s.nowMs())
	s.unlock()
	return s.write(ctx, m, t, false)
}

func (m *Meta) hasAll(parts []TopicPartition) bool {
	for _, tp := range parts {
		if !m.Partitions[tp] {
			return false
		}
	}
	return true
}

// VerifyPartitions answers a partition leader's question whether the
// transaction includes these partitions (KIP-890 part 1,
// handleVerifyPartitionsInTransaction): per partition nil, or
// TRANSACTION_ABORTABLE when it was never added; or one error for all.
func (c *Coordinator) VerifyPartitions(id string, pid int64, epoch int16, parts []TopicPartition) (map[TopicPartition]*kerr.Error, *kerr.Error) {
	if id == "" {
		return nil, kerr.InvalidRequest
	}
	s, e := c.shardFor(id)
	if e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.unlock()
	m, e := s.lookup(id, pid, epoch)
	if e != nil {
		return nil, e
	}
	// A pending transition is not checked: the append re-checks.
	if m.State == PrepareCommit || m.State == PrepareAbort {
		return nil, kerr.ConcurrentTransactions
	}
	out := make(map[TopicPartition]*kerr.Error, len(parts))
	for _, tp := range parts {
		if m.Partitions[tp] {
			out[tp] = nil
		} else {
			out[tp] = kerr.TransactionAbortable
		}
	}
	return out, nil
}

// AddOffsets handles AddOffsetsToTxn: the group's __consumer_offsets
// partition joins the transaction, so its offsets commit with it.
func (c *Coordinator) AddOffsets(ctx context.Context, id string, pid int64, epoch int16, groupID string) *kerr.Error {
	tp, e := c.env.OffsetsPartition(groupID)
	if e != nil {
		return e
	}
	return c.AddPartitions(ctx, id, pid, epoch, []TopicPartition{tp})
}

// EndTxn handles EndTxn from a client (handleEndTransaction): the
// transaction moves to PrepareCommit or PrepareAbort, and once that is
// durable the answer goes out and markers are written. version is the
// client's transaction version (2 for EndTxn v5+): with it the epoch bumps
// and the answer carries the new one.
func (c *Coordinator) EndTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool, version int16) (int64, int16, *kerr.Error) {
	if id == "" {
		return noProducerID, noEpoch, kerr.InvalidRequest
	}
	s, e := c.shardFor(id)
	if e != nil {
		return noProducerID, noEpoch, e
	}
	want := PrepareAbort
	if commit {
		want = PrepareCommit
	}
	s.mu.Lock()
	m := s.txns[id]
	if m == nil {
		s.unlock()
		return noProducerID, noEpoch, kerr.InvalidProducerIDMapping
	}
	t, done, e := s.prepareEndTxn(ctx, m, pid, epoch, want, version)
	curPid, curEpoch := m.ProducerID, m.Epoch
	s.unlock()
	switch {
	case e != nil:
		return noProducerID, noEpoch, e
	case done:
		return curPid, curEpoch, nil
	}
	if s.c.cfg.Bugs.MarkerBeforePrepare {
		// The planted bug: markers go out with the Prepare state not yet
		// durable, so a failover may never learn the decision.
		early := Markers{ProducerID: t.ProducerID, Epoch: t.Epoch, Commit: commit, CoordinatorEpoch: s.epoch, Version: t.Version, Partitions: t.Partitions}
		c.cfg.Logger.Warn("planted bug marker-before-prepare: writing markers before the prepare state is durable", "txn", id)
		c.env.WriteMarkers(s.ctx, early)
	}
	if e := s.write(ctx, m, t, false); e != nil {
		return noProducerID, noEpoch, e
	}
	s.mu.Lock()
	defer s.unlock()
	// sendTxnMarkersCallback: answer only if nothing moved meanwhile.
	switch {
	case s.unloaded || s.txns[id] != m:
		return noProducerID, noEpoch, kerr.NotCoordinator
	case m.ProducerID != pid:
		return noProducerID, noEpoch, kerr.InvalidProducerIDMapping
	case m.Epoch != epoch && !(m.Version >= 2 && m.Epoch == epoch+1):
		return noProducerID, noEpoch, kerr.ProducerFenced
	case m.pending != "":
		return noProducerID, noEpoch, kerr.ConcurrentTransactions
	case m.State != want:
		return noProducerID, noEpoch, kerr.InvalidTxnState
	}
	s.startCompletionLocked(m)
	return m.ProducerID, m.Epoch, nil
}

// prepareEndTxn is endTransaction's validation. done reports an answer with
// nothing to write (a retry of a finished end). Caller holds s.mu.
//
// With transaction version 2 (KIP-890 part 2) a client may abort a
// transaction the coordinator never saw start: partitions join on produce,
// the client cannot tell whether a failed produce registered one, so it
// ends with an abort whenever a produce was attempted (franz-go's
// EndTransaction, Kafka's TransactionManager with transactionStarted). Kafka
// takes that abort in Empty, CompleteCommit and CompleteAbort at the
// current epoch (TransactionCoordinator.endTransaction: "the same epoch
// indicates the next transaction was never started", and
// TransactionMetadata.prepareAbortOrCommit with noPartitionAdded): it goes
// through PrepareAbort with no partitions and bumps the epoch like any end.
func (s *shard) prepareEndTxn(ctx context.Context, m *Meta, pid int64, epoch int16, want State, version int16) (t Transit, done bool, e *kerr.Error) {
	v2 := m.Version >= 2
	// Version 2: the stored epoch is the client's + 1 once the end is
	// written, so a retry is recognised by that, or by the rotation an
	// exhausted epoch caused.
	retryOnOverflow := v2 && m.PrevProducerID == pid && epoch == math.MaxInt16-1 && m.Epoch == 0
	retryOnBump := v2 && m.Epoch == epoch+1
	// retry: an end at this epoch is the retry of the finished one (version
	// 1 has no other way to tell; version 2 tells by the bumped epoch).
	retry := !v2 || retryOnBump || retryOnOverflow
	var valid bool
	switch {
	case !v2:
		// Version 1: the client's epoch must be the current one.
		valid = epoch == m.Epoch
	case m.State == PrepareCommit || m.State == PrepareAbort:
		// The current epoch: the next transaction's end, come while this
		// one completes (answered CONCURRENT_TRANSACTIONS below).
		valid = retryOnBump || version >= 2 && epoch == m.Epoch
	case m.State == CompleteCommit || m.State == CompleteAbort:
		// The current epoch: the end of a next transaction that never
		// started on the coordinator (valid, never a retry).
		valid = retryOnBump || retryOnOverflow || version >= 2 && epoch == m.Epoch
	default:
		valid = epoch == m.Epoch
	}
	switch {
	case m.ProducerID != pid && !retryOnOverflow:
		return t, false, kerr.InvalidProducerIDMapping
	case !valid:
		return t, false, kerr.ProducerFenced
	case m.pending != "":
		return t, false, kerr.ConcurrentTransactions
	}
	commit := want == PrepareCommit
	end := func() (Transit, bool, *kerr.Error) {
		next := noProducerID
		if version >= 2 && epochExhausted(m.Epoch) {
			id, e := s.c.env.NewProducerID(ctx)
			if e != nil {
				return Transit{}, false, e
			}
			next = id
		}
		return m.prepareEnd(want, version, next, s.nowMs()), false, nil
	}
	// emptyAbort: a version 2 abort with nothing open (KIP-890).
	emptyAbort := version >= 2 && !commit
	switch m.State {
	case Ongoing:
		return end()
	case CompleteCommit:
		switch {
		case commit && retry:
			return t, true, nil
		case emptyAbort && !retry:
			return end()
		}
	case CompleteAbort:
		switch {
		case !commit && retry:
			return t, true, nil
		case emptyAbort:
			return end()
		}
	case PrepareCommit:
		// Not a retry: the next transaction's end waits, as every
		// request does while a transition is in progress; its retry
		// finds CompleteCommit.
		if commit || !retry {
			return t, false, kerr.ConcurrentTransactions
		}
	case PrepareAbort:
		if !commit || !retry {
			return t, false, kerr.ConcurrentTransactions
		}
	case Empty:
		if emptyAbort {
			return end()
		}
	default:
		panic("txn " + m.ID + ": EndTxn in state " + string(m.State))
	}
	s.c.cfg.Logger.Info("EndTxn in the wrong state", "txn", m.ID, "state", m.State, "commit", commit)
	return t, false, kerr.InvalidTxnState
}
