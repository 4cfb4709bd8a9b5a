package txn

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/history"
	"gregor/workloads/queue"
)

// emptyPollsAtEnd is how many successive empty polls, once every
// partition's last stable offset has reached its high watermark, end the
// final read: a read_committed position stops at the last data record, and
// the aborted records and markers after it are never returned, so the
// position alone cannot say the end was reached.
const emptyPollsAtEnd = 3

// FinalRead reads every key from offset 0 read_committed with a fresh
// consumer process, once no transaction is open (every partition's last
// stable offset has reached its high watermark: the coordinator aborts what
// a fault left open within the transaction timeout), up to the end. It
// gives up at ctx's deadline and says which keys were not read to the end.
func (w *Workload) FinalRead(ctx context.Context) error {
	ends, err := w.stableEnds(ctx)
	if err != nil {
		return fmt.Errorf("final read: %w", err)
	}
	pos := make([]int64, w.cfg.Partitions)
	proc := w.newProc()
	reached := func() bool {
		for p, e := range ends {
			if pos[p] < e {
				return false
			}
		}
		return true
	}
	empty := 0
	for range queue.MaxFinalReassigns {
		if reached() || empty >= emptyPollsAtEnd || ctx.Err() != nil {
			break
		}
		cl, err := kgo.NewClient(append(w.baseOpts(), w.consumeOpts(pos, true)...)...)
		if err != nil {
			w.assign(proc, false, err)
			return err
		}
		w.assign(proc, true, nil)
		c := &client{proc: proc, cl: cl}
		for !reached() && empty < emptyPollsAtEnd && ctx.Err() == nil {
			p := history.Process(proc)
			w.write(history.Op{Process: p, Type: history.Invoke, F: history.FPoll, Mops: []history.Mop{history.Poll()}})
			m, errName, reset := w.pollOnce(c, pos, 500*time.Millisecond)
			w.write(history.Op{Process: p, Type: history.OK, F: history.FPoll, Mops: []history.Mop{m}, Error: errName})
			if reset {
				empty = 0
				break
			}
			if len(m.Polls) == 0 {
				empty++
			} else {
				empty = 0
			}
		}
		cl.Close()
	}
	if !reached() && empty < emptyPollsAtEnd {
		return fmt.Errorf("final read incomplete at positions %v of %v", pos, ends)
	}
	return nil
}

// stableEnds waits until every partition's last stable offset equals its
// high watermark and returns them.
func (w *Workload) stableEnds(ctx context.Context) ([]int64, error) {
	cl, err := kgo.NewClient(w.baseOpts()...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var last error
	for ctx.Err() == nil {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		hw, err1 := adm.ListEndOffsets(lctx, w.cfg.Topic)
		lso, err2 := adm.ListCommittedOffsets(lctx, w.cfg.Topic)
		cancel()
		if err := cmpErr(err1, err2); err != nil {
			last = err
		} else {
			ends := make([]int64, w.cfg.Partitions)
			stable := true
			for p := range ends {
				h, ok1 := hw.Lookup(w.cfg.Topic, int32(p))
				l, ok2 := lso.Lookup(w.cfg.Topic, int32(p))
				switch {
				case !ok1 || !ok2 || h.Err != nil || l.Err != nil:
					stable, last = false, fmt.Errorf("%s: %v %v", queue.Key(w.cfg.Topic, int32(p)), h.Err, l.Err)
				case l.Offset < h.Offset:
					stable, last = false, fmt.Errorf("%s: a transaction is still open (last stable offset %d, high watermark %d)", queue.Key(w.cfg.Topic, int32(p)), l.Offset, h.Offset)
				}
				ends[p] = h.Offset
			}
			if stable {
				return ends, nil
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("%w (last: %v)", ctx.Err(), last)
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
