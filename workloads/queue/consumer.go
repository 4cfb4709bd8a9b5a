package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/history"
	"gregor/internal/sleep"
	"gregor/workloads/kit"
)

// reader is a consumer process: a client assigned every key at positions.
// Invariant: pos[p] is one past the last offset this process's polls
// returned for partition p (the next offset it expects). Not checked: it is
// what poll sets after each record, and whether the cluster then serves
// from there is what the checker judges from the history.
type reader struct {
	c   *client
	pos []int64
}

// assign starts a new client at pos and records the assign (invoke, ok).
func (w *Workload) assign(proc int, pos []int64) (*client, error) {
	keys := w.cfg.Keys()
	w.Write(history.Op{Process: history.Process(proc), Type: history.Invoke, F: history.FAssign, Keys: keys})
	offs := map[int32]kgo.Offset{}
	for p, o := range pos {
		offs[int32(p)] = kgo.NewOffset().At(o)
	}
	opts := append(w.baseOpts(proc), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.cfg.Topic: offs}),
		kgo.FetchMaxWait(min(w.cfg.PollTimeout, 500*time.Millisecond)))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		w.Write(history.Op{Process: history.Process(proc), Type: history.Fail, F: history.FAssign, Keys: keys, Error: err.Error()})
		return nil, err
	}
	w.Write(history.Op{Process: history.Process(proc), Type: history.OK, F: history.FAssign, Keys: keys})
	c := &client{Proc: proc, Cl: cl}
	w.live.Register(c)
	return c, nil
}

// poll runs one poll operation. It reports whether the client hit an error
// that calls for a re-assign (a fetch error other than the poll's timeout).
func (w *Workload) poll(r *reader) (needReassign bool) {
	proc := history.Process(r.c.Proc)
	w.Write(history.Op{Process: proc, Type: history.Invoke, F: history.FPoll, Mops: []history.Mop{history.Poll()}})
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.PollTimeout)
	fs := r.c.Cl.PollRecords(ctx, 10000)
	cancel()
	byPart := make([][]history.Record, w.cfg.Partitions)
	var parseErr error
	fs.EachRecord(func(rec *kgo.Record) {
		v, err := strconv.ParseInt(string(rec.Value), 10, 64)
		if err != nil {
			parseErr = fmt.Errorf("%s offset %d: value %q is not an integer", kit.Key(rec.Topic, rec.Partition), rec.Offset, rec.Value)
			return
		}
		if int(rec.Partition) < len(byPart) {
			byPart[rec.Partition] = append(byPart[rec.Partition], history.Record{Offset: rec.Offset, Value: v})
			r.pos[rec.Partition] = rec.Offset + 1
		}
	})
	m := history.Poll()
	for p, recs := range byPart {
		if len(recs) > 0 {
			m.Polls = append(m.Polls, history.KeyRecords{Key: kit.Key(w.cfg.Topic, int32(p)), Records: recs})
		}
	}
	if m.Polls == nil {
		m.Polls = []history.KeyRecords{}
	}
	// Records returned are facts whatever else went wrong: the poll is ok.
	op := history.Op{Process: proc, Type: history.OK, F: history.FPoll, Mops: []history.Mop{m}}
	for _, fe := range fs.Errors() {
		if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
			continue
		}
		needReassign = true
		op.Error = kit.ErrorName(fe.Err)
	}
	if parseErr != nil {
		op.Error, needReassign = parseErr.Error(), true
	}
	w.Write(op)
	return needReassign || r.c.Crashed()
}

// consumeLoop polls every key from offset 0 until ctx is done, re-assigning
// (a new client at the same positions) after errors and crashes.
func (w *Workload) consumeLoop(ctx context.Context) {
	r := &reader{pos: make([]int64, w.cfg.Partitions)}
	proc := w.NewProcess()
	for ctx.Err() == nil {
		c, err := w.assign(proc, r.pos)
		if err != nil {
			return
		}
		r.c = c
		for ctx.Err() == nil {
			if w.poll(r) {
				break
			}
		}
		w.live.Unregister(c)
		if c.Crashed() {
			w.CrashEvent(c.Proc)
			proc = w.NewProcess()
		} else if ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond) // let metadata settle before re-assigning
		}
	}
}

// settleFor is how long the listed end offsets must stay put, below an
// acknowledged offset, before the final read takes those records as gone
// rather than not yet visible. A new leader's HW trails what the old one
// acknowledged until its followers fetch from it, one round trip (gregor's
// brokers answer OFFSET_NOT_AVAILABLE meanwhile, as KIP-207 says; a cluster
// without KIP-207 lists the stale HW), so seconds tell a stale end from a
// shorter log.
const settleFor = 3 * time.Second

