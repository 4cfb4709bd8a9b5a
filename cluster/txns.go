package cluster

// Broker-side glue of the transaction coordinator (cluster/txn): the
// __transaction_state partitions as its log, markers sent to partition
// leaders over the Kafka protocol (WriteTxnMarkers), partition leaders'
// questions to the coordinator (AddPartitionsToTxn v4+, KIP-890), and
// wire.TxnBackend.

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/coordinator"
	"gregor/cluster/group"
	"gregor/cluster/producer"
	"gregor/cluster/replica"
	"gregor/cluster/storage"
	"gregor/cluster/txn"
	"gregor/cluster/wire"
)

// startTxns starts the transaction coordinator; it stops when the broker
// stops, before partitions close.
func (b *Broker) startTxns() *txn.Coordinator {
	cfg := b.cfg.Txn
	cfg.Version = b.cfg.TransactionVersion
	cfg.Logger, cfg.Node = b.log, b.cfg.NodeID
	if cfg.Clock == nil {
		cfg.Clock = b.coordClock()
	}
	b.markerConns = newPeerConns(b, "txn-markers")
	b.verifyConns = newPeerConns(b, "txn-verify")
	c := txn.New(cfg, txnEnv{b})
	c.Start()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		<-b.stop
		// Connections first: a marker round blocked on a dead peer ends.
		b.markerConns.close()
		b.verifyConns.close()
		c.Close()
	}()
	return c
}

type txnEnv struct{ b *Broker }

func (e txnEnv) Partitions() int32                   { return e.b.partitionCount(txn.Topic) }
func (e txnEnv) Log(partition int32) coordinator.Log { return e.b.internalLog(txn.Topic, partition) }

func (e txnEnv) NewProducerID(ctx context.Context) (int64, *kerr.Error) {
	id, _, err := e.b.NewProducerID(ctx)
	return id, err
}

func (e txnEnv) OffsetsPartition(groupID string) (txn.TopicPartition, *kerr.Error) {
	t := e.b.Image().Topics[group.Topic]
	if t == nil || groupID == "" {
		return txn.TopicPartition{}, kerr.CoordinatorNotAvailable
	}
	return txn.TopicPartition{Topic: group.Topic, Partition: coordinator.PartitionFor(groupID, int32(len(t.Partitions)))}, nil
}

// markerRequestBound bounds one WriteTxnMarkers round trip: the leader
// answers once the markers are replicated (acks=all).
const markerRequestBound = 15 * time.Second

// WriteMarkers sends the markers to each partition's leader, one
// WriteTxnMarkers request per leader, concurrently.
func (e txnEnv) WriteMarkers(ctx context.Context, m txn.Markers) map[txn.TopicPartition]error {
	out := make(map[txn.TopicPartition]error, len(m.Partitions))
	im := e.b.Image()
	byLeader := map[int32][]txn.TopicPartition{}
	for _, tp := range m.Partitions {
		t := im.Topics[tp.Topic]
		switch {
		case t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions):
			out[tp] = txn.ErrPartitionGone
		case t.Partitions[tp.Partition].Leader < 0:
			out[tp] = kerr.NotLeaderForPartition
		default:
			l := t.Partitions[tp.Partition].Leader
			byLeader[l] = append(byLeader[l], tp)
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for leader, tps := range byLeader {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := e.b.sendMarkers(ctx, leader, m, tps)
			mu.Lock()
			defer mu.Unlock()
			for tp, err := range res {
				out[tp] = err
			}
		}()
	}
	wg.Wait()
	return out
}

// sendMarkers sends one WriteTxnMarkers (v2: with the transaction version,
// KIP-1228) to a leader and reads its per-partition answers.
func (b *Broker) sendMarkers(ctx context.Context, leader int32, m txn.Markers, tps []txn.TopicPartition) map[txn.TopicPartition]error {
	out := make(map[txn.TopicPartition]error, len(tps))
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(2)
	rm := kmsg.NewWriteTxnMarkersRequestMarker()
	rm.ProducerID, rm.ProducerEpoch, rm.Committed, rm.CoordinatorEpoch, rm.TransactionVersion = m.ProducerID, m.Epoch, m.Commit, m.CoordinatorEpoch, int8(m.Version)
	for _, t := range txn.ByTopic(tps) {
		rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		rt.Topic, rt.Partitions = t.Topic, t.Partitions
		rm.Topics = append(rm.Topics, rt)
	}
	for _, tp := range tps {
		out[tp] = kerr.NetworkException // until answered
	}
	req.Markers = append(req.Markers, rm)
	rctx, cancel := context.WithTimeout(ctx, markerRequestBound)
	defer cancel()
	kresp, err := b.markerConns.request(rctx, leader, req)
	if err != nil {
		b.log.Debug("sending transaction markers", "leader", leader, "err", err)
		return out
	}
	resp := kresp.(*kmsg.WriteTxnMarkersResponse)
	for _, mr := range resp.Markers {
		for _, rt := range mr.Topics {
			for _, rp := range rt.Partitions {
				tp := txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
				if _, asked := out[tp]; !asked {
					continue
				}
				if ke := kerr.ErrorForCode(rp.ErrorCode); ke != nil {
					out[tp] = ke
				} else {
					out[tp] = nil
				}
			}
		}
	}
	return out
}

