package docker

import (
	"context"
	"math/rand/v2"
	"time"
)

// Without netem, delay is emulated by freezing the container for delay (+-
// jitter), then letting it run for delay/4 (at least minRun), over and over:
// packets to it wait in its socket buffers and its answers leave late, by
// ~0.4x delay on average, and its throughput falls to about a fifth. It is
// cruder than netem (the whole node stalls, not just its links) and
// Capabilities says so.

// freezerCallTimeout bounds one pause or unpause call of the freezer.
const freezerCallTimeout = 5 * time.Second

// minRun is the shortest running window between freezes.
const minRun = 5 * time.Millisecond

// maxFreezeFor bounds how long a freezer runs if nobody stops it.
const maxFreezeFor = 24 * time.Hour

type freezer struct {
	stop chan struct{}
	done chan struct{}
}

func (c *Cluster) startFreezer(n *node, delay, jitter time.Duration) {
	c.stopFreezer(n)
	f := &freezer{stop: make(chan struct{}), done: make(chan struct{})}
	n.mu.Lock()
	n.freezer = f
	n.mu.Unlock()
	go func() {
		defer close(f.done)
		defer c.freeze(n, false)
		run := max(delay/4, minRun)
		deadline := time.Now().Add(maxFreezeFor)
		for time.Now().Before(deadline) {
			d := delay
			if jitter > 0 {
				d += time.Duration((rand.Float64()*2 - 1) * float64(jitter))
			}
			if d > 0 {
				c.freeze(n, true)
				if !wait(f.stop, d) {
					return
				}
				c.freeze(n, false)
			}
			if !wait(f.stop, run) {
				return
			}
		}
	}()
}

// stopFreezer stops the node's freezer, if any, and returns once the node is
// thawed (unless Pause holds it).
func (c *Cluster) stopFreezer(n *node) {
	n.mu.Lock()
	f := n.freezer
	n.freezer = nil
	n.mu.Unlock()
	if f != nil {
		close(f.stop)
		<-f.done
	}
}

// freeze pauses (on) or thaws the container for the freezer. It leaves a
// container alone while Pause holds it; errors (a killed node) are ignored:
// the freezer resumes its effect when the node runs again.
func (c *Cluster) freeze(n *node, on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), freezerCallTimeout)
	defer cancel()
	switch {
	case on && !n.userPaused && !n.frozen:
		if c.cli.ContainerPause(ctx, n.containerID) == nil {
			n.frozen = true
		}
	case !on && n.frozen:
		c.cli.ContainerUnpause(ctx, n.containerID)
		n.frozen = false
	}
}

// wait sleeps d; false if stop closed first.
func wait(stop <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
		return false
	case <-t.C:
		return true
	}
}
