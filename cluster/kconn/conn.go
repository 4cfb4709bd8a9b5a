package kconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrClosed is returned by Request on a Conn that was closed, by the caller
// or by an earlier wire error.
var ErrClosed = errors.New("kconn: connection closed")

// Conn is one TCP connection to a Kafka-protocol peer.
type Conn struct {
	addr string
	opts Options
	fmt  *kmsg.RequestFormatter

	// mu serialises requests: one in flight at a time, so that responses
	// arrive in request order without a demultiplexer. It is held across
	// the round trip, so it is a channel lock (chanMutex), not a
	// sync.Mutex: in a testing/synctest bubble (the simulation) a
	// goroutine waiting for a sync.Mutex is not durably blocked, and a
	// second caller waiting behind a request stalled until its deadline (a
	// partitioned peer) would stop virtual time, so the deadline would
	// never come.
	mu     chanMutex
	nc     net.Conn
	closed bool
	corr   int32
	// buf is reused across requests; bounded by the largest frame seen,
	// which MaxResponseBytes bounds.
	buf []byte
	// peer holds the peer's max version per key after negotiation; nil
	// without Options.Negotiate. Written once in Dial, read-only after.
	peer map[int16]int16
}

// Dial connects to addr and, with Options.Negotiate, asks the peer for its
// API versions. ctx bounds the whole dial, including negotiation.
func Dial(ctx context.Context, addr string, opts Options) (*Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, opts.dialTimeout())
	defer cancel()
	dial := opts.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	nc, err := dial(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("kconn: dial %s: %w", addr, err)
	}
	if opts.TLS != nil {
		tc := opts.TLS.Clone()
		if host, _, err := net.SplitHostPort(addr); err == nil && tc.ServerName == "" {
			tc.ServerName = host
		}
		t := tls.Client(nc, tc)
		if err := t.HandshakeContext(dctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("kconn: TLS handshake with %s: %w", addr, err)
		}
		nc = t
	}
	var fopts []kmsg.RequestFormatterOpt
	if opts.ClientID != "" {
		fopts = append(fopts, kmsg.FormatterClientID(opts.ClientID))
	}
	c := &Conn{addr: addr, opts: opts, nc: nc, fmt: kmsg.NewRequestFormatter(fopts...), mu: make(chanMutex, 1)}
	if opts.Negotiate {
		peer, err := c.negotiate(dctx)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.peer = peer
	}
	if opts.SASL != nil {
		if err := c.authenticate(dctx, opts.SASL); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// chanMutex is a mutex whose waiters block on a channel.
type chanMutex chan struct{}

func (m chanMutex) Lock()   { m <- struct{}{} }
func (m chanMutex) Unlock() { <-m }

// Addr is the address this Conn was dialed to.
func (c *Conn) Addr() string { return c.addr }

// PeerMaxVersion reports the peer's max version for key, known only after
// negotiation.
func (c *Conn) PeerMaxVersion(key int16) (int16, bool) {
	v, ok := c.peer[key]
	return v, ok
}

// Close closes the connection; safe to call more than once.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeLocked()
}

func (c *Conn) closeLocked() error {
	if c.closed {
		return nil
	}
	c.closed = true
	return c.nc.Close()
}

// Request sends req and returns its response, decoded with the version the
// request went out with. It sets req's version first (pin, negotiation, or
// the caller's). The ctx deadline and cancellation bound the round trip;
// after any failure past the first written byte the Conn is closed.
//
// A Produce request with acks=0 gets no response from Kafka: Request returns
// (nil, nil) once it is written.
func (c *Conn) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.chooseVersion(req)
	resp, err := c.roundTrip(ctx, req)
	if err != nil {
		c.closeLocked()
		cerr := ctx.Err()
		// The only deadline we set is ctx's; the conn may notice it before
		// ctx's own timer fires.
		var ne net.Error
		if _, has := ctx.Deadline(); cerr == nil && has && errors.As(err, &ne) && ne.Timeout() {
			cerr = context.DeadlineExceeded
		}
		if cerr != nil {
			return nil, fmt.Errorf("kconn: %s key %d: %w (%v)", c.addr, req.Key(), cerr, err)
		}
		return nil, fmt.Errorf("kconn: %s key %d: %w", c.addr, req.Key(), err)
	}
	return resp, nil
}

func (c *Conn) chooseVersion(req kmsg.Request) {
	if v, ok := c.opts.Versions[req.Key()]; ok {
		req.SetVersion(v)
		return
	}
	if c.peer == nil {
		return
	}
	// A key the peer did not list keeps the caller's version: the peer's
	// answer (an error) is more useful than a guess.
	if pv, ok := c.peer[req.Key()]; ok {
		req.SetVersion(min(pv, req.MaxVersion()))
	}
}

func (c *Conn) roundTrip(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	deadline, _ := ctx.Deadline() // zero time clears any earlier deadline
	if err := c.nc.SetDeadline(deadline); err != nil {
		return nil, err
	}
	// Cancellation without a deadline: force blocked I/O to return.
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	c.corr++
	corr := c.corr
	c.buf = c.fmt.AppendRequest(c.buf[:0], req, corr)
	if _, err := c.nc.Write(c.buf); err != nil {
		return nil, err
	}
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return nil, nil
	}
	body, err := c.readFrame()
	if err != nil {
		return nil, err
	}
	return decodeResponse(req, corr, body)
}
