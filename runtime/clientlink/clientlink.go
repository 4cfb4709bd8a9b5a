// Package clientlink is the network between the harness's clients and the
// brokers, with faults of its own: the client-link faults that node faults
// cannot make. Every workload client dials through a Links (its kgo.Dialer),
// so the faults act the same way in every runtime (the clients run in the
// harness process whatever runs the brokers):
//
//   - Reset closes a client's connections to one broker at once, as a
//     middlebox's RST or a NAT timeout would. The client reconnects.
//   - Lose drops every byte a broker sends a client while the broker stays
//     up and leader: requests arrive and are applied, their answers never
//     come back, so the client times out and retries the same request to
//     the same leader (the path where idempotent producers and request
//     deduplication earn their keep). A connection that lost bytes has lost
//     its framing and stays deaf until the client closes it.
//   - Hold keeps what a client writes to one broker, on the connections open
//     when the fault begins, and delivers it late, in order, when the hold
//     ends: even after the client gave up and closed the connection (the
//     request was in the network; Jepsen's Bufstream 0.1.0 analysis delays
//     EndTxn, AddPartitionsToTxn and produce requests this way). New
//     connections go through, so the client's retry overtakes the held
//     request.
//
// Faults name a broker by the address the clients dial and a set of client
// processes (their history process ids).
package clientlink

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"gregor/internal/dialer"
)

// maxHeld bounds the bytes one held connection keeps; a client that writes
// more waits, as it would on a full socket buffer.
const maxHeld = 64 << 20

// drainAfterLate bounds how long a late delivery on a connection its client
// closed keeps reading (and dropping) the broker's answers before closing:
// the broker must read the request before the connection goes.
const drainAfterLate = 5 * time.Second

// DialTimeout bounds one dial (a kgo.Dialer replaces franz-go's dialer and
// with it kgo.DialTimeout): a partitioned broker drops the SYN.
const DialTimeout = time.Second

// MaxHold bounds one hold: a request held longer than any client waits
// proves nothing more.
const MaxHold = 2 * time.Minute

// Links is one run's client network. The zero value is not usable; call New.
type Links struct {
	mu sync.Mutex
	// conns are the connections by client process. Invariant: a conn is in
	// conns from its dial until its client closes it and, when it still
	// held bytes then, until they are delivered (counted by late).
	conns map[int][]*conn
	// losing[broker][proc]: answers from broker to proc are dropped.
	losing map[string]map[int]bool
	// late counts connections still delivering held bytes after their
	// client closed them; Wait waits for them.
	late sync.WaitGroup
	// clients are the processes that made a dialer, in order.
	clients []int
}

// New returns an empty client network.
func New() *Links {
	return &Links{conns: map[int][]*conn{}, losing: map[string]map[int]bool{}}
}

// Dialer is the dial function for one client process (kgo.Dialer).
func (l *Links) Dialer(proc int) func(ctx context.Context, network, host string) (net.Conn, error) {
	l.mu.Lock()
	if !slices.Contains(l.clients, proc) {
		l.clients = append(l.clients, proc)
	}
	l.mu.Unlock()
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		raw, err := dialer.Dial(DialTimeout)(ctx, network, host)
		if err != nil {
			return nil, err
		}
		c := &conn{raw: raw, l: l, proc: proc, broker: host, flushed: make(chan struct{}), wmu: make(chanMutex, 1)}
		close(c.flushed) // nothing held
		l.mu.Lock()
		c.deaf = l.losing[host][proc]
		l.conns[proc] = append(l.conns[proc], c)
		l.mu.Unlock()
		return c, nil
	}
}

// Clients lists the processes that made a dialer.
func (l *Links) Clients() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.clients)
}

// matching returns the open connections of procs to broker.
func (l *Links) matching(broker string, procs []int) []*conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*conn
	for _, p := range procs {
		for _, c := range l.conns[p] {
			if c.broker == broker {
				out = append(out, c)
			}
		}
	}
	return out
}

// Reset closes every connection of procs to broker; it returns how many.
func (l *Links) Reset(broker string, procs []int) int {
	cs := l.matching(broker, procs)
	for _, c := range cs {
		c.reset()
	}
	return len(cs)
}

