package nemesis

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"gregor/internal/sleep"
)

// Composed faults (PlanOptions.Compose): Jepsen's composed nemesis runs one
// generator per fault family and merges them, so faults of different kinds
// overlap (a kill during a partition, a pause during a restart); here each
// stream draws its own serial timeline and the timelines are merged in
// start order. The steps stay plain records (time, kind, shape, hold, pick),
// so a composed schedule is stored and replayed like a serial one.

// streamNetwork is the stream of the faults that write the nodes' network
// rules: a partition's heal removes every rule, so they never overlap.
const streamNetwork = "network"

// stream is the stream a step of kind k belongs to.
func stream(k Kind) string {
	if k == Partition || k == Slow {
		return streamNetwork
	}
	return string(k)
}

// composeTimelines draws every stream's timeline from rng, in the order the
// streams first appear in o.Kinds, and merges them by start time (ties keep
// stream order).
func composeTimelines(rng *rand.Rand, o PlanOptions) Schedule {
	var order []string
	kinds := map[string][]Kind{}
	for _, k := range o.Kinds {
		s := stream(k)
		if _, ok := kinds[s]; !ok {
			order = append(order, s)
		}
		kinds[s] = append(kinds[s], k)
	}
	var all Schedule
	for _, s := range order {
		all = append(all, timeline(rng, o, kinds[s], MaxSteps/len(order))...)
	}
	slices.SortStableFunc(all, func(a, b Step) int { return cmp.Compare(a.At, b.At) })
	return all
}

// runOverlapping runs a schedule whose steps overlap: each step starts at
// its time on its own goroutine; Run returns when every started step ended.
func (r *Runner) runOverlapping(ctx context.Context, sched Schedule) {
	base := time.Now()
	var wg sync.WaitGroup
	for i, st := range sched {
		if !sleep.Until(ctx, base.Add(st.At)) {
			break
		}
		wg.Go(func() { r.step(ctx, i, st) })
	}
	wg.Wait()
}
