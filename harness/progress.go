package harness

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// progress prints one line per tick on the user's terminal (stderr):
// phase, elapsed time, operations done, faults started and in force.
type progress struct {
	// mu serialises lines: the run's phases and the ticker both print, and
	// w need not be safe for concurrent writes.
	mu     sync.Mutex
	w      io.Writer
	start  time.Time
	phase  atomic.Value // string
	ops    func() int64
	faults func() (done, active int)
}

func (p *progress) set(phase string) {
	p.phase.Store(phase)
	p.line()
}

func (p *progress) line() {
	if p.w == nil {
		return
	}
	ph, _ := p.phase.Load().(string)
	var ops int64
	if p.ops != nil {
		ops = p.ops()
	}
	done, active := 0, 0
	if p.faults != nil {
		done, active = p.faults()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "gregor run: %-10s %6.1fs  ops %-7d faults %d (active %d)\n",
		ph, time.Since(p.start).Seconds(), ops, done, active)
}

// loop prints every interval until stop is closed.
func (p *progress) loop(every time.Duration, stop <-chan struct{}) {
	if p.w == nil || every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.line()
		}
	}
}