// maxFinalRounds bounds the final read's rounds of listing end offsets and
// reading to them: settleFor at one round per finalRoundGap, with margin.
const (
	finalRoundGap  = 200 * time.Millisecond
	maxFinalRounds = 4 * int(settleFor/finalRoundGap)
)

// FinalRead reads every key from offset 0 with a fresh consumer process,
// recording the assign and the polls, up to its high watermark (as
// ListEndOffsets gives it) and on until it has read past every offset a
// producer of this run saw acknowledged, or the end offsets stayed below
// them for settleFor. It gives up at ctx's deadline and says which keys
// were not read to their end.
func (w *Workload) FinalRead(ctx context.Context) error {
	r := &reader{pos: make([]int64, w.cfg.Partitions)}
	proc := w.NewProcess()
	read := func(ctx context.Context, ends []int64) ([]int64, error) {
		err := w.readTo(ctx, proc, r, ends)
		return r.pos, err
	}
	return readPastAcks(ctx, w.ackedEnds(), settleFor, w.endOffsets, read, w.below)
}

// readPastAcks is the final read's rounds: list the end offsets, read to
// them, and stop once the positions pass every acknowledged offset, or the
// ends stayed put below some of them for settle (those records are gone:
// the checker names them), or ctx ends.
func readPastAcks(ctx context.Context, acked []int64, settle time.Duration,
	list func(context.Context) ([]int64, error),
	read func(context.Context, []int64) ([]int64, error),
	below func(pos, target []int64) []string) error {
	var ends, pos []int64
	var since time.Time // when ends last moved
	for range maxFinalRounds {
		next, err := list(ctx)
		if err != nil {
			// Say what was awaited: the keys short of their acknowledged
			// offsets ("t/1 at 873 of 886").
			if pos == nil {
				pos = make([]int64, len(acked))
			}
			return fmt.Errorf("final read: high watermarks: %w; acknowledged records not read: %v", err, below(pos, acked))
		}
		if !slices.Equal(next, ends) {
			ends, since = next, time.Now()
		}
		if pos, err = read(ctx, ends); err != nil {
			return err
		}
		short := below(pos, acked)
		if len(short) == 0 {
			return nil
		}
		if time.Since(since) >= settle {
			return fmt.Errorf("final read: end offsets stayed below acknowledged records for %v, so %w: %v", settle, kit.ErrLogGone, short)
		}
		if !sleep.For(ctx, finalRoundGap) {
			break
		}
	}
	return fmt.Errorf("final read: acknowledged records not read: %v (%v)", below(pos, acked), ctx.Err())
}

// readTo polls with r until r.pos reaches ends, re-assigning after errors
// (at most kit.MaxFinalReassigns times), and says which keys fell short.
func (w *Workload) readTo(ctx context.Context, proc int, r *reader, ends []int64) error {
	for range kit.MaxFinalReassigns {
		if len(w.below(r.pos, ends)) == 0 || ctx.Err() != nil {
			break
		}
		c, err := w.assign(proc, r.pos)
		if err != nil {
			return err
		}
		r.c = c
		for len(w.below(r.pos, ends)) > 0 && ctx.Err() == nil {
			if w.poll(r) {
				break
			}
		}
		w.live.Unregister(c)
	}
	if short := w.below(r.pos, ends); len(short) > 0 {
		return fmt.Errorf("final read incomplete: %v", short)
	}
	return nil
}

// below names the keys whose position is short of its target.
func (w *Workload) below(pos, target []int64) []string {
	var short []string
	for p, e := range target {
		if pos[p] < e {
			short = append(short, fmt.Sprintf("%s at %d of %d", kit.Key(w.cfg.Topic, int32(p)), pos[p], e))
		}
	}
	return short
}

// ackedEnds is, per partition, one past the highest offset a producer of
// this run saw acknowledged (0 where none was).
func (w *Workload) ackedEnds() []int64 {
	out := make([]int64, len(w.acked))
	for p := range w.acked {
		out[p] = w.acked[p].Load()
	}
	return out
}

// endOffsets asks for every partition's high watermark until all answer or
// ctx ends.
func (w *Workload) endOffsets(ctx context.Context) ([]int64, error) {
	cl, err := kgo.NewClient(w.baseOpts(-1)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var last error
	for ctx.Err() == nil {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		res, err := adm.ListEndOffsets(lctx, w.cfg.Topic)
		cancel()
		if err == nil {
			ends := make([]int64, w.cfg.Partitions)
			complete := true
			for p := range ends {
				o, ok := res.Lookup(w.cfg.Topic, int32(p))
				if !ok || o.Err != nil {
					complete = false
					last = fmt.Errorf("%s: %v", kit.Key(w.cfg.Topic, int32(p)), o.Err)
					break
				}
				ends[p] = o.Offset
			}
			if complete {
				return ends, nil
			}
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("%w (last: %v)", ctx.Err(), last)
}
