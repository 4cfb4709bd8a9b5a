// Package sleep is the tree's one context-aware sleep: every bounded pause
// (a retry backoff, a poll interval, a fault's hold) ends early when its
// context does, so a cancelled run stops at once instead of sleeping on.
package sleep

import (
	"context"
	"time"
)

// For waits d or until ctx ends, and reports whether the whole d passed
// with ctx still alive. A d <= 0 does not wait.
func For(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Until waits until t or until ctx ends, and reports whether t came with
// ctx still alive.
func Until(ctx context.Context, t time.Time) bool { return For(ctx, time.Until(t)) }

// UntilAny waits until one of watches is closed (or sent on), t passes or
// ctx ends, and reports whether a watch fired: a long poll's wait on the
// partitions it reads (Fetch, ShareFetch). With no watches it reports false
// at once.
func UntilAny(ctx context.Context, watches []<-chan struct{}, t time.Time) bool {
	if len(watches) == 0 {
		return false
	}
	fired := make(chan struct{}, 1)
	stop := make(chan struct{})
	defer close(stop)
	for _, w := range watches {
		go func(w <-chan struct{}) {
			select {
			case <-w:
				select {
				case fired <- struct{}{}:
				default:
				}
			case <-stop:
			}
		}(w)
	}
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-fired:
		return true
	case <-timer.C:
		return false
	case <-ctx.Done():
		return false
	}
}
