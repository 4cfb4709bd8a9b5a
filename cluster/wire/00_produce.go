package wire

// Produce: v3-12 (record batch v2 only; v12 only when the cluster's
// transaction.version is 2).
//
// Behaviour:
//   - acks=0: appended, no response at all; acks=1: answered after the
//     leader's append; acks=-1 (all): min ISR checked before appending
//     (NOT_ENOUGH_REPLICAS), then answered once the HW passes the batch, or
//     NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below min ISR
//     meanwhile, or REQUEST_TIMED_OUT after TimeoutMillis, or
//     NOT_LEADER_OR_FOLLOWER if leadership moved (the write's fate is then
//     unknown to the client, as in Kafka);
//   - a batch larger than the topic's max.message.bytes (default: the
//     broker's message.max.bytes, 1048588) is refused with MESSAGE_TOO_LARGE,
//     as Kafka's UnifiedLog does;
//   - every batch's CRC is checked; offsets and the leader epoch are assigned
//     by the leader; every compression codec passes through untouched (the
//     broker never decompresses);
//   - idempotent batches: sequence checks per producer and partition; a
//     retried batch is answered with its original offsets and not written again;
//   - transactional batches (KIP-98): the producer's epoch fences zombies
//     (INVALID_PRODUCER_EPOCH); a batch that would start the producer's
//     transaction on a partition is first checked with the transaction
//     coordinator (KIP-890 part 1, AddPartitionsToTxn verifyOnly) or, with
//     v12, added to the transaction by it (KIP-890 part 2); coordinator
//     errors are answered as Kafka's ReplicaManager translates them
//     (NOT_ENOUGH_REPLICAS for retriable ones, INVALID_PRODUCER_EPOCH for a
//     fenced producer, INVALID_TXN_STATE / TRANSACTION_ABORTABLE for a
//     partition not in the transaction);
//   - with the authorizer: WRITE on the TransactionalId of a transactional
//     request (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition),
//     WRITE on each topic (TOPIC_AUTHORIZATION_FAILED), as KafkaApis.

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/meta"
	"gregor/cluster/replica"
	"gregor/cluster/storage"
	"gregor/cluster/txn"
	"gregor/internal/sleep"
)

func init() { register(0, 3, 12, handleProduce) }

// maxProduceWait bounds an acks=all wait whatever the client asks for.
const maxProduceWait = 5 * time.Minute

// maxVerifyWait bounds a leader's question to the transaction coordinator
// (Kafka: request.timeout.ms of the AddPartitionsToTxn it sends).
const maxVerifyWait = 10 * time.Second

// Kafka's add.partitions.to.txn.retry.backoff.ms and
// add.partitions.to.txn.retry.backoff.max.ms defaults (AddPartitionsToTxnConfig).
const (
	addRetryBackoff = 20 * time.Millisecond
	addRetryMax     = 100 * time.Millisecond
)

