package sim

import (
	"fmt"
	"regexp"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// The bubble's clock as seen from outside it (DESIGN.md section 7, what the
// sim cannot model). Virtual time moves only when every goroutine of the
// bubble is durably blocked, so a goroutine that loops without ever
// blocking (a client retrying at once, with no backoff, a request that is
// answered in no time) or one that waits on something outside the bubble
// (a sync.Mutex held across a network wait) stops it for good: the timers
// that would end the loop (a restart, a deadline) never fire, and the run
// hangs until a wall-clock bound kills it. While a simulated cluster runs,
// its brokers' timers fall due every few hundred milliseconds, so a clock
// that has not moved for a long wall-clock while is a stall, not a pause:
// WatchClock says so, and which goroutines did it.
var clock struct {
	up      atomic.Int32 // clusters running
	virtual atomic.Int64 // the bubble's time.Now, UnixNano
}

// clockTick is how often a running cluster publishes the bubble's clock.
const clockTick = 100 * time.Millisecond

// publishClock publishes the bubble's clock every clockTick until done is
// closed (a goroutine of the bubble, one per running cluster).
func publishClock(done <-chan struct{}) {
	clock.up.Add(1)
	defer clock.up.Add(-1)
	t := time.NewTicker(clockTick)
	defer t.Stop()
	for {
		clock.virtual.Store(time.Now().UnixNano())
		select {
		case <-done:
			return
		case <-t.C:
		}
	}
}

// Stall is a virtual clock that stopped while a cluster ran.
type Stall struct {
	At   time.Time     // the bubble's clock when it stopped
	Wall time.Duration // how long it has not moved
	CPU  time.Duration // the process's CPU time meanwhile
	// Spinning: a goroutine of the bubble was runnable, so one loops
	// without blocking (its CPU share is the machine's to give: on a loaded
	// one it may be small); otherwise one waits on something outside
	// virtual time.
	Spinning bool
	// Culprits describe the goroutines that did it: the loop (a goroutine
	// runnable in every look, or the nearest ancestor of the runnable ones
	// common to every look, since a loop that starts goroutines is seen
	// running a different one each time), or those not durably blocked.
	Culprits []string
}

func (s Stall) String() string {
	what := "a goroutine of the bubble loops without ever blocking"
	if !s.Spinning {
		what = "a goroutine of the bubble waits on something outside virtual time (not durably blocked)"
	}
	return fmt.Sprintf("the virtual clock stopped at %s: it has not moved in %v of wall time, with %v of CPU: %s; %s",
		s.At.Format("15:04:05.000"), s.Wall.Round(time.Second), s.CPU.Round(100*time.Millisecond), what, strings.Join(s.Culprits, "; "))
}

// WatchClock runs outside the bubble: every after/10 of wall time it looks
// at the clock the running clusters publish, and calls onStall once (then
// returns) when it has not moved for after while a cluster ran. Closing
// stop ends it. A bubble with no cluster up is not watched: the checker's
// CPU work after the run takes no virtual time either, rightly.
func WatchClock(stop <-chan struct{}, after time.Duration, onStall func(Stall)) {
	t := time.NewTicker(after / 10)
	defer t.Stop()
	last, since, cpuAt := int64(0), time.Now(), cpuTime()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		v := clock.virtual.Load()
		if clock.up.Load() == 0 || v != last {
			last, since, cpuAt = v, time.Now(), cpuTime()
			continue
		}
		if wall := time.Since(since); wall >= after {
			st := Stall{At: time.Unix(0, v), Wall: wall, CPU: cpuTime() - cpuAt}
			st.Spinning, st.Culprits = culprits()
			onStall(st)
			return
		}
	}
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// culprits looks at every goroutine three times, 100 ms of wall time apart:
// spinning if a goroutine of the bubble was runnable in any look.
func culprits() (spinning bool, _ []string) {
	var looks []map[int]*goroutine
	for i := range 3 {
		if i > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		look := parseGoroutines(AllStacks())
		for _, g := range look {
			spinning = spinning || g.bubble && g.runnable
		}
		looks = append(looks, look)
	}
	if !spinning {
		return false, describeAll(looks[len(looks)-1], func(g *goroutine) bool { return g.bubble && !g.durable })
	}
	return true, loops(looks)
}

// AllStacks is every goroutine's stack, as a SIGQUIT prints them.
func AllStacks() []byte {
	buf := make([]byte, 1<<20)
	for {
		n := goruntime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// goroutine is one goroutine of a stack dump.
type goroutine struct {
	id, parent                int // parent: the goroutine that started it
	state                     string
	bubble, durable, runnable bool
	frames                    []string // functions, innermost first
	createdBy                 string
}

var (
	goroutineHeader = regexp.MustCompile(`^goroutine (\d+)(?: gp=\S+ m=\S+(?: mp=\S+)?)? \[(.*)\]:$`)
	createdByLine   = regexp.MustCompile(`^created by (\S+)(?: in goroutine (\d+))?$`)
	frameLine       = regexp.MustCompile(`^(\S.*)\(.*\)$`)
)

// parseGoroutines reads a stack dump.
func parseGoroutines(dump []byte) map[int]*goroutine {
	gs := map[int]*goroutine{}
	var g *goroutine
	for line := range strings.SplitSeq(string(dump), "\n") {
		if m := goroutineHeader.FindStringSubmatch(line); m != nil {
			id, _ := strconv.Atoi(m[1])
			g = &goroutine{id: id, state: m[2], bubble: strings.Contains(m[2], "synctest bubble"),
				durable:  strings.Contains(m[2], "(durable)"),
				runnable: strings.HasPrefix(m[2], "running") || strings.HasPrefix(m[2], "runnable")}
			gs[id] = g
			continue
		}
		if g == nil || line == "" || strings.HasPrefix(line, "\t") {
			continue
		}
		if m := createdByLine.FindStringSubmatch(line); m != nil {
			g.createdBy = m[1]
			g.parent, _ = strconv.Atoi(m[2])
		} else if m := frameLine.FindStringSubmatch(line); m != nil {
			g.frames = append(g.frames, m[1])
		}
	}
	return gs
}

// loops names the loop behind the runnable goroutines of the bubble: the
// innermost goroutines that, in every look, are runnable or an ancestor of
// one that is. A loop that never blocks is runnable itself; one that starts
// goroutines ending at once (franz-go's redials) waits on a different one
// in each look, and is their common ancestor.
func loops(looks []map[int]*goroutine) []string {
	var common map[int]bool
	var last map[int]*goroutine
	for _, look := range looks {
		active := map[int]bool{}
		for _, g := range look {
			for a := g; g.bubble && g.runnable && a != nil && a.bubble && !active[a.id]; a = look[a.parent] {
				active[a.id] = true
			}
		}
		if len(active) == 0 { // caught between two turns of the loop
			continue
		}
		if common == nil {
			common = active
		}
		last = look
		for id := range common {
			if !active[id] {
				delete(common, id)
			}
		}
	}
	for id := range common { // keep the innermost: drop every ancestor
		seen := map[int]bool{id: true}
		for a := last[last[id].parent]; a != nil && a.bubble && !seen[a.id]; a = last[a.parent] {
			seen[a.id] = true
			delete(common, a.id)
		}
	}
	return describeAll(last, func(g *goroutine) bool { return common[g.id] })
}

// describeAll describes the goroutines of gs that pick chooses, by id.
func describeAll(gs map[int]*goroutine, pick func(*goroutine) bool) []string {
	var ids []int
	for id, g := range gs {
		if pick(g) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var out []string
	for _, id := range ids {
		out = append(out, describe(gs[id]))
	}
	if len(out) == 0 {
		out = []string{"no goroutine of the bubble found to blame (see the stacks)"}
	}
	return out
}

// describe is a goroutine's id, state and innermost functions of its own
// (runtime and sync frames left out), outermost last.
func describe(g *goroutine) string {
	var fs []string
	for _, f := range g.frames {
		if strings.HasPrefix(f, "runtime.") || strings.HasPrefix(f, "internal/") || strings.HasPrefix(f, "sync.") {
			continue
		}
		if fs = append(fs, f[strings.LastIndex(f, "/")+1:]); len(fs) == 12 {
			break
		}
	}
	return fmt.Sprintf("goroutine %d [%s] %s (created by %s)", g.id, g.state, strings.Join(fs, " < "), g.createdBy[strings.LastIndex(g.createdBy, "/")+1:])
}
