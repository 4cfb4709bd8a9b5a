package kit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// PromiseGrace is how long ProduceSync waits for franz-go's promises once
// its ctx has ended.
const PromiseGrace = time.Second

// ErrStillInFlight is a record whose promise had not fired PromiseGrace
// after its produce's ctx ended: franz-go may hold a record past its
// delivery timeout and its context (seen against a cluster whose every
// broker died: the promises never fired, and a workload waiting on them
// held its run past SIGTERM, issue 26). Indeterminate, as a timeout is.
var ErrStillInFlight = fmt.Errorf("record still in flight after its produce's bound: %w", context.DeadlineExceeded)

// Producer is what produces with a promise: *kgo.Client and
// *kgo.GroupTransactSession.
type Producer interface {
	Produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error))
}

// ProduceSync is kgo's ProduceSync bounded: it returns once every
// record's promise fired, or PromiseGrace after ctx ended, the records
// still in flight then with ErrStillInFlight (in the order given; kgo's
// own is completion order). Promises that fire later change nothing.
func ProduceSync(ctx context.Context, p Producer, rs ...*kgo.Record) kgo.ProduceResults {
	var mu sync.Mutex
	results := make(kgo.ProduceResults, 0, len(rs))
	fired := make([]bool, len(rs))
	abandoned := false
	all := make(chan struct{})
	left := len(rs)
	if left == 0 {
		return results
	}
	for i, r := range rs {
		p.Produce(ctx, r, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if abandoned {
				return
			}
			fired[i] = true
			results = append(results, kgo.ProduceResult{Record: r, Err: err})
			if left--; left == 0 {
				close(all)
			}
		})
	}
	select {
	case <-all:
	case <-ctx.Done():
		select {
		case <-all:
		case <-time.After(PromiseGrace):
		}
	}
	mu.Lock()
	defer mu.Unlock()
	abandoned = true
	for i, r := range rs {
		if !fired[i] {
			results = append(results, kgo.ProduceResult{Record: r, Err: ErrStillInFlight})
		}
	}
	return results
}
