package cluster

// Broker-side glue of the group coordinator (cluster/group): the
// __consumer_offsets partitions as coordinator.Log, FindCoordinator with the
// topic's creation on first use, and wire.GroupBackend.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/coordinator"
	"gregor/cluster/group"
	"gregor/cluster/meta"
	"gregor/cluster/producer"
	"gregor/cluster/replica"
	"gregor/cluster/storage"
	"gregor/cluster/wire"
)

// groupCoordinator names the coordinator type for Broker's field.
type groupCoordinator = group.Coordinator

// groupConfig is the coordinator's configuration for this broker.
// TODO(lead): expose Config.Groups if harness configs need to tune it.
func (b *Broker) groupConfig() group.Config {
	c := b.cfg.Groups
	c.Logger, c.Node = b.log, b.cfg.NodeID
	if c.Clock == nil {
		c.Clock = b.coordClock()
	}
	return c
}

// startGroups starts the coordinator; it stops when the broker stops
// (before partitions close: shutdown waits for b.wg first).
func (b *Broker) startGroups() *group.Coordinator {
	c := group.New(b.groupConfig(), groupEnv{b})
	c.Start()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		<-b.stop
		c.Close()
	}()
	return c
}

type groupEnv struct{ b *Broker }

func (e groupEnv) Partitions() int32  { return e.b.partitionCount(group.Topic) }
func (e groupEnv) Image() *meta.Image { return e.b.Image() }
func (e groupEnv) Log(partition int32) coordinator.Log {
	return e.b.internalLog(group.Topic, partition)
}

// partitionCount is a topic's partition count in the current metadata, 0
// while it does not exist.
func (b *Broker) partitionCount(topic string) int32 {
	if t := b.Image().Topics[topic]; t != nil {
		return int32(len(t.Partitions))
	}
	return 0
}

// internalLog is this broker's replica of a coordinator's partition, nil
// when it hosts none.
func (b *Broker) internalLog(topic string, partition int32) coordinator.Log {
	p := b.Partition(topic, partition)
	if p == nil {
		return nil
	}
	return internalLog{b: b, p: p}
}

// internalLog is this broker's replica of one partition of a coordinator's
// internal topic (__consumer_offsets, __transaction_state).
type internalLog struct {
	b *Broker
	p *replica.Partition
}

func (l internalLog) LeaderEpoch() (int32, bool) {
	st := l.p.State()
	return st.LeaderEpoch, st.Leader == l.b.cfg.NodeID
}

