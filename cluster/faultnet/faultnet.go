// Package faultnet is the process runtime's network fault layer: where
// brokers share one host and no firewall can be given per node, each broker
// routes its dials and accepted connections through this layer, which drops
// traffic to and from blocked peers and delays the rest. It is an emulation,
// documented as such in reports: a blocked connection stalls (as TCP does when
// packets are dropped) rather than the kernel dropping packets.
//
// The harness controls it through a file, <data>/netfaults.json, that the
// broker polls: a file survives a broker restart, so faults in force apply to
// a restarted node too, and a paused broker picks them up when resumed.
package faultnet

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"time"

	"gregor/internal/atomicfile"
)

// Rules are the faults in force for one node.
type Rules struct {
	// Drop lists peer IPs whose traffic is dropped both ways.
	Drop []string `json:"drop,omitempty"`
	// DelayMs (+- JitterMs) delays each write on its way to the wire; LossPct
	// of writes are delayed further by a retransmission timeout, as lost
	// segments are. Delays overlap (a latency, not a bandwidth cap) and
	// order is kept (delayline.go).
	DelayMs  int     `json:"delay_ms,omitempty"`
	JitterMs int     `json:"jitter_ms,omitempty"`
	LossPct  float64 `json:"loss_pct,omitempty"`
}

// FileName is the control file's name in a broker's data directory.
const FileName = "netfaults.json"

// retransmitDelay is what a lost segment costs: Linux's minimum RTO.
const retransmitDelay = 200 * time.Millisecond

// dialStallMax bounds how long a dial to a blocked peer hangs before it
// times out, like an unanswered SYN.
const dialStallMax = 3 * time.Second

// Layer applies Rules to connections.
type Layer struct {
	mu      sync.Mutex
	drop    map[string]bool
	rules   Rules
	changed chan struct{} // closed and replaced on every change
	self    string        // local IP to dial from, so peers can tell who calls
	nw      Network
	// frozen is non-nil while the node is paused (Freeze): every call of
	// the node's on its network waits for it to be closed (Thaw).
	frozen chan struct{}
	// delivering counts the layer's delay lines with a deliverer running
	// (>= 0); idle, when non-nil, is closed as it falls to 0 (Delivered).
	delivering int
	idle       chan struct{}
}

// New returns a layer with no faults over the host's sockets. self is this
// node's IP ("" for any).
func New(self string) *Layer { return NewOn(self, Sockets{}) }

// NewOn returns a layer with no faults over network nw (the simulation's
// in-memory Mem).
func NewOn(self string, nw Network) *Layer {
	return &Layer{drop: map[string]bool{}, changed: make(chan struct{}), self: self, nw: nw}
}

// Network is the network the layer's connections go over.
func (l *Layer) Network() Network { return l.nw }

// Listen listens on addr through the layer's network; accepted connections
// are under the layer.
func (l *Layer) Listen(addr string) (net.Listener, error) {
	ln, err := l.nw.Listen(addr)
	if err != nil {
		return nil, err
	}
	return l.Listener(ln), nil
}

// Set replaces the rules in force.
func (l *Layer) Set(r Rules) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rules = r
	l.drop = make(map[string]bool, len(r.Drop))
	for _, ip := range r.Drop {
		l.drop[ip] = true
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

// Rules returns the rules in force.
func (l *Layer) Rules() Rules {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rules
}

// Freeze pauses the node's side of its network, as SIGSTOP pauses a
// process whose sockets the kernel keeps (the simulation's pause; the
// process runtime sends the signal instead): from now until Thaw, no call
// the node makes through the layer starts or returns. Its reads, writes,
// dials, accepts and closes wait, so nothing it does reaches a peer, and a
// call already waiting (a read parked on an idle connection, a deadline
// that fires) returns only after Thaw, as a stopped process sees its
// syscalls complete when it is continued. Peers see what they see of a
// stopped process: their dials complete into the listener's backlog and
// their writes fill the connection's buffer, but nothing answers. Kill
// closes the node's sockets at the network (faultnet.Mem.CloseHost) and
// then thaws, so that a killed paused node's calls fail and its goroutines
// end.
func (l *Layer) Freeze() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.frozen == nil {
		l.frozen = make(chan struct{})
	}
}

// Thaw resumes a frozen node (SIGCONT): every call waiting goes on at once.
func (l *Layer) Thaw() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.frozen != nil {
		close(l.frozen)
		l.frozen = nil
	}
}

