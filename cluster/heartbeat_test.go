package cluster

import (
	"testing"
	"time"
)

// A heartbeat attempt never outlives half a session (so a second one fits),
// is never shorter than an interval, and keeps the 5s cap of long sessions.
func TestHeartbeatTimeout(t *testing.T) {
	cases := []struct{ session, interval, want time.Duration }{
		{3 * time.Second, 750 * time.Millisecond, 1500 * time.Millisecond},
		{1500 * time.Millisecond, 1000 * time.Millisecond, 1000 * time.Millisecond},
		{9 * time.Second, 2 * time.Second, 4500 * time.Millisecond},
		{30 * time.Second, 2 * time.Second, 5 * time.Second},
		{0, time.Second, 0},
	}
	for _, c := range cases {
		if got := heartbeatTimeout(c.session, c.interval); got != c.want {
			t.Errorf("session %v interval %v: %v, want %v", c.session, c.interval, got, c.want)
		}
	}
}