// Lose starts dropping broker's answers to procs, on open connections and
// on those dialed until Unlose.
func (l *Links) Lose(broker string, procs []int) {
	l.mu.Lock()
	if l.losing[broker] == nil {
		l.losing[broker] = map[int]bool{}
	}
	for _, p := range procs {
		l.losing[broker][p] = true
		for _, c := range l.conns[p] {
			if c.broker == broker {
				c.mu.Lock()
				c.deaf = true
				c.mu.Unlock()
			}
		}
	}
	l.mu.Unlock()
}

// Unlose ends Lose for procs: connections dialed from now on hear the
// broker; those that lost bytes stay deaf until their clients close them.
func (l *Links) Unlose(broker string, procs []int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range procs {
		delete(l.losing[broker], p)
	}
}

// Hold keeps what procs write to broker on their open connections for d,
// then delivers it; it returns how many connections it holds.
func (l *Links) Hold(broker string, procs []int, d time.Duration) (int, error) {
	if d <= 0 || d > MaxHold {
		return 0, fmt.Errorf("hold of %v: give (0, %v]", d, MaxHold)
	}
	cs := l.matching(broker, procs)
	for _, c := range cs {
		c.hold(d)
	}
	return len(cs), nil
}

// Release delivers now what procs wrote to broker under a hold (late, in
// order) and ends the hold; it returns how many connections held bytes and
// how many bytes they delivered. A nemesis holds with a backstop longer
// than its step and releases at the step's end, so it can say what came
// late.
func (l *Links) Release(broker string, procs []int) (conns, bytes int) {
	for _, c := range l.matching(broker, procs) {
		if n, ok := c.release(); ok {
			conns++
			bytes += n
		}
	}
	return conns, bytes
}

// Heal ends every Lose and releases every hold now (held bytes are still
// delivered, late); resets need no healing.
func (l *Links) Heal() {
	l.mu.Lock()
	l.losing = map[string]map[int]bool{}
	var all []*conn
	for _, cs := range l.conns {
		all = append(all, cs...)
	}
	l.mu.Unlock()
	for _, c := range all {
		c.release()
	}
}

// Wait waits, bounded by ctx, for late deliveries on closed connections.
func (l *Links) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		l.late.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *Links) forget(c *conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cs := l.conns[c.proc]
	if i := slices.Index(cs, c); i >= 0 {
		l.conns[c.proc] = slices.Delete(cs, i, i+1)
	}
}

// conn is one client connection through the link.
type conn struct {
	raw    net.Conn
	l      *Links
	proc   int
	broker string

	// wmu orders writes: held bytes go out before anything written later.
	// It is held across the raw write, which waits while the connection's
	// buffer is full, so it is a channel (a goroutine waiting for it is
	// durably blocked in a testing/synctest bubble; one waiting for a
	// sync.Mutex is not, and would freeze the simulation's clock).
	wmu chanMutex
	// mu guards the fault state.
	mu sync.Mutex
	// deaf: every byte the broker sends is dropped, for good.
	deaf bool
	// held is what the client wrote during a hold; heldUntil ends it.
	// Invariant: len(held) <= maxHeld; held is empty when !holding.
	holding   bool
	held      []byte
	heldUntil time.Time
	timer     *time.Timer
	// flushed is closed when no hold is pending (writers wait on it when
	// held is full).
	flushed chan struct{}
	// closed: the client closed this connection (a late delivery may still
	// use raw).
	closed bool
}

func (c *conn) Read(b []byte) (int, error) {
	for {
		n, err := c.raw.Read(b)
		c.mu.Lock()
		deaf := c.deaf
		c.mu.Unlock()
		if !deaf {
			return n, err
		}
		if err != nil {
			return 0, err
		}
		// Dropped: keep reading so the broker's writes never block, and
		// let the client's read deadline end the wait.
	}
}

