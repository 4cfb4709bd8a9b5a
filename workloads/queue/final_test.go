package queue

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// finalFake is a cluster as the final read sees it: listed end offsets that
// can trail the log, and reads that end exactly at the ends asked for (as a
// leader serving up to its HW does).
type finalFake struct {
	log   []int64 // each partition's real end
	stale int     // how many listings trail log by lag
	lag   int64
	lists int
}

func (f *finalFake) list(context.Context) ([]int64, error) {
	f.lists++
	out := make([]int64, len(f.log))
	for p, e := range f.log {
		out[p] = e
		if f.lists <= f.stale {
			out[p] = e - f.lag
		}
	}
	return out, nil
}

func (f *finalFake) read(_ context.Context, ends []int64) ([]int64, error) {
	return append([]int64(nil), ends...), nil
}

func names(pos, target []int64) []string {
	var out []string
	for p := range target {
		if pos[p] < target[p] {
			out = append(out, fmt.Sprintf("t/%d at %d of %d", p, pos[p], target[p]))
		}
	}
	return out
}

// Issue 28's second false alarm: the final read took a new leader's stale
// high watermark for the end and stopped 13 acknowledged records short. It
// must read on to every acknowledged offset once the end moves, and take
// records as gone only when the end stays below them.
func TestFinalReadPastStaleEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acked := []int64{500, 886, 20}

	f := &finalFake{log: []int64{500, 886, 20}, stale: 2, lag: 13}
	if err := readPastAcks(ctx, acked, time.Minute, f.list, f.read, names); err != nil {
		t.Fatalf("a stale end for two listings: %v", err)
	}
	if f.lists != 3 {
		t.Errorf("%d listings, want 3 (two stale, then the real end)", f.lists)
	}

	// A shorter log (acks=1 lost the tail): the end never reaches the
	// acknowledged offsets, and the read ends by itself, saying so.
	f = &finalFake{log: []int64{500, 873, 20}}
	err := readPastAcks(ctx, acked, 50*time.Millisecond, f.list, f.read, names)
	if err == nil || !strings.Contains(err.Error(), "stayed below acknowledged records") || !strings.Contains(err.Error(), "t/1 at 873 of 886") {
		t.Fatalf("a log shorter than its acknowledgements: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the read waited for the context instead of settling")
	}

	// Nothing acknowledged past the ends: one listing, one read.
	f = &finalFake{log: []int64{600, 900, 20}}
	if err := readPastAcks(ctx, acked, time.Minute, f.list, f.read, names); err != nil || f.lists != 1 {
		t.Fatalf("ends past every acknowledgement: %v after %d listings", err, f.lists)
	}
}
