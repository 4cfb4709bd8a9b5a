package controller

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/kconn"
)

// Transport sends one request to one node and returns its response.
type Transport interface {
	Roundtrip(ctx context.Context, nodeID int32, req kmsg.Request) (kmsg.Response, error)
}

// KconnTransport is a Transport over kconn connections to the nodes' Kafka
// listeners, one cached connection per node. A failed connection is
// dropped and redialed by the next call.
type KconnTransport struct {
	// Addrs maps node id to its Kafka listener "host:port".
	Addrs map[int32]string
	// Options for every connection (dial hook, client id, versions).
	Options kconn.Options

	// mu guards conns and closed and is never held across a connection's
	// Close or a dial: Close waits for the request in flight (to a frozen
	// or dead node, until its deadline), and a caller waiting on a
	// sync.Mutex is not durably blocked in the sim's bubble, so virtual
	// time, and with it that deadline, would stop (MEASUREMENTS 2.000000000b;
	// the peer connections' same bug, 4.3).
	mu     sync.Mutex
	conns  map[int32]*kconn.Conn
	closed bool // after Close no connection is cached: a late dial is closed again
}

// Roundtrip implements Transport.
func (t *KconnTransport) Roundtrip(ctx context.Context, nodeID int32, req kmsg.Request) (kmsg.Response, error) {
	c, err := t.conn(ctx, nodeID)
	if err != nil {
		return nil, err
	}
	resp, err := c.Request(ctx, req)
	if err != nil {
		t.drop(nodeID, c)
	}
	return resp, err
}

// Close closes every cached connection, outside the lock.
func (t *KconnTransport) Close() {
	t.mu.Lock()
	conns := t.conns
	t.conns, t.closed = nil, true
	t.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

func (t *KconnTransport) conn(ctx context.Context, id int32) (*kconn.Conn, error) {
	t.mu.Lock()
	c, closed := t.conns[id], t.closed
	t.mu.Unlock()
	switch {
	case closed:
		return nil, fmt.Errorf("controller: transport to node %d closed", id)
	case c != nil:
		return c, nil
	}
	addr, ok := t.Addrs[id]
	if !ok {
		return nil, fmt.Errorf("controller: no address for node %d", id)
	}
	c, err := kconn.Dial(ctx, addr, t.Options)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		c.Close()
		return nil, fmt.Errorf("controller: transport to node %d closed", id)
	}
	if old := t.conns[id]; old != nil { // a racing caller dialed too
		t.mu.Unlock()
		c.Close()
		return old, nil
	}
	if t.conns == nil {
		t.conns = map[int32]*kconn.Conn{}
	}
	t.conns[id] = c
	t.mu.Unlock()
	return c, nil
}

func (t *KconnTransport) drop(id int32, c *kconn.Conn) {
	c.Close()
	t.mu.Lock()
	if t.conns[id] == c {
		delete(t.conns, id)
	}
	t.mu.Unlock()
}

// LocalTransport calls the target node's Handle in process, after a round
// trip of the request and response through their wire encoding, so that
// tests exercise the codec and never share structs between nodes.
type LocalTransport struct {
	mu    sync.Mutex
	nodes map[int32]*Controller
}

// Set makes id reach c (nil: id is down and calls to it fail).
func (t *LocalTransport) Set(id int32, c *Controller) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.nodes == nil {
		t.nodes = map[int32]*Controller{}
	}
	t.nodes[id] = c
}

// Roundtrip implements Transport.
func (t *LocalTransport) Roundtrip(ctx context.Context, nodeID int32, req kmsg.Request) (kmsg.Response, error) {
	t.mu.Lock()
	c := t.nodes[nodeID]
	t.mu.Unlock()
	if c == nil {
		return nil, fmt.Errorf("controller: node %d unreachable", nodeID)
	}
	in := kmsg.RequestForKey(req.Key())
	in.SetVersion(req.GetVersion())
	if err := in.ReadFrom(req.AppendTo(nil)); err != nil {
		return nil, fmt.Errorf("controller: re-decode request: %w", err)
	}
	resp, err := c.Handle(ctx, in)
	if err != nil {
		return nil, err
	}
	out := req.ResponseKind()
	out.SetVersion(resp.GetVersion())
	if err := out.ReadFrom(resp.AppendTo(nil)); err != nil {
		return nil, fmt.Errorf("controller: re-decode response: %w", err)
	}
	return out, nil
}
