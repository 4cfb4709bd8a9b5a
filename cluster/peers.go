package cluster

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/kconn"
)

// peerConns keeps one Kafka-protocol connection per broker for one kind of
// broker-to-broker request (transaction markers, transaction
// verifications), so one kind never waits behind the other on a shared
// connection. Connections go through the broker's fault layer.
type peerConns struct {
	b      *Broker
	client string
	mu     sync.Mutex
	// Invariant: every conn in conns was dialed to the address its broker
	// had in the image when dialed; a failed request drops it.
	conns  map[int32]*kconn.Conn
	closed bool
	// mu is never held across a Conn's Close: Close waits for the request
	// in flight on that Conn (kconn's lock), and in the simulation's bubble
	// a goroutine waiting on this sync.Mutex meanwhile is not durably
	// blocked, so virtual time would stop and the request's deadline
	// never come (a txn marker sent to a frozen peer while the broker shut
	// down hung a sim run: MEASUREMENTS 4.3).
}

func newPeerConns(b *Broker, purpose string) *peerConns {
	return &peerConns{b: b, client: fmt.Sprintf("gregor-%s-%d", purpose, b.cfg.NodeID), conns: map[int32]*kconn.Conn{}}
}

// peerDialTimeout bounds a dial to another broker.
const peerDialTimeout = 2 * time.Second

// request sends req to broker node and returns its response; any failure
// drops the connection so the next request redials.
func (pc *peerConns) request(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error) {
	br, ok := pc.b.Image().Brokers[node]
	if !ok {
		return nil, fmt.Errorf("broker %d is not registered", node)
	}
	addr := net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port)))
	pc.mu.Lock()
	if pc.closed {
		pc.mu.Unlock()
		return nil, kconn.ErrClosed
	}
	c := pc.conns[node]
	var stale *kconn.Conn
	if c != nil && c.Addr() != addr {
		stale, c = c, nil
		delete(pc.conns, node)
	}
	pc.mu.Unlock()
	if stale != nil {
		stale.Close()
	}
	if c == nil {
		var err error
		if c, err = kconn.Dial(ctx, addr, pc.b.peerOptions(kconn.Options{Dial: pc.b.net.Dial, ClientID: pc.client, DialTimeout: peerDialTimeout})); err != nil {
			return nil, err
		}
		pc.mu.Lock()
		old, closed := pc.conns[node], pc.closed
		if old == nil && !closed {
			pc.conns[node] = c
		}
		pc.mu.Unlock()
		if old != nil || closed {
			// Another caller dialed meanwhile (or we closed): keep one.
			c.Close()
			if closed {
				return nil, kconn.ErrClosed
			}
			c = old
		}
	}
	resp, err := c.Request(ctx, req)
	if err != nil {
		pc.mu.Lock()
		if pc.conns[node] == c {
			delete(pc.conns, node)
		}
		pc.mu.Unlock()
		c.Close()
	}
	return resp, err
}

func (pc *peerConns) close() {
	pc.mu.Lock()
	pc.closed = true
	conns := pc.conns
	pc.conns = map[int32]*kconn.Conn{}
	pc.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}
