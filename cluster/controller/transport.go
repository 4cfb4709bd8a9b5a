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

	mu    sync.Mutex
	conns map[int32]*kconn.Conn
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

// Close closes every cached connection.
func (t *KconnTransport) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, c := range t.conns {
		c.Close()
		delete(t.conns, id)
	}
}

func (t *KconnTransport) conn(ctx context.Context, id int32) (*kconn.Conn, error) {
	t.mu.Lock()
	c := t.conns[id]
	t.mu.Unlock()
	if c != nil {
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
	defer t.mu.Unlock()
	if t.conns == nil {
		t.conns = map[int32]*kconn.Conn{}
	}
	if old := t.conns[id]; old != nil { // a racing caller dialed too
		c.Close()
		return old, nil
	}
	t.conns[id] = c
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
