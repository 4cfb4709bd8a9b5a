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
