//go:build synctests

package sim

import (
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// watch starts WatchClock outside the bubble; stalls come on the channel.
func watch(t *testing.T, after time.Duration, onStall func(Stall)) <-chan Stall {
	t.Helper()
	stop := make(chan struct{})
	got := make(chan Stall, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		WatchClock(stop, after, func(s Stall) {
			got <- s
			onStall(s)
		})
	}()
	t.Cleanup(func() { close(stop); <-done })
	return got
}

// spinUntil loops without blocking until stop is set, starting a goroutine
// a turn that ends at once, as franz-go's redial loop does.
func spinUntil(stop *atomic.Bool) {
	for !stop.Load() {
		ended := make(chan struct{})
		go func() { close(ended) }()
		<-ended
	}
}

// TestWatchClockNamesTheSpinningLoop: a goroutine that loops without ever
// blocking, while a cluster's clock is published, stops the virtual clock;
// the watch says the process kept spinning and names the loop's function
// (the goroutine it keeps starting is a different one in every look).
func TestWatchClockNamesTheSpinningLoop(t *testing.T) {
	var stop atomic.Bool
	got := watch(t, time.Second, func(Stall) { stop.Store(true) })
	synctest.Test(t, func(t *testing.T) {
		done := make(chan struct{})
		go publishClock(done)
		time.Sleep(time.Second) // the clock moves: a second of virtual time in no wall time
		spinUntil(&stop)
		close(done)
	})
	s := <-got
	if !s.Spinning || s.CPU <= 0 {
		t.Errorf("stall %v: want one seen spinning (CPU used)", s)
	}
	if len(s.Culprits) != 1 || !strings.Contains(s.Culprits[0], "spinUntil") {
		t.Errorf("culprits %q, want the one goroutine in spinUntil", s.Culprits)
	}
	if want := time.Date(2000, 1, 1, 0, 0, 1, 0, time.UTC); !s.At.Equal(want) {
		t.Errorf("stopped at %v, want %v (the bubble's start plus its second)", s.At.UTC(), want)
	}
}

// waitOutside waits on a channel made outside the bubble: not durably
// blocked, so the bubble's clock cannot move past it.
func waitOutside(ch <-chan struct{}) { <-ch }

// TestWatchClockNamesAGoroutineBlockedOutsideVirtualTime: a goroutine
// waiting on a channel made outside the bubble (as a sync.Mutex held across
// a network wait was, MEASUREMENTS 4.3) stops the clock with no CPU spent;
// the watch names the waiter, not a loop.
func TestWatchClockNamesAGoroutineBlockedOutsideVirtualTime(t *testing.T) {
	release := make(chan struct{})
	got := watch(t, time.Second, func(Stall) { close(release) })
	synctest.Test(t, func(t *testing.T) {
		done := make(chan struct{})
		go publishClock(done)
		waitOutside(release)
		close(done)
	})
	s := <-got
	if s.Spinning {
		t.Errorf("stall %v: want one seen blocked (little CPU)", s)
	}
	if len(s.Culprits) != 1 || !strings.Contains(s.Culprits[0], "waitOutside") {
		t.Errorf("culprits %q, want the one goroutine in waitOutside", s.Culprits)
	}
}

// TestWatchClockQuietOnAMovingClockAndWithNoCluster: CPU work in short
// steps between which the virtual clock moves, with a cluster's clock
// published, and long CPU work with none published (the checker after the
// run), are no stall.
func TestWatchClockQuietOnAMovingClockAndWithNoCluster(t *testing.T) {
	const after = 2 * time.Second
	got := watch(t, after, func(Stall) {})
	wall := wallClock(t)
	synctest.Test(t, func(t *testing.T) {
		done := make(chan struct{})
		go publishClock(done)
		for range 30 { // 3 s of wall time in all, the clock moving every 100 ms of it
			time.Sleep(time.Second)
			wallSpin(wall, 100*time.Millisecond)
		}
		close(done)
		for clock.up.Load() != 0 {
			time.Sleep(time.Millisecond)
		}
		wallSpin(wall, after+after/2) // no cluster: not watched
	})
	select {
	case s := <-got:
		t.Errorf("stall reported: %v", s)
	default:
	}
}

// wallClock is the wall clock, kept by a goroutine outside the bubble for
// the bubble to read (its own time.Now is virtual).
func wallClock(t *testing.T) *atomic.Int64 {
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				now.Store(time.Now().UnixNano())
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return &now
}

// wallSpin keeps a CPU busy for d of wall time, taking no virtual time.
func wallSpin(wall *atomic.Int64, d time.Duration) {
	start := wall.Load()
	for time.Duration(wall.Load()-start) < d {
	}
}

// TestLoopsNamesFranzGoRedialLoop: two looks at the real redial loop
// (testdata: a SIGQUIT dump of a stuck run), the second as the loop's next
// turn (its three short-lived goroutines renumbered), name the sink's
// goroutine loading the producer id, not the dial that happened to be
// running.
func TestLoopsNamesFranzGoRedialLoop(t *testing.T) {
	dump, err := os.ReadFile("testdata/franz-go-redial-loop.txt")
	if err != nil {
		t.Fatal(err)
	}
	next := strings.NewReplacer("goroutine 9567338", "goroutine 9567348", "goroutine 9567339", "goroutine 9567349",
		"goroutine 9567340", "goroutine 9567350").Replace(string(dump))
	first, second := parseGoroutines(dump), parseGoroutines([]byte(next))
	if g := first[9567340]; g == nil || !g.runnable || !g.bubble || g.parent != 9567339 {
		t.Fatalf("goroutine 9567340: %+v, want a runnable one of the bubble started by 9567339", g)
	}
	got := loops([]map[int]*goroutine{first, second})
	if len(got) != 1 || !strings.HasPrefix(got[0], "goroutine 7404 ") || !strings.Contains(got[0], "doInitProducerID") {
		t.Errorf("loops %q, want goroutine 7404 in doInitProducerID", got)
	}
	if one := loops([]map[int]*goroutine{first}); len(one) != 1 || !strings.HasPrefix(one[0], "goroutine 9567340 ") {
		t.Errorf("one look: %q, want the runnable goroutine itself", one)
	}
}
