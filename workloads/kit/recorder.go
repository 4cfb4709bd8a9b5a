package kit

import (
	"encoding/json"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/history"
	"gregor/workloads/internal/live"
)

// Recorder writes a workload's operations to the history and hands out
// its process ids. Every workload writes through one, so an operation's
// time is always its time since the run's epoch and the progress line
// counts completions the same way.
type Recorder struct {
	h        *history.Writer
	epoch    time.Time
	ops      atomic.Int64
	nextProc atomic.Int64
}

// NewRecorder writes to h, with times relative to epoch.
func NewRecorder(h *history.Writer, epoch time.Time) *Recorder {
	return &Recorder{h: h, epoch: epoch}
}

// Now is the history's clock: nanoseconds since the epoch.
func (r *Recorder) Now() int64 { return int64(time.Since(r.epoch)) }

// Write stamps op with the time and writes it; a completion is counted.
func (r *Recorder) Write(op history.Op) {
	op.Time = r.Now()
	if op.Type != history.Invoke {
		r.ops.Add(1)
	}
	r.h.Write(op)
}

// Ops is the number of operations completed so far.
func (r *Recorder) Ops() int64 { return r.ops.Load() }

// NewProcess hands out a process id no client of the run used before.
func (r *Recorder) NewProcess() int { return int(r.nextProc.Add(1) - 1) }

// CrashEvent writes the crash event of a retired process.
func (r *Recorder) CrashEvent(proc int) {
	raw, _ := json.Marshal(map[string]any{"process": proc})
	r.Write(history.Op{Process: history.Process(proc), Type: history.Info, F: history.FCrash, Raw: raw})
}

// Client is one process's franz-go client, which the client-crash nemesis
// may close under its running operation: that operation then completes as
// info unless it already succeeded, and the process is retired (its
// goroutine writes a crash event and goes on as a new process on a new
// client).
type Client struct {
	Proc    int
	Cl      *kgo.Client
	crashed atomic.Bool
}

// Crashed: the client-crash nemesis closed this client.
func (c *Client) Crashed() bool { return c.crashed.Load() }

func (c *Client) base() *Client { return c }

// Crashable is a workload's client type: Client, or a type embedding it.
type Crashable interface{ base() *Client }

// Clients are a workload's running clients by process, for the nemeses
// that hit one of them; a draw comes from the workload's seeded RNG, so a
// seed replays which client a fault hits.
type Clients[C Crashable] struct {
	set *live.Set[C]
}

// NewClients is an empty set drawing from the RNG of seed and stream (a
// stream of the workload's own, so two workloads' draws differ).
func NewClients[C Crashable](seed int64, stream uint64) *Clients[C] {
	return &Clients[C]{set: live.New[C](rand.New(rand.NewPCG(uint64(seed), stream)))}
}

// Register adds a running client.
func (s *Clients[C]) Register(c C) { s.set.Add(c.base().Proc, c) }

// Unregister forgets a client and closes it.
func (s *Clients[C]) Unregister(c C) {
	s.set.Remove(c.base().Proc)
	c.base().Cl.Close()
}

// Draw picks one running client that eligible accepts (nil: any).
func (s *Clients[C]) Draw(eligible func(C) bool) (proc int, c C, ok bool) {
	return s.set.Draw(eligible)
}

// Crash is the client-crash nemesis's hook. It picks one running client
// not yet crashed and returns its process and tearDown, which closes the
// client under its current operation. The caller records the crash before
// calling tearDown, so the history shows the cause before the effect. ok
// is false when no client runs.
func (s *Clients[C]) Crash() (process int, tearDown func(), ok bool) {
	_, c, ok := s.set.Draw(func(c C) bool { return !c.base().Crashed() })
	if !ok {
		return -1, nil, false
	}
	b := c.base()
	return b.Proc, func() {
		b.crashed.Store(true)
		go b.Cl.Close() // Close waits for in-flight requests; the crash must not
	}, true
}