// Frozen says whether the node is paused.
func (l *Layer) Frozen() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.frozen != nil
}

// hold waits while the node is frozen. It is bounded by the pause: the
// sim's Resume, Kill and Close all thaw.
func (l *Layer) hold() {
	l.mu.Lock()
	ch := l.frozen
	l.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// Delivered waits until none of the layer's connections has delayed bytes
// on the way: each deliverer ends when its queue is out, its connection
// broke, or its cut link healed, closed or gave up (queuedStallMax). A
// cluster's Close waits for it, so that nothing of the cluster outlives
// it (in a testing/synctest bubble, a goroutine left asleep on a link
// delay is a failure).
func (l *Layer) Delivered() {
	l.mu.Lock()
	if l.delivering == 0 {
		l.mu.Unlock()
		return
	}
	if l.idle == nil {
		l.idle = make(chan struct{})
	}
	idle := l.idle
	l.mu.Unlock()
	<-idle
}

// deliverer runs a connection's deliverer, counted for Delivered.
func (l *Layer) deliverer(deliver func()) {
	l.mu.Lock()
	l.delivering++
	l.mu.Unlock()
	go func() {
		defer func() {
			l.mu.Lock()
			l.delivering--
			if l.delivering == 0 && l.idle != nil {
				close(l.idle)
				l.idle = nil
			}
			l.mu.Unlock()
		}()
		deliver()
	}()
}

func (l *Layer) blocked(ip string) (bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drop[ip], l.changed
}

func hostOf(addr net.Addr) string {
	if addr == nil {
		return ""
	}
	h, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return h
}

// Watch polls path every interval and applies its rules until ctx ends. A
// missing file means no faults. A malformed file keeps the rules in force
// and calls onErr (it is being written; the next poll sees it whole, as the
// harness writes it by rename).
func (l *Layer) Watch(ctx context.Context, path string, interval time.Duration, onErr func(error)) {
	var last []byte
	first := true
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		b, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if first || last != nil {
				l.Set(Rules{})
			}
			last = nil
		case err != nil:
			onErr(err)
		case first || string(b) != string(last):
			var r Rules
			if err := json.Unmarshal(b, &r); err != nil {
				onErr(err)
			} else {
				l.Set(r)
				last = b
			}
		}
		first = false
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// WriteRules replaces a node's control file whole (internal/atomicfile).
func WriteRules(path string, r Rules) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b, 0o644)
}

// Dial connects to addr through the layer: from this node's IP, stalling
// and then timing out while addr's host is blocked.
func (l *Layer) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	l.hold()
	defer l.hold() // a connect completed during a pause is seen on resume
	if blocked, changed := l.blocked(host); blocked {
		t := time.NewTimer(dialStallMax)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, &net.OpError{Op: "dial", Net: network, Err: context.DeadlineExceeded}
		case <-t.C:
			return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("i/o timeout (faultnet: peer unreachable)")}
		case <-changed:
			// Re-check once: a heal lets the dial through.
			if b, _ := l.blocked(host); b {
				return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("i/o timeout (faultnet: peer unreachable)")}
			}
		}
		l.hold()
	}
	c, err := l.nw.Dial(ctx, l.self, addr)
	if err != nil {
		return nil, err
	}
	return l.Wrap(c), nil
}

// Wrap puts an established connection under the layer.
func (l *Layer) Wrap(c net.Conn) net.Conn {
	return &conn{Conn: c, l: l, peer: hostOf(c.RemoteAddr()), closed: make(chan struct{}), deadlineSet: make(chan struct{})}
}

// Listener wraps accepted connections.
func (l *Layer) Listener(ln net.Listener) net.Listener { return &listener{Listener: ln, l: l} }

type listener struct {
	net.Listener
	l *Layer
}

func (ln *listener) Accept() (net.Conn, error) {
	for {
		ln.l.hold()
		c, err := ln.Listener.Accept()
		// A paused node accepts nothing: a dial waits in the backlog.
		ln.l.hold()
		if err != nil {
			return nil, err
		}
		if b, _ := ln.l.blocked(hostOf(c.RemoteAddr())); b {
			// A SYN from a blocked peer is never answered: drop it.
			c.Close()
			continue
		}
		return ln.l.Wrap(c), nil
	}
}

