package kit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// never fires the promise of every record after the first.
type never struct{}

func (never) Produce(_ context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	if r.Offset == 0 {
		promise(r, nil)
	}
}

func TestProduceSyncBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	a, b := &kgo.Record{Offset: 0}, &kgo.Record{Offset: 1}
	res := ProduceSync(ctx, never{}, a, b)
	if len(res) != 2 || res[0].Record != a || res[0].Err != nil || res[1].Record != b || !errors.Is(res[1].Err, ErrStillInFlight) {
		t.Fatalf("got %+v", res)
	}
	if !errors.Is(res.FirstErr(), context.DeadlineExceeded) {
		t.Fatalf("first error %v: a timeout (indeterminate)", res.FirstErr())
	}
}
