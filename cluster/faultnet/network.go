package faultnet

import (
	"context"
	"net"
)

// Network carries a node's connections: the host's TCP stack (Sockets, what
// every runtime but the simulation uses) or an in-memory one (Mem, the
// simulation's, whose connections block on channels so that a
// testing/synctest bubble sees them as durably blocked). The Layer's rules
// apply on top of either.
type Network interface {
	// Listen accepts connections on addr ("host:port"; port 0 picks one).
	Listen(addr string) (net.Listener, error)
	// Dial connects to addr from the local IP from ("" for any).
	Dial(ctx context.Context, from, addr string) (net.Conn, error)
}

// Sockets is the host's TCP stack.
type Sockets struct{}

// Listen implements Network.
func (Sockets) Listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

// Dial implements Network.
func (Sockets) Dial(ctx context.Context, from, addr string) (net.Conn, error) {
	d := net.Dialer{}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	return d.DialContext(ctx, "tcp", addr)
}
