package queue

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// A promise franz-go never fires does not hold the send past its bound
// plus the grace: that record is indeterminate, the fired ones keep
// their outcome.
func TestAwaitPromisesBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	dones := []chan struct{}{make(chan struct{}), make(chan struct{})}
	errs := make([]error, 2)
	wg.Add(2)
	fired := errors.New("NOT_LEADER")
	errs[0] = fired
	close(dones[0])
	wg.Done() // the second promise never fires
	got := awaitPromises(ctx, &wg, dones, errs, 10*time.Millisecond)
	if got[0] != fired || !errors.Is(got[1], context.DeadlineExceeded) {
		t.Fatalf("got %v", got)
	}
	// All fired: the errors as they are, without waiting for ctx.
	var wg2 sync.WaitGroup
	d := []chan struct{}{make(chan struct{})}
	close(d[0])
	if got := awaitPromises(context.Background(), &wg2, d, []error{nil}, time.Hour); got[0] != nil {
		t.Fatalf("got %v", got)
	}
}