// Append writes the records as one uncompressed v2 batch with acks=all and
// waits until the high watermark passes it.
func (l internalLog) Append(ctx context.Context, epoch int32, recs []coordinator.Record) (int64, *kerr.Error) {
	b := storage.Batch{Timestamp: l.b.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	return l.append(ctx, epoch, b, recs, replica.AppendOptions{Acks: -1, Origin: producer.Coordinator})
}

// append writes recs as one batch shaped by b, acks=all, in the given
// leader epoch.
func (l internalLog) append(ctx context.Context, epoch int32, b storage.Batch, recs []coordinator.Record, opts replica.AppendOptions) (int64, *kerr.Error) {
	if st := l.p.State(); st.Leader != l.b.cfg.NodeID || st.LeaderEpoch != epoch {
		return 0, kerr.NotLeaderForPartition
	}
	for _, r := range recs {
		b.Keys = append(b.Keys, r.Key)
		b.Values = append(b.Values, r.Value)
	}
	res, e := l.p.AppendAsLeader(b.Encode(), opts)
	if e != nil {
		return 0, e
	}
	if res.Epoch != epoch {
		return 0, kerr.NotLeaderForPartition
	}
	if e := l.p.WaitCommitted(ctx, res.EndOffset, res.Epoch); e != nil {
		return 0, e
	}
	return res.BaseOffset, nil
}

// maxReplayRead bounds one read of a replay.
const maxReplayRead = 1 << 20

// Replay reads the partition from its start to its LEO as of the call.
func (l internalLog) Replay(ctx context.Context, fn func(int64, coordinator.Record)) error {
	start, _, leo := l.p.Offsets()
	for off := start; off < leo; {
		if err := ctx.Err(); err != nil {
			return err
		}
		raw, err := l.p.Log().Read(off, maxReplayRead, leo)
		if err != nil {
			return err
		}
		if len(raw) == 0 {
			return nil
		}
		err = storage.ForEachBatch(raw, func(h storage.BatchHeader, batch []byte) error {
			if h.NextOffset() <= off {
				return nil
			}
			off = h.NextOffset()
			if h.IsControl() {
				m, err := storage.ParseMarker(h, batch)
				if err != nil {
					return err
				}
				fn(h.BaseOffset, coordinator.Record{Txn: &coordinator.TxnInfo{ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, Marker: true, Commit: m.Commit}})
				return nil
			}
			return replayBatch(h, batch, fn)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// replayBatch decodes an uncompressed batch's records; compressed ones
// (never written by the coordinator) are skipped.
func replayBatch(h storage.BatchHeader, batch []byte, fn func(int64, coordinator.Record)) error {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(batch); err != nil {
		return err
	}
	if rb.Attributes&0x07 != 0 {
		return nil
	}
	src := rb.Records
	for i := int32(0); i < rb.NumRecords && len(src) > 0; i++ {
		n, w := binary.Varint(src)
		if w <= 0 || n < 0 || int64(len(src)-w) < n {
			return fmt.Errorf("record %d of batch at %d: bad length", i, h.BaseOffset)
		}
		var r kmsg.Record
		if err := r.ReadFrom(src[:w+int(n)]); err != nil {
			return err
		}
		src = src[w+int(n):]
		rec := coordinator.Record{Key: r.Key, Value: r.Value}
		if h.IsTransactional() {
			rec.Txn = &coordinator.TxnInfo{ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch}
		}
		fn(h.BaseOffset+int64(r.OffsetDelta), rec)
	}
	return nil
}

// --- wire.GroupBackend ---

// GroupCoordinator implements wire.GroupBackend.
func (b *Broker) GroupCoordinator() *group.Coordinator { return b.groups }

// FindCoordinator implements wire.GroupBackend: the leader of the group's
// __consumer_offsets partition, creating the topic on first use.
func (b *Broker) FindCoordinator(ctx context.Context, key string) (wire.Coordinator, *kerr.Error) {
	if b.groups == nil {
		return wire.Coordinator{}, kerr.CoordinatorNotAvailable
	}
	return b.findCoordinator(ctx, group.Topic, b.groups.Config().OffsetsPartitions, key)
}

// findCoordinator is the leader of key's partition of an internal topic
// (Kafka's abs(hashCode) % partitions), creating the topic on first use
// with the cluster's replication factor (min(3, brokers)) and the broker
// min ISR.
func (b *Broker) findCoordinator(ctx context.Context, topic string, partitions int32, key string) (wire.Coordinator, *kerr.Error) {
	im := b.Image()
	t := im.Topics[topic]
	if t == nil {
		rf := int16(min(3, len(im.Brokers)))
		if b.q == nil {
			rf = 1
		}
		_, e, msg := b.CreateTopic(ctx, wire.TopicSpec{Name: topic, Partitions: partitions, RF: rf,
			// No compaction here: unlimited retention keeps every record
			// until deleted, so a reload never loses one.
			Configs: map[string]string{meta.ConfigRetentionMs: "-1", meta.ConfigRetentionSize: "-1"}})
		if e != nil && !errors.Is(e, kerr.TopicAlreadyExists) {
			b.log.Warn("creating "+topic, "err", e, "msg", msg)
			return wire.Coordinator{}, kerr.CoordinatorNotAvailable
		}
		if t = b.Image().Topics[topic]; t == nil {
			return wire.Coordinator{}, kerr.CoordinatorNotAvailable
		}
	}
	p := coordinator.PartitionFor(key, int32(len(t.Partitions)))
	leader := t.Partitions[p].Leader
	br, ok := im.Brokers[leader]
	if !ok {
		im = b.Image()
		br, ok = im.Brokers[leader]
	}
	if leader < 0 || !ok {
		return wire.Coordinator{}, kerr.CoordinatorNotAvailable
	}
	return wire.Coordinator{NodeID: br.ID, Host: br.Host, Port: br.Port}, nil
}
