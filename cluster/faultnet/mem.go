package faultnet

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Mem is an in-memory network: listeners by "host:port" and connections
// that are pairs of buffered pipes. Every wait (Accept, a Read with nothing
// buffered, a Write into a full buffer, a deadline) is a select over
// channels and timers, so inside a testing/synctest bubble a goroutine
// waiting on the network is durably blocked and virtual time can advance.
// The channels are made by the calls that need them: use a Mem from inside
// one bubble only.
//
// Addresses are strings: a host needs no interface, and a dial to an
// address nobody listens on is refused after one round trip (a killed
// broker's host answers with a reset, as a live kernel does). Faults are the Layer's,
// applied per node on top.
type Mem struct {
	mu        sync.Mutex
	listeners map[string]*memListener
	conns     map[*memConn]struct{} // open ends, for CloseHost
	nextPort  int
}

// NewMem returns an empty in-memory network.
func NewMem() *Mem {
	return &Mem{listeners: map[string]*memListener{}, conns: map[*memConn]struct{}{}, nextPort: 40000}
}

// CloseHost closes every listener on host and every connection end it
// holds, as the kernel does with a killed process's sockets: peers read
// EOF, their writes fail, and nothing of the host stays blocked.
func (m *Mem) CloseHost(host string) {
	m.mu.Lock()
	var lns []*memListener
	for _, ln := range m.listeners {
		if ln.addr.host == host {
			lns = append(lns, ln)
		}
	}
	var cs []*memConn
	for c := range m.conns {
		if c.local.host == host {
			cs = append(cs, c)
		}
	}
	m.mu.Unlock()
	for _, ln := range lns {
		ln.Close()
	}
	for _, c := range cs {
		c.Close()
	}
}

// memBuffer bounds the bytes in flight one way on a connection, like a
// socket's send and receive buffers: past it a writer waits for the reader.
const memBuffer = 4 << 20

// memBacklog is a listener's accept queue.
const memBacklog = 128

type memAddr struct{ host, port string }

func (a memAddr) Network() string { return "tcp" }
func (a memAddr) String() string  { return net.JoinHostPort(a.host, a.port) }

// Listen implements Network.
func (m *Mem) Listen(addr string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if port == "0" {
		port = m.ephemeralLocked()
	}
	key := net.JoinHostPort(host, port)
	if _, ok := m.listeners[key]; ok {
		return nil, &net.OpError{Op: "listen", Net: "tcp", Addr: memAddr{host, port}, Err: syscall.EADDRINUSE}
	}
	ln := &memListener{m: m, addr: memAddr{host, port}, accept: make(chan *memConn, memBacklog), closed: make(chan struct{})}
	m.listeners[key] = ln
	return ln, nil
}

func (m *Mem) ephemeralLocked() string {
	m.nextPort++
	return strconv.Itoa(m.nextPort)
}

// Dial implements Network.
func (m *Mem) Dial(ctx context.Context, from, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if from == "" {
		from = "127.0.0.1"
	}
	m.mu.Lock()
	ln := m.listeners[net.JoinHostPort(host, port)]
	local := memAddr{from, m.ephemeralLocked()}
	m.mu.Unlock()
	remote := memAddr{host, port}
	refused := &net.OpError{Op: "dial", Net: "tcp", Source: local, Addr: remote, Err: syscall.ECONNREFUSED}
	if ln == nil {
		return nil, refuse(ctx, refused)
	}
	client, server := memPipe(m, local, remote)
	select {
	case ln.accept <- server:
		return client, nil
	case <-ln.closed:
		return nil, refuse(ctx, refused)
	case <-ctx.Done():
		return nil, &net.OpError{Op: "dial", Net: "tcp", Source: local, Addr: remote, Err: ctx.Err()}
	}
}

// RefusalRoundTrip is what a refused dial costs: the SYN out and the
// reset back, as on a loopback or a LAN. A refusal that cost nothing would
// let a client that redials at once without a backoff (franz-go's
// transactional producer loading its coordinator while every broker is
// down: sink.produce retries a failed producer-id load at once) spin in a
// bubble without the virtual clock ever moving, so the broker restarts it
// waits for never come (DESIGN.md section 7, what the sim cannot model).
const RefusalRoundTrip = 100 * time.Microsecond

// refuse answers a dial with err after the refusal's round trip (or ctx's
// end, whichever is first).
func refuse(ctx context.Context, err *net.OpError) error {
	t := time.NewTimer(RefusalRoundTrip)
	defer t.Stop()
	select {
	case <-t.C:
		return err
	case <-ctx.Done():
		return &net.OpError{Op: err.Op, Net: err.Net, Source: err.Source, Addr: err.Addr, Err: ctx.Err()}
	}
}

type memListener struct {
	m         *Mem
	addr      memAddr
	accept    chan *memConn
	closed    chan struct{}
	closeOnce sync.Once
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.accept:
		return c, nil
	case <-l.closed:
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
	}
}

// Close stops accepting; connections queued but not accepted are reset.
func (l *memListener) Close() error {
	l.closeOnce.Do(func() {
		l.m.mu.Lock()
		if l.m.listeners[l.addr.String()] == l {
			delete(l.m.listeners, l.addr.String())
		}
		l.m.mu.Unlock()
		close(l.closed)
		for {
			select {
			case c := <-l.accept:
				c.Close()
			default:
				return
			}
		}
	})
	return nil
}

func (l *memListener) Addr() net.Addr { return l.addr }