// --- wire.TxnBackend ---

// TxnCoordinator implements wire.TxnBackend.
func (b *Broker) TxnCoordinator() *txn.Coordinator { return b.txns }

// TransactionVersion implements wire.TxnBackend.
func (b *Broker) TransactionVersion() int16 { return b.cfg.TransactionVersion }

// FindTxnCoordinator implements wire.TxnBackend: the leader of the id's
// __transaction_state partition, the topic created on first use.
func (b *Broker) FindTxnCoordinator(ctx context.Context, id string) (wire.Coordinator, *kerr.Error) {
	if b.txns == nil || id == "" {
		return wire.Coordinator{}, kerr.CoordinatorNotAvailable
	}
	return b.findCoordinator(ctx, txn.Topic, b.txns.Config().Partitions, id)
}

// VerifyTxn implements wire.TxnBackend: the coordinator is asked in-process
// when it is this broker, else with AddPartitionsToTxn v5.
func (b *Broker) VerifyTxn(ctx context.Context, id string, pid int64, epoch int16, parts []txn.TopicPartition, add bool) (map[txn.TopicPartition]*kerr.Error, *kerr.Error) {
	t := b.Image().Topics[txn.Topic]
	if t == nil || b.txns == nil {
		return nil, kerr.CoordinatorNotAvailable
	}
	coord := t.Partitions[coordinator.PartitionFor(id, int32(len(t.Partitions)))].Leader
	switch {
	case coord < 0:
		return nil, kerr.CoordinatorNotAvailable
	case coord == b.cfg.NodeID && add:
		return nil, b.txns.AddPartitions(ctx, id, pid, epoch, parts)
	case coord == b.cfg.NodeID:
		return b.txns.VerifyPartitions(id, pid, epoch, parts)
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(5)
	rt := kmsg.NewAddPartitionsToTxnRequestTransaction()
	rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, rt.VerifyOnly = id, pid, epoch, !add
	for _, t := range txn.ByTopic(parts) {
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = t.Topic, t.Partitions
		rt.Topics = append(rt.Topics, tt)
	}
	req.Transactions = append(req.Transactions, rt)
	kresp, err := b.verifyConns.request(ctx, coord, req)
	if err != nil {
		b.log.Debug("transaction verification", "coordinator", coord, "txn", id, "err", err)
		return nil, kerr.NetworkException
	}
	resp := kresp.(*kmsg.AddPartitionsToTxnResponse)
	if e := kerr.ErrorForCode(resp.ErrorCode); e != nil {
		var ke *kerr.Error
		if errors.As(e, &ke) {
			return nil, ke
		}
		return nil, kerr.UnknownServerError
	}
	out := make(map[txn.TopicPartition]*kerr.Error, len(parts))
	for _, tp := range parts {
		out[tp] = kerr.UnknownServerError // unless answered
	}
	for _, r := range resp.Transactions {
		for _, tt := range r.Topics {
			for _, p := range tt.Partitions {
				tp := txn.TopicPartition{Topic: tt.Topic, Partition: p.Partition}
				if _, asked := out[tp]; asked {
					out[tp], _ = kerr.ErrorForCode(p.ErrorCode).(*kerr.Error)
				}
			}
		}
	}
	return out, nil
}

// AppendTxn implements group.TxnLog: a TxnOffsetCommit's records go in one
// transactional batch of the producer, fenced by its epoch (Kafka's
// COORDINATOR origin: no sequence check) and, when it would start the
// producer's transaction on this partition, verified with (or, version 2,
// added by) the transaction coordinator first.
func (l internalLog) AppendTxn(ctx context.Context, epoch int32, w group.TxnWrite, recs []coordinator.Record) (int64, *kerr.Error) {
	guard, e := l.p.BeginVerification(w.ProducerID, w.ProducerEpoch, 0, w.AddPartition)
	if e != nil {
		return 0, e
	}
	// A marker of the previous transaction landing here while the
	// coordinator is asked retires the guard though the answer may be about
	// this one: verified anew under a fresh guard, as a produce is
	// (wire's verifyTxn), a bounded number of times; the append only ever
	// carries a guard the coordinator answered after.
	tp := txn.TopicPartition{Topic: l.p.Topic, Partition: l.p.Index}
	for round := 0; guard != 0; round++ {
		if round == 4 {
			return 0, kerr.ConcurrentTransactions // markers keep landing: the client retries
		}
		res, e := l.b.VerifyTxn(ctx, w.TransactionalID, w.ProducerID, w.ProducerEpoch, []txn.TopicPartition{tp}, w.AddPartition)
		if e == nil {
			e = res[tp]
		}
		if e != nil {
			return 0, e
		}
		cur, e := l.p.BeginVerification(w.ProducerID, w.ProducerEpoch, 0, w.AddPartition)
		if e != nil {
			return 0, e
		}
		if cur == guard || cur == 0 {
			break // still current, or the transaction is open here now
		}
		guard = cur
	}
	b := storage.Batch{Timestamp: l.b.Now().UnixMilli(), ProducerID: w.ProducerID, ProducerEpoch: w.ProducerEpoch,
		BaseSequence: 0, Attributes: storage.AttrTransactional}
	return l.append(ctx, epoch, b, recs, replica.AppendOptions{Acks: -1, Origin: producer.Coordinator, Guard: guard})
}