// conn stalls reads and writes while its peer is blocked, honouring
// deadlines, and delays writes by the configured delay through a delay line
// (delayline.go): each write due at its own time, not one after another.
type conn struct {
	net.Conn
	l    *Layer
	peer string

	mu            sync.Mutex
	readDeadline  time.Time
	writeDeadline time.Time
	// deadlineSet is closed and replaced whenever a deadline is set, to
	// wake stalls so they re-read theirs.
	deadlineSet chan struct{}
	// closed ends any stall: closing a stalled connection must unblock its
	// reader and writer, as closing a real socket does.
	closed    chan struct{}
	closeOnce sync.Once

	// line holds the writes the layer delays (delayline.go).
	line delayLine
}

// Close ends any stall at once; bytes still in the delay line go out when due
// before the connection closes, as a closed socket's buffer does.
func (c *conn) Close() error {
	c.l.hold() // a paused process cannot close its sockets
	c.closeOnce.Do(func() { close(c.closed) })
	return c.closeLine()
}

var errTimeout = &timeoutError{}

type timeoutError struct{}

func (*timeoutError) Error() string   { return "i/o timeout (faultnet)" }
func (*timeoutError) Timeout() bool   { return true }
func (*timeoutError) Temporary() bool { return true }

// stall waits while the peer is blocked, until the read (or write)
// deadline. It re-reads the deadline whenever one is set: on a real socket a
// blocked read returns as soon as its deadline is moved into the past,
// which is how callers (kconn) cancel a request in flight.
func (c *conn) stall(read bool) error {
	for {
		blocked, changed := c.l.blocked(c.peer)
		if !blocked {
			return nil
		}
		c.mu.Lock()
		deadline, reset := c.writeDeadline, c.deadlineSet
		if read {
			deadline = c.readDeadline
		}
		c.mu.Unlock()
		var t *time.Timer
		var timer <-chan time.Time
		if !deadline.IsZero() {
			d := time.Until(deadline)
			if d <= 0 {
				return errTimeout
			}
			t = time.NewTimer(d)
			timer = t.C
		}
		var err error
		select {
		case <-changed:
		case <-reset:
		case <-timer:
			err = errTimeout
		case <-c.closed:
			err = net.ErrClosed
		}
		if t != nil {
			t.Stop()
		}
		if err != nil {
			return err
		}
	}
}

// ready waits until the call may go on: the node not paused (which is
// checked after the partition stall too, since a heal during a pause ends
// the stall while the node is still frozen) and its peer not cut off.
func (c *conn) ready(read bool) error {
	c.l.hold()
	if err := c.stall(read); err != nil {
		return err
	}
	c.l.hold()
	return nil
}

func (c *conn) Read(b []byte) (int, error) {
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	if err := c.ready(true); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(b)
	if err == nil {
		// Data that arrived while a partition began is dropped with it;
		// what arrived during a pause is read on resume.
		if err := c.ready(true); err != nil {
			return 0, err
		}
	}
	c.l.hold() // an error (a deadline) that fell due in a pause too
	return n, err
}

func (c *conn) Write(b []byte) (int, error) {
	if err := c.ready(false); err != nil {
		return 0, err
	}
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	// A delayed write goes into the delay line, the kernel's send buffer:
	// what is in it goes out on time even while the node is paused, as a
	// stopped process's socket buffer drains.
	if d := writeDelay(c.l.Rules()); d > 0 || c.line.busy() {
		return c.delayedWrite(b, d)
	}
	n, err := c.Conn.Write(b)
	c.l.hold()
	return n, err
}

func writeDelay(r Rules) time.Duration {
	d := time.Duration(r.DelayMs) * time.Millisecond
	if r.JitterMs > 0 {
		d += time.Duration(rand.IntN(2*r.JitterMs+1)-r.JitterMs) * time.Millisecond
	}
	if r.LossPct > 0 && rand.Float64()*100 < r.LossPct {
		d += retransmitDelay
	}
	return max(d, 0)
}

func (c *conn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.readDeadline, c.writeDeadline = t, t
	c.wakeLocked()
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.readDeadline = t
	c.wakeLocked()
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *conn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.writeDeadline = t
	c.wakeLocked()
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

// wakeLocked wakes the stalls in progress; c.mu must be held.
func (c *conn) wakeLocked() {
	close(c.deadlineSet)
	c.deadlineSet = make(chan struct{})
}