func handleProduce(s *Server, ctx context.Context, hdr header, kreq kmsg.Request) reply {
	req := kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	var slots []produceSlot
	var pid int64 = -1
	var epoch int16 = -1
	im := s.b.Image()
	// KafkaApis.handleProduceRequest: WRITE on the transactional id for a
	// transactional request (else the whole request fails), WRITE on each
	// topic (else its partitions), before anything else is looked at.
	txnDenied := req.TransactionID != nil && !s.txnIDAuthorized(hdr, kmsg.ACLOperationWrite, *req.TransactionID)
	for ti, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		denied := kerr.TransactionalIDAuthorizationFailed.Code
		if !txnDenied {
			denied = 0
			if !s.topicAuthorized(hdr, kmsg.ACLOperationWrite, t.Topic) {
				denied = kerr.TopicAuthorizationFailed.Code
			}
		}
		for pi, tp := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = tp.Partition
			rp.BaseOffset = -1
			rp.LogAppendTime = -1
			rp.LogStartOffset = -1
			if denied != 0 {
				rp.ErrorCode = denied
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			p := s.b.Partition(t.Topic, tp.Partition)
			if p == nil {
				if topic := im.Topics[t.Topic]; topic != nil && tp.Partition >= 0 && int(tp.Partition) < len(topic.Partitions) {
					rp.ErrorCode = kerr.NotLeaderForPartition.Code
				} else {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if size, max, big := s.oversized(im, t.Topic, tp.Records); big {
				// UnifiedLog.analyzeAndValidateRecords: RecordTooLargeException.
				rp.ErrorCode = kerr.MessageTooLarge.Code
				rp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("The record batch size in the append to %s-%d is %d bytes which exceeds the maximum configured value of %d.", t.Topic, tp.Partition, size, max))
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			sl := produceSlot{ti: ti, pi: pi, p: p, tp: txn.TopicPartition{Topic: t.Topic, Partition: tp.Partition}}
			if h, err := storage.ParseBatchHeader(tp.Records); err == nil && h.IsTransactional() {
				if e := sameProducer(req, h, &pid, &epoch); e != nil {
					rp.ErrorCode = e.Code
					rt.Partitions = append(rt.Partitions, rp)
					continue
				}
				sl.txn, sl.seq = true, h.BaseSequence
			}
			slots = append(slots, sl)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	verdicts := s.verifyTxn(ctx, req, pid, epoch, slots)
	type waitFor struct {
		ti, pi int
		p      *replica.Partition
		end    int64
		epoch  int32
	}
	var waits []waitFor
	for _, sl := range slots {
		rp := &resp.Topics[sl.ti].Partitions[sl.pi]
		if e := verdicts.errs[sl.tp]; e != nil {
			rp.ErrorCode = e.Code
			continue
		}
		records := req.Topics[sl.ti].Partitions[sl.pi].Records
		res, e := sl.p.AppendAsLeader(records, replica.AppendOptions{Acks: req.Acks, Guard: verdicts.guards[sl.tp],
			LogAppendTime: s.logAppendTime(im, sl.tp.Topic)})
		if e != nil {
			rp.ErrorCode = e.Code
			continue
		}
		rp.BaseOffset = res.BaseOffset
		rp.LogAppendTime = res.LogAppendTime
		rp.LogStartOffset = res.LogStart
		if req.Acks == -1 {
			waits = append(waits, waitFor{sl.ti, sl.pi, sl.p, res.EndOffset, res.Epoch})
		}
	}
	if req.Acks == 0 {
		return reply{none: true}
	}
	if len(waits) == 0 {
		return now(resp)
	}
	timeout := min(time.Duration(req.TimeoutMillis)*time.Millisecond, maxProduceWait)
	return reply{later: func() kmsg.Response {
		wctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		for _, w := range waits {
			if e := w.p.WaitCommitted(wctx, w.end, w.epoch); e != nil {
				rp := &resp.Topics[w.ti].Partitions[w.pi]
				rp.ErrorCode = e.Code
				rp.BaseOffset = -1
			}
		}
		return resp
	}}
}

// logAppendTime reports whether topic's message.timestamp.type is
// LogAppendTime: the leader stamps each batch with its own clock.
func (s *Server) logAppendTime(im *meta.Image, topic string) bool {
	c, _ := meta.LookupTopicConfig(meta.ConfigTimestampType)
	v, _ := im.Layers(im.Topics[topic], s.b.NodeID(), s.b.BrokerDefaults()).Resolve(c)
	return v == "LogAppendTime"
}

// oversized reports the first record batch in records larger than the
// topic's max.message.bytes, with its size and the limit. A malformed set is
// left to the append, which refuses it with CORRUPT_MESSAGE.
func (s *Server) oversized(im *meta.Image, topic string, records []byte) (size int, max int64, big bool) {
	max = im.Layers(im.Topics[topic], s.b.NodeID(), s.b.BrokerDefaults()).Int(meta.ConfigMaxMessageBytes)
	// Bounded: each pass consumes at least the 12-byte batch prefix.
	for len(records) >= 12 {
		size = 12 + int(int32(binary.BigEndian.Uint32(records[8:])))
		if size < 12 {
			return 0, max, false
		}
		if int64(size) > max {
			return size, max, true
		}
		if size > len(records) {
			return 0, max, false
		}
		records = records[size:]
	}
	return 0, max, false
}

// produceSlot is one partition of a produce request this broker leads.
type produceSlot struct {
	ti, pi int
	p      *replica.Partition
	tp     txn.TopicPartition
	// txn: the batch is transactional, its first sequence seq.
	txn bool
	seq int32
}

// sameProducer checks that every transactional batch of the request is of
// one producer (ReplicaManager.handleProduceAppend) with a transactional id.
func sameProducer(req *kmsg.ProduceRequest, h storage.BatchHeader, pid *int64, epoch *int16) *kerr.Error {
	if req.TransactionID == nil || *req.TransactionID == "" {
		return kerr.InvalidRecord
	}
	if *pid == -1 {
		*pid, *epoch = h.ProducerID, h.ProducerEpoch
	} else if h.ProducerID != *pid || h.ProducerEpoch != *epoch {
		return kerr.InvalidProducerIDMapping
	}
	return nil
}

// verdicts are the outcome of verifying a request's transactional batches:
// per partition an error, or the guard its append must carry (none when
// its transaction is already open there).
type verdicts struct {
	errs   map[txn.TopicPartition]*kerr.Error
	guards map[txn.TopicPartition]uint64
}

// verifyTxn starts the leader's verification of each transactional batch
// that would start its producer's transaction on its partition (KIP-890
// part 1; with v12, part 2's implicit add) and asks the coordinator about
// those, bounded by maxVerifyWait and the request's timeout.
func (s *Server) verifyTxn(ctx context.Context, req *kmsg.ProduceRequest, pid int64, epoch int16, slots []produceSlot) verdicts {
	v := verdicts{errs: map[txn.TopicPartition]*kerr.Error{}, guards: map[txn.TopicPartition]uint64{}}
	add := req.Version >= 12
	begin := func() []txn.TopicPartition {
		var ask []txn.TopicPartition
		for _, sl := range slots {
			if !sl.txn {
				continue
			}
			guard, e := sl.p.BeginVerification(pid, epoch, sl.seq, add)
			switch {
			case e != nil:
				v.errs[sl.tp] = e
			case guard != 0:
				v.guards[sl.tp] = guard
				ask = append(ask, sl.tp)
			}
		}
		return ask
	}
	ask := begin()
	if len(ask) == 0 {
		return v
	}
	tb, ok := s.b.(TxnBackend)
	if !ok || tb.TxnCoordinator() == nil {
		for _, tp := range ask {
			v.errs[tp] = kerr.NotEnoughReplicas
		}
		return v
	}
	vctx, cancel := context.WithTimeout(ctx, min(maxVerifyWait, time.Duration(req.TimeoutMillis)*time.Millisecond))
	defer cancel()
	res, e := tb.VerifyTxn(vctx, *req.TransactionID, pid, epoch, ask, add)
	// Kafka 4 (KAFKA-18654): a version 2 produce racing the markers of the
	// producer's previous transaction retries on the broker, every
	// add.partitions.to.txn.retry.backoff.ms (20) for at most
	// add.partitions.to.txn.retry.backoff.max.ms (100), instead of sending
	// CONCURRENT_TRANSACTIONS (as NOT_ENOUGH_REPLICAS) back to the client.
	// Each retry starts the verification anew: a marker landing meanwhile
	// retires the guards of the last attempt.
	for start := time.Now(); add && e == kerr.ConcurrentTransactions && time.Since(start) < addRetryMax; {
		if !sleep.For(vctx, addRetryBackoff) {
			break // the request's time is up: answer what the last try said
		}
		clear(v.guards)
		if ask = begin(); len(ask) == 0 {
			return v
		}
		res, e = tb.VerifyTxn(vctx, *req.TransactionID, pid, epoch, ask, add)
	}
	answer := func(ask []txn.TopicPartition, res map[txn.TopicPartition]*kerr.Error, e *kerr.Error) {
		for _, tp := range ask {
			pe := e
			if pe == nil {
				pe = res[tp]
			}
			v.errs[tp] = produceVerifyError(pe, req.Version)
		}
	}
	answer(ask, res, e)
	// A marker of the producer's previous transaction landing on a
	// partition while the coordinator is asked retires that partition's
	// guard (RecordMarker), even when the answer is about the next
	// transaction: the coordinator adds or confirms a partition only with
	// no transition pending, so after every marker of the previous one.
	// The guard seen once the answer is back tells the cases apart: still
	// current, no marker landed before the answer arrived (a later one
	// fails the append, as the guard is for); retired, the answer may
	// postdate the marker, so the partition is verified anew under a fresh
	// guard rather than refused (refused, a KIP-890 client takes the
	// INVALID_TXN_STATE as fatal: franz-go's TestTxnEtl). Bounded: a round
	// needs a marker of this producer on the partition meanwhile.
	for round := 0; round < maxReverify; round++ {
		var again []txn.TopicPartition
		for _, sl := range slots {
			g, asked := v.guards[sl.tp]
			if !asked || !sl.txn || v.errs[sl.tp] != nil {
				continue
			}
			cur, be := sl.p.BeginVerification(pid, epoch, sl.seq, add)
			switch {
			case be != nil:
				v.errs[sl.tp] = be
			case cur == 0:
				// The transaction is open here now (another request
				// of the producer started it): the batch continues it.
				delete(v.guards, sl.tp)
			case cur != g:
				v.guards[sl.tp] = cur
				again = append(again, sl.tp)
			}
		}
		if len(again) == 0 {
			break
		}
		res, e := tb.VerifyTxn(vctx, *req.TransactionID, pid, epoch, again, add)
		answer(again, res, e)
	}
	return v
}

// maxReverify bounds the verifications a produce starts anew because a
// marker retired their guard while the coordinator was asked.
const maxReverify = 3

// produceVerifyError translates the coordinator's answer for a partition as
// Kafka's ReplicaManager and AddPartitionsToTxnManager do: retriable
// coordinator trouble becomes NOT_ENOUGH_REPLICAS (retried without a
// metadata refresh), a fenced producer INVALID_PRODUCER_EPOCH, and a
// partition not in the transaction TRANSACTION_ABORTABLE (INVALID_TXN_STATE
// before v11, which predates it).
func produceVerifyError(e *kerr.Error, version int16) *kerr.Error {
	switch e {
	case nil:
		return nil
	case kerr.ConcurrentTransactions, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable, kerr.NotCoordinator, kerr.NetworkException, kerr.RequestTimedOut:
		return kerr.NotEnoughReplicas
	case kerr.ProducerFenced:
		return kerr.InvalidProducerEpoch
	case kerr.TransactionAbortable:
		if version <= 10 {
			return kerr.InvalidTxnState
		}
	}
	return e
}