// half is one direction of a connection: bytes written by one end, read by
// the other.
type half struct {
	mu      sync.Mutex
	buf     []byte
	wclosed bool // the writer closed: the reader gets EOF once buf is drained
	rclosed bool // the reader closed: writes fail, buf is dropped
	changed chan struct{}
}

func newHalf() *half { return &half{changed: make(chan struct{})} }

// signalLocked wakes every waiter; h.mu must be held.
func (h *half) signalLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

func memPipe(m *Mem, a, b memAddr) (*memConn, *memConn) {
	ab, ba := newHalf(), newHalf()
	ca := &memConn{m: m, local: a, remote: b, r: ba, w: ab, dlSet: make(chan struct{})}
	cb := &memConn{m: m, local: b, remote: a, r: ab, w: ba, dlSet: make(chan struct{})}
	m.mu.Lock()
	m.conns[ca], m.conns[cb] = struct{}{}, struct{}{}
	m.mu.Unlock()
	return ca, cb
}

// memConn is one end of an in-memory connection.
type memConn struct {
	m             *Mem
	local, remote memAddr
	r, w          *half

	mu              sync.Mutex
	readDL, writeDL time.Time
	dlSet           chan struct{} // closed and replaced when a deadline is set
	closeOnce       sync.Once
}

func (c *memConn) LocalAddr() net.Addr  { return c.local }
func (c *memConn) RemoteAddr() net.Addr { return c.remote }

func (c *memConn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.local, Addr: c.remote, Err: err}
}

// wait blocks until ch is closed, a deadline is set, or the deadline (read
// or write) passes.
func (c *memConn) wait(ch <-chan struct{}, read bool) error {
	c.mu.Lock()
	dl, set := c.writeDL, c.dlSet
	if read {
		dl = c.readDL
	}
	c.mu.Unlock()
	var timer <-chan time.Time
	if !dl.IsZero() {
		d := time.Until(dl)
		if d <= 0 {
			return os.ErrDeadlineExceeded
		}
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ch:
	case <-set:
	case <-timer:
		return os.ErrDeadlineExceeded
	}
	return nil
}

func (c *memConn) expired(read bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	dl := c.writeDL
	if read {
		dl = c.readDL
	}
	return !dl.IsZero() && !time.Now().Before(dl)
}

func (c *memConn) Read(p []byte) (int, error) {
	h := c.r
	for {
		if c.expired(true) {
			return 0, c.opErr("read", os.ErrDeadlineExceeded)
		}
		h.mu.Lock()
		if h.rclosed {
			h.mu.Unlock()
			return 0, c.opErr("read", net.ErrClosed)
		}
		if len(h.buf) > 0 {
			n := copy(p, h.buf)
			h.buf = h.buf[n:]
			if len(h.buf) == 0 {
				h.buf = nil
			}
			h.signalLocked()
			h.mu.Unlock()
			return n, nil
		}
		if h.wclosed {
			h.mu.Unlock()
			return 0, io.EOF
		}
		ch := h.changed
		h.mu.Unlock()
		if len(p) == 0 {
			return 0, nil
		}
		if err := c.wait(ch, true); err != nil {
			return 0, c.opErr("read", err)
		}
	}
}

func (c *memConn) Write(p []byte) (int, error) {
	h := c.w
	written := 0
	for written < len(p) {
		if c.expired(false) {
			return written, c.opErr("write", os.ErrDeadlineExceeded)
		}
		h.mu.Lock()
		if h.wclosed {
			h.mu.Unlock()
			return written, c.opErr("write", net.ErrClosed)
		}
		if h.rclosed {
			h.mu.Unlock()
			return written, c.opErr("write", syscall.EPIPE)
		}
		if room := memBuffer - len(h.buf); room > 0 {
			n := min(room, len(p)-written)
			h.buf = append(h.buf, p[written:written+n]...)
			written += n
			h.signalLocked()
			h.mu.Unlock()
			continue
		}
		ch := h.changed
		h.mu.Unlock()
		if err := c.wait(ch, false); err != nil {
			return written, c.opErr("write", err)
		}
	}
	return written, nil
}

// CloseWrite ends this end's writing, as TCP's shutdown(SHUT_WR): the peer
// reads what was written, then EOF; this end still reads.
func (c *memConn) CloseWrite() error {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	c.w.wclosed = true
	c.w.signalLocked()
	return nil
}

// Close ends both directions: the peer reads what was already written and
// then EOF, and its writes fail; this end's blocked calls return.
func (c *memConn) Close() error {
	c.closeOnce.Do(func() {
		c.m.mu.Lock()
		delete(c.m.conns, c)
		c.m.mu.Unlock()
		c.w.mu.Lock()
		c.w.wclosed = true
		c.w.signalLocked()
		c.w.mu.Unlock()
		c.r.mu.Lock()
		c.r.rclosed = true
		c.r.buf = nil
		c.r.signalLocked()
		c.r.mu.Unlock()
	})
	return nil
}

func (c *memConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.readDL, c.writeDL = t, t
	c.wakeLocked()
	c.mu.Unlock()
	return nil
}

func (c *memConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.readDL = t
	c.wakeLocked()
	c.mu.Unlock()
	return nil
}

func (c *memConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.writeDL = t
	c.wakeLocked()
	c.mu.Unlock()
	return nil
}

func (c *memConn) wakeLocked() {
	close(c.dlSet)
	c.dlSet = make(chan struct{})
}

// String names the connection in errors and logs.
func (c *memConn) String() string { return fmt.Sprintf("mem %s->%s", c.local, c.remote) }
