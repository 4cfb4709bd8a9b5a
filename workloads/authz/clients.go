package authz

import (
	"context"
	"encoding/binary"
	"errors"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/history"
	"gregor/workloads/kit"
)

// client is one of p's clients as process proc: the principal's SASL
// user over the client-link network.
func (w *Workload) client(proc int, p principal, more ...kgo.Opt) (*kit.Client, error) {
	o := append([]kgo.Opt{kgo.SeedBrokers(w.env.Bootstrap...), kgo.Dialer(w.env.Dial(proc)), p.mechanism(),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.MetadataMinAge(100 * time.Millisecond), kgo.MetadataMaxAge(2 * time.Second)}, more...)
	cl, err := kgo.NewClient(o...)
	if err != nil {
		return nil, err
	}
	c := &kit.Client{Proc: proc, Cl: cl}
	w.clients.Register(c)
	return c, nil
}

// pace waits for the next operation at the run's rate per client
// (--rate), or ends with ctx.
func (w *Workload) pace(ctx context.Context) bool {
	d := 50 * time.Millisecond
	if w.s.Rate > 0 {
		d = time.Duration(float64(time.Second) * float64(w.s.Producers) / w.s.Rate)
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// produceLoop sends p's records, one at a time and acks=all, round robin
// over the partitions; a crashed client's process is retired.
func (w *Workload) produceLoop(ctx context.Context, p principal) {
	var n int64
	for ctx.Err() == nil {
		c, err := w.client(w.rec.NewProcess(), p, kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordDeliveryTimeout(w.s.DeliveryTimeout))
		if err != nil {
			return
		}
		for ctx.Err() == nil && !c.Crashed() && w.pace(ctx) {
			part := int32(n % int64(max(1, w.s.Partitions)))
			v := history.AuthzSend{Principal: p.name(), Key: kit.Key(w.s.Topic, part), Value: int64(p.index+1)<<40 | n, Offset: history.NoOffset}
			n++
			w.send(ctx, c, part, v)
		}
		if c.Crashed() {
			w.rec.CrashEvent(c.Proc)
		}
		w.clients.Unregister(c)
	}
}

func (w *Workload) send(ctx context.Context, c *kit.Client, part int32, v history.AuthzSend) {
	proc := history.Process(c.Proc)
	w.rec.Write(history.AuthzOp(proc, history.Invoke, history.FAuthzSend, v))
	sctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	r := &kgo.Record{Topic: w.s.Topic, Partition: part, Value: []byte(strconv.FormatInt(v.Value, 10))}
	err := kit.ProduceSync(sctx, c.Cl, r).FirstErr()
	typ := kit.Classify(err, false)
	if err == nil {
		v.Offset = r.Offset
	}
	done := history.AuthzOp(proc, typ, history.FAuthzSend, v)
	if err != nil {
		done.Error = kit.ErrorName(err)
	}
	w.rec.Write(done)
}

// fetchLoop fetches p's way through the partitions, each fetch a raw
// Fetch to the partition's leader (learnt as the super user: without READ
// or DESCRIBE p's own Metadata names no leader), so its line says exactly
// what that broker answered when: the consumer never returns records a
// background fetch got earlier.
func (w *Workload) fetchLoop(ctx context.Context, p principal) {
	pos := map[int32]int64{}
	var n int
	for ctx.Err() == nil {
		c, err := w.client(w.rec.NewProcess(), p)
		if err != nil {
			return
		}
		for ctx.Err() == nil && !c.Crashed() && w.pace(ctx) {
			part := int32(n % max(1, w.s.Partitions))
			n++
			w.fetch(ctx, c, p, part, pos)
		}
		if c.Crashed() {
			w.rec.CrashEvent(c.Proc)
		}
		w.clients.Unregister(c)
	}
}

func (w *Workload) fetch(ctx context.Context, c *kit.Client, p principal, part int32, pos map[int32]int64) {
	fctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	leader, err := w.leader(fctx, part)
	if err != nil {
		return // nothing asked as p: no line
	}
	proc := history.Process(c.Proc)
	v := history.AuthzPoll{Principal: p.name(), Key: kit.Key(w.s.Topic, part), From: pos[part]}
	w.rec.Write(history.AuthzOp(proc, history.Invoke, history.FAuthzPoll, v))
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 100, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = w.s.Topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = part, pos[part], 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp, err := req.RequestWith(fctx, c.Cl.Broker(int(leader)))
	if err == nil {
		err = fetchError(resp)
	}
	typ := history.OK
	if err == nil {
		v.Records, err = records(resp.Topics[0].Partitions[0].RecordBatches)
		if n := len(v.Records); n > 0 {
			pos[part] = v.Records[n-1].Offset + 1
		}
	}
	if err != nil {
		typ, v.Records = history.Info, nil
		if errors.Is(err, kerr.TopicAuthorizationFailed) {
			typ = history.Fail // answered before reading anything
		}
	}
	done := history.AuthzOp(proc, typ, history.FAuthzPoll, v)
	if err != nil {
		done.Error = kit.ErrorName(err)
	}
	w.rec.Write(done)
}

// leader is the partition's leader as the super user's metadata says.
func (w *Workload) leader(ctx context.Context, part int32) (int32, error) {
	md, err := w.adm.Metadata(ctx, w.s.Topic)
	if err != nil {
		return -1, err
	}
	t, ok := md.Topics[w.s.Topic]
	if !ok || t.Err != nil {
		return -1, errors.New("topic not described")
	}
	pd, ok := t.Partitions[part]
	if !ok || pd.Leader < 0 {
		return -1, errors.New("no leader")
	}
	return pd.Leader, nil
}

func fetchError(resp *kmsg.FetchResponse) error {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return errors.New("fetch answered another shape than asked")
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}

// records decodes uncompressed v2 record batches (the workload's
// producers compress nothing), skipping control batches.
func records(b []byte) ([]history.AuthzRecord, error) {
	var out []history.AuthzRecord
	for len(b) >= 12 {
		size := 12 + int(int32(binary.BigEndian.Uint32(b[8:])))
		if size < 12 || size > len(b) {
			break // a partial batch at the end of the answer
		}
		var batch kmsg.RecordBatch
		if err := batch.ReadFrom(b[:size]); err != nil {
			return nil, err
		}
		b = b[size:]
		if batch.Attributes&0x20 != 0 || batch.Attributes&0x07 != 0 {
			continue // control or compressed: not the workload's
		}
		rs := batch.Records
		for range batch.NumRecords {
			l, n := binary.Varint(rs)
			if n <= 0 || int(l)+n > len(rs) {
				return nil, errors.New("record runs past its batch")
			}
			var r kmsg.Record
			if err := r.ReadFrom(rs[:n+int(l)]); err != nil {
				return nil, err
			}
			rs = rs[n+int(l):]
			val, err := strconv.ParseInt(string(r.Value), 10, 64)
			if err != nil {
				continue
			}
			out = append(out, history.AuthzRecord{Offset: batch.FirstOffset + int64(r.OffsetDelta), Value: val})
		}
	}
	return out, nil
}
