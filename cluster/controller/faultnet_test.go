package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
)

// faultNet is a test fault layer at the raft dial and accept hooks, the
// way the process runtime partitions nodes: each node has its own loopback
// IP (127.0.0.x), so the accept side knows who is calling.
type faultNet struct {
	mu      sync.Mutex
	ipNode  map[string]int32
	blocked map[[2]int32]bool // unordered pairs, low id first
	conns   map[*faultConn]bool
	// stall: live connections across a cut stay open and silently drop
	// writes (packets lost, no RST), instead of being closed.
	stall bool
}

func newFaultNet() *faultNet {
	return &faultNet{ipNode: map[string]int32{}, blocked: map[[2]int32]bool{}, conns: map[*faultConn]bool{}}
}

func pair(a, b int32) [2]int32 {
	if a > b {
		a, b = b, a
	}
	return [2]int32{a, b}
}

type faultConn struct {
	net.Conn
	a, b int32
	f    *faultNet
}

// Write drops the bytes of a stalled, partitioned connection.
func (c *faultConn) Write(b []byte) (int, error) {
	if c.f.isBlocked(c.a, c.b) {
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *faultConn) Close() error {
	c.f.mu.Lock()
	delete(c.f.conns, c)
	c.f.mu.Unlock()
	return c.Conn.Close()
}

func (f *faultNet) track(c net.Conn, a, b int32) net.Conn {
	fc := &faultConn{Conn: c, a: a, b: b, f: f}
	f.mu.Lock()
	f.conns[fc] = true
	f.mu.Unlock()
	return fc
}

func (f *faultNet) isBlocked(a, b int32) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.blocked[pair(a, b)]
}

func (f *faultNet) nodeOf(addr string) (int32, bool) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.ipNode[host]
	return id, ok
}

var errPartitioned = errors.New("faultnet: partitioned")

func (f *faultNet) dialer(self int32, ip string) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		peer, ok := f.nodeOf(addr)
		if !ok {
			return nil, fmt.Errorf("faultnet: unknown address %s", addr)
		}
		if f.isBlocked(self, peer) {
			return nil, errPartitioned
		}
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return f.track(c, self, peer), nil
	}
}

type faultListener struct {
	net.Listener
	self int32
	f    *faultNet
}

// Accept drops connections from partitioned peers, as a firewall would.
func (l *faultListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		peer, ok := l.f.nodeOf(c.RemoteAddr().String())
		if !ok || l.f.isBlocked(l.self, peer) {
			c.Close()
			continue
		}
		return l.f.track(c, l.self, peer), nil
	}
}

// isolate cuts id off from every other node, including live connections.
func (f *faultNet) isolate(id int32) {
	f.mu.Lock()
	var cut []*faultConn
	for _, other := range f.ipNode {
		if other != id {
			f.blocked[pair(id, other)] = true
		}
	}
	for c := range f.conns {
		if !f.stall && (c.a == id || c.b == id) {
			cut = append(cut, c)
		}
	}
	f.mu.Unlock()
	for _, c := range cut {
		c.Close()
	}
}

func (f *faultNet) heal() {
	f.mu.Lock()
	clear(f.blocked)
	f.mu.Unlock()
}
