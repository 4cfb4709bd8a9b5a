package eos

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/history"
	"gregor/workloads/kit"
)

// FinalRead waits until no transaction is open on the output, reads the
// output and the input read_committed from offset 0 (poll lines; the
// input's so that records the pipeline had not reached are seen, not
// taken for lost), and records the group's committed offsets (an
// eos-offsets line).
func (w *Workload) FinalRead(ctx context.Context) error {
	cl, err := kgo.NewClient(w.baseOpts()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	out := w.cfg.OutTopic()
	if _, err := kit.StableEnds(ctx, adm, out, w.cfg.Partitions); err != nil {
		return fmt.Errorf("final read: %s: a transaction stayed open: %w", out, err)
	}
	proc := history.Process(w.NewProcess())
	offs := map[int32]kgo.Offset{}
	for p := range w.cfg.Partitions {
		offs[int32(p)] = kgo.NewOffset().At(0)
	}
	rd, err := kgo.NewClient(append(w.baseOpts(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{out: offs, w.cfg.Topic: offs}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(500*time.Millisecond))...)
	if err != nil {
		return err
	}
	defer rd.Close()
	var keys []string
	for _, topic := range []string{w.cfg.Topic, out} {
		for p := range w.cfg.Partitions {
			keys = append(keys, kit.Key(topic, int32(p)))
		}
	}
	w.Write(history.Op{Process: proc, Type: history.Invoke, F: history.FAssign, Keys: keys})
	w.Write(history.Op{Process: proc, Type: history.OK, F: history.FAssign, Keys: keys})
	for empty := 0; empty < kit.EmptyPollsAtEnd && ctx.Err() == nil; {
		w.Write(history.Op{Process: proc, Type: history.Invoke, F: history.FPoll, Mops: []history.Mop{history.Poll()}})
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := rd.PollFetches(pctx)
		cancel()
		byKey := map[string][]history.Record{}
		fs.EachRecord(func(r *kgo.Record) {
			if v, err := strconv.ParseInt(string(r.Value), 10, 64); err == nil {
				k := kit.Key(r.Topic, r.Partition)
				byKey[k] = append(byKey[k], history.Record{Offset: r.Offset, Value: v})
			}
		})
		m := history.Poll()
		m.Polls = []history.KeyRecords{}
		for _, k := range keys {
			if rs := byKey[k]; len(rs) > 0 {
				m.Polls = append(m.Polls, history.KeyRecords{Key: k, Records: rs})
			}
		}
		w.Write(history.Op{Process: proc, Type: history.OK, F: history.FPoll, Mops: []history.Mop{m}})
		if len(m.Polls) == 0 {
			empty++
		} else {
			empty = 0
		}
	}
	w.Write(history.Op{Process: proc, Type: history.Invoke, F: history.FEOSOffsets})
	var committed kadm.OffsetResponses
	for ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		committed, err = adm.FetchOffsets(fctx, Group)
		cancel()
		if err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		w.Write(history.Op{Process: proc, Type: history.Fail, F: history.FEOSOffsets, Error: err.Error()})
		return fmt.Errorf("final read: the group's offsets: %w", err)
	}
	v := history.EOSOffsets{Input: w.cfg.Topic, Output: out, Group: Group, Offsets: map[string]int64{}}
	committed.Each(func(o kadm.OffsetResponse) {
		if o.Topic == w.cfg.Topic && o.Err == nil {
			v.Offsets[kit.Key(o.Topic, o.Partition)] = o.At
		}
	})
	raw, _ := json.Marshal(v)
	w.Write(history.Op{Process: proc, Type: history.OK, F: history.FEOSOffsets, Raw: raw})
	return nil
}
