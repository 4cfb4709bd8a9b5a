// Package wire is the broker's Kafka protocol front: a TCP listener, one
// request loop per connection, and one file per API key (00_produce.go,
// 01_fetch.go, ...) that turns a decoded request into calls on the broker.
// Requests and responses are decoded and encoded with franz-go's kmsg.
//
// Per connection, requests are handled in the order they arrive and their
// responses are written in that order (the protocol requires it). A handler
// does its ordered part (e.g. appending to a log) on the reading goroutine and
// may return a completion (e.g. waiting for the high watermark) that runs on
// the writing goroutine, so a client's pipelined requests overlap their waits
// without ever being applied out of order.
package wire

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/acl"
)

// DefaultMaxRequestBytes bounds one request frame (Kafka's
// socket.request.max.bytes default is 100 MiB). A frame announcing more is a
// protocol error: the connection is closed before anything is allocated.
const DefaultMaxRequestBytes = 100 << 20

// maxInFlightPerConn bounds the responses a connection may owe. The reader
// stops reading when it is reached, pushing back on the client.
const maxInFlightPerConn = 64

// Options configure a Server.
type Options struct {
	MaxRequestBytes int
	Logger          *slog.Logger
	// Accept wraps accepted connections (the process runtime's fault layer
	// drops or delays traffic here). Nil keeps them as they are.
	Accept func(net.Conn) (net.Conn, error)
	// ConsumerProtocol offers KIP-848's consumer group protocol
	// (group.Config.ConsumerProtocol): ConsumerGroupHeartbeat and
	// ConsumerGroupDescribe, and the group.version feature.
	ConsumerProtocol bool
	// TLS, when set, makes the listener SSL or SASL_SSL: connections are
	// TLS over what Accept returned (the fault layer acts on the bytes on
	// the wire).
	TLS *tls.Config
	// SASL, when set, makes the listener SASL_PLAINTEXT or SASL_SSL: every
	// connection authenticates first (auth.go).
	SASL *SASLOptions
	// Authz, when set, is the authorizer's settings: every request is
	// checked against the image's ACLs (authz.go). Nil: nothing is
	// checked (Kafka without authorizer.class.name).
	Authz *acl.Settings
}

// Server serves the Kafka protocol for one broker.
type Server struct {
	b    Backend
	opts Options
	log  *slog.Logger

	ln     net.Listener
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc
}

// NewServer returns a server for backend b; call Serve with a listener.
func NewServer(b Backend, opts Options) *Server {
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	l := opts.Logger
	if l == nil {
		l = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{b: b, opts: opts, log: l, conns: map[net.Conn]struct{}{}, ctx: ctx, cancel: cancel}
}

// Serve accepts connections until Close. It returns nil after Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		if s.opts.Accept != nil {
			if c, err = s.opts.Accept(c); err != nil || c == nil {
				continue
			}
		}
		if s.opts.TLS != nil {
			// The handshake runs on the connection's first read, on its
			// own goroutine: a silent client holds only its own.
			c = tls.Server(c, s.opts.TLS)
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return nil
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(c)
	}
}

// Close stops accepting, closes every connection and waits for their loops.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.cancel()
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// header is a decoded request header.
type header struct {
	key           int16
	version       int16
	correlationID int32
	clientID      string
	// principal and host are who sent the request, for the authorizer
	// (authz.go): the SASL user as User:NAME (User:ANONYMOUS without
	// SASL), and the client's IP address.
	principal string
	host      string
}

// pending is one request whose response is owed, in arrival order.
type pending struct {
	hdr header
	req kmsg.Request
	r   reply
}

// reply is a handler's answer: a response now, a completion to run in order
// on the writer, or nothing at all (acks=0 produce).
type reply struct {
	resp  kmsg.Response
	later func() kmsg.Response
	none  bool
	// closeAfter closes the connection once this reply is written (an
	// unsupported request: the client learns why, then is disconnected).
	closeAfter bool
	raw        []byte
}

func (s *Server) serveConn(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	queue := make(chan pending, maxInFlightPerConn)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		s.writeLoop(ctx, c, queue)
		// A failed write ends the connection; unblock the reader.
		c.Close()
	}()
	var auth *connAuth
	if s.opts.SASL != nil {
		auth = &connAuth{}
	}
	host := remoteHost(c)
	br := bufio.NewReaderSize(c, 64<<10)
	for {
		frame, err := readFrame(br, s.opts.MaxRequestBytes)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Warn("closing connection: bad frame", "remote", c.RemoteAddr().String(), "err", err)
			}
			break
		}
		hdr, req, rep, err := s.decode(frame)
		if err != nil {
			s.log.Warn("closing connection: bad request", "remote", c.RemoteAddr().String(), "key", hdr.key, "version", hdr.version, "err", err)
			break
		}
		hdr.principal, hdr.host = auth.principal(), host
		if req != nil {
			var served bool
			if rep, served = s.authenticate(ctx, auth, hdr, req); !served {
				rep = s.dispatch(ctx, hdr, req)
			}
		}
		select {
		case queue <- pending{hdr: hdr, req: req, r: rep}:
		case <-writerDone:
			return
		}
		if rep.closeAfter {
			break
		}
	}
	close(queue)
	<-writerDone
}

func (s *Server) writeLoop(ctx context.Context, c net.Conn, queue <-chan pending) {
	bw := bufio.NewWriterSize(c, 64<<10)
	var buf []byte
	for p := range queue {
		r := p.r
		if r.later != nil {
			r.resp = r.later()
		}
		if r.none {
			continue
		}
		buf = buf[:0]
		if r.raw != nil {
			buf = append(buf, r.raw...)
		} else {
			buf = encodeResponse(buf, p.hdr, r.resp)
		}
		if _, err := bw.Write(buf); err != nil {
			return
		}
		// Flush when nothing else is ready to write, to batch responses of
		// pipelined requests into fewer syscalls.
		if len(queue) == 0 {
			if err := bw.Flush(); err != nil {
				return
			}
		}
		if r.closeAfter {
			bw.Flush()
			return
		}
	}
	bw.Flush()
}

// readFrame reads one size-prefixed frame, refusing sizes over max before
// allocating.
func readFrame(r *bufio.Reader, max int) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 8 {
		return nil, fmt.Errorf("frame size %d is below the smallest request header", n)
	}
	if int(n) > max {
		return nil, fmt.Errorf("frame size %d exceeds the limit %d (socket.request.max.bytes)", n, max)
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(r, frame); err != nil {
		return nil, fmt.Errorf("truncated frame: %w", err)
	}
	return frame, nil
}

// encodeResponse frames resp for the request it answers: size, correlation
// id, a tag buffer for flexible versions (never for ApiVersions, whose
// response header is always v0 so old clients can read it), then the body.
func encodeResponse(dst []byte, hdr header, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(hdr.correlationID))
	if resp.IsFlexible() && resp.Key() != 18 {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
