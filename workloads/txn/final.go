package txn

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/history"
	"gregor/workloads/kit"
)

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
	proc := w.NewProcess()
	reached := func() bool {
		for p, e := range ends {
			if pos[p] < e {
				return false
			}
		}
		return true
	}
	empty := 0
	for range kit.MaxFinalReassigns {
		if reached() || empty >= kit.EmptyPollsAtEnd || ctx.Err() != nil {
			break
		}
		cl, err := kgo.NewClient(append(w.baseOpts(), w.consumeOpts(pos, true)...)...)
		if err != nil {
			w.assign(proc, false, err)
			return err
		}
		w.assign(proc, true, nil)
		c := &client{Client: kit.Client{Proc: proc, Cl: cl}}
		for !reached() && empty < kit.EmptyPollsAtEnd && ctx.Err() == nil {
			p := history.Process(proc)
			w.Write(history.Op{Process: p, Type: history.Invoke, F: history.FPoll, Mops: []history.Mop{history.Poll()}})
			m, errName, reset := w.pollOnce(c, pos, 500*time.Millisecond)
			w.Write(history.Op{Process: p, Type: history.OK, F: history.FPoll, Mops: []history.Mop{m}, Error: errName})
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
	if !reached() && empty < kit.EmptyPollsAtEnd {
		return fmt.Errorf("final read incomplete at positions %v of %v", pos, ends)
	}
	return nil
}

// stableEnds waits until no transaction is open (kit.StableEnds).
func (w *Workload) stableEnds(ctx context.Context) ([]int64, error) {
	cl, err := kgo.NewClient(w.baseOpts()...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return kit.StableEnds(ctx, kadm.NewClient(cl), w.cfg.Topic, w.cfg.Partitions)
}
