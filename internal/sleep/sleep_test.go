package sleep

import (
	"context"
	"testing"
	"time"
)

func TestForEndsWithContext(t *testing.T) {
	if !For(context.Background(), time.Millisecond) {
		t.Fatal("a short sleep on a live context reported cancellation")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if For(ctx, time.Hour) {
		t.Fatal("a sleep on a cancelled context reported the full wait")
	}
	if For(ctx, 0) || !For(context.Background(), -time.Second) {
		t.Fatal("a non-positive wait must report the context's state")
	}
	if Until(ctx, time.Now().Add(time.Hour)) {
		t.Fatal("Until on a cancelled context reported the full wait")
	}
}

// TestUntilAny: a closed watch ends the wait with true; none firing ends it
// at the deadline or with ctx, false; no watches report false at once.
func TestUntilAny(t *testing.T) {
	fired := make(chan struct{})
	close(fired)
	idle := make(chan struct{})
	far := time.Now().Add(time.Hour)
	if !UntilAny(context.Background(), []<-chan struct{}{idle, fired}, far) {
		t.Fatal("a closed watch did not end the wait")
	}
	if UntilAny(context.Background(), []<-chan struct{}{idle}, time.Now()) {
		t.Fatal("a passed deadline reported a firing")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if UntilAny(ctx, []<-chan struct{}{idle}, far) {
		t.Fatal("an ended context reported a firing")
	}
	if UntilAny(context.Background(), nil, far) {
		t.Fatal("no watches reported a firing")
	}
}