func (c *conn) Write(b []byte) (int, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return 0, net.ErrClosed
		}
		if c.holding {
			if len(c.held)+len(b) <= maxHeld {
				c.held = append(c.held, b...)
				c.mu.Unlock()
				return len(b), nil
			}
			wait := c.flushed
			c.mu.Unlock()
			<-wait // bounded by the hold's end
			continue
		}
		c.mu.Unlock()
		c.wmu.Lock()
		n, err := c.raw.Write(b)
		c.wmu.Unlock()
		return n, err
	}
}

// hold starts (or extends) a hold of d.
func (c *conn) hold(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	until := time.Now().Add(d)
	if !c.holding {
		c.holding, c.flushed = true, make(chan struct{})
		c.timer = time.AfterFunc(d, func() { c.release() })
	} else if until.After(c.heldUntil) {
		c.timer.Reset(time.Until(until))
	} else {
		return
	}
	c.heldUntil = until
}

// release delivers the held bytes now, in order, and ends the hold. On a
// connection its client closed, it then drains and closes it. It returns
// the bytes delivered; ok is false when no hold was in force.
func (c *conn) release() (delivered int, ok bool) {
	c.wmu.Lock()
	c.mu.Lock()
	if !c.holding {
		c.mu.Unlock()
		c.wmu.Unlock()
		return 0, false
	}
	held := c.held
	c.held, c.holding = nil, false
	c.timer.Stop()
	closed := c.closed
	c.mu.Unlock()
	_, err := c.raw.Write(held)
	c.wmu.Unlock()
	c.mu.Lock()
	close(c.flushed)
	c.mu.Unlock()
	if closed {
		if err == nil {
			c.drainAndClose()
		} else {
			c.raw.Close()
		}
		c.l.forget(c)
		c.l.late.Done()
	}
	return len(held), true
}

// drainAndClose reads and drops the broker's answers to a late delivery
// until it closes the connection or drainAfterLate passes.
func (c *conn) drainAndClose() {
	// A FIN after the request (TCP, or the simulation's network): the
	// broker answers, reads EOF and closes, which ends the drain.
	if hc, ok := c.raw.(interface{ CloseWrite() error }); ok {
		hc.CloseWrite()
	}
	c.raw.SetReadDeadline(time.Now().Add(drainAfterLate))
	buf := make([]byte, 32<<10)
	for {
		if _, err := c.raw.Read(buf); err != nil {
			break
		}
	}
	c.raw.Close()
}

// reset closes the connection under the client (a Reset fault): its pending
// reads and writes fail, held bytes are lost with it.
func (c *conn) reset() {
	c.mu.Lock()
	wasLate := c.holding && c.closed
	if c.holding {
		c.holding, c.held = false, nil
		c.timer.Stop()
		close(c.flushed)
	}
	c.mu.Unlock()
	if tc, ok := c.raw.(*net.TCPConn); ok {
		tc.SetLinger(0) // an RST, not a FIN
	}
	c.raw.Close()
	if wasLate {
		c.l.forget(c)
		c.l.late.Done()
	}
}

// Close closes the client's side. Bytes held for late delivery keep the
// connection to the broker open until they are delivered.
func (c *conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	late := c.holding
	if late {
		c.l.late.Add(1)
	}
	c.mu.Unlock()
	if late {
		return nil // release delivers, closes and forgets it
	}
	c.l.forget(c)
	err := c.raw.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil // a Reset closed it first
	}
	return err
}

func (c *conn) LocalAddr() net.Addr                { return c.raw.LocalAddr() }
func (c *conn) RemoteAddr() net.Addr               { return c.raw.RemoteAddr() }
func (c *conn) SetDeadline(t time.Time) error      { return c.raw.SetDeadline(t) }
func (c *conn) SetReadDeadline(t time.Time) error  { return c.raw.SetReadDeadline(t) }
func (c *conn) SetWriteDeadline(t time.Time) error { return c.raw.SetWriteDeadline(t) }

// chanMutex is a mutex made of a channel of capacity 1 (make(chanMutex, 1)).
type chanMutex chan struct{}

func (m chanMutex) Lock()   { m <- struct{}{} }
func (m chanMutex) Unlock() { <-m }
