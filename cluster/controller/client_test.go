package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// funcTransport answers each round trip with fn.
type funcTransport func(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error)

func (f funcTransport) Roundtrip(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error) {
	return f(ctx, node, req)
}

// TestClientFollowsNewController: a request stalled on a controller that a
// partition cut off (its packets dropped: it waits for ctx) is abandoned as
// soon as Active names a new controller, and sent there. Before, it held
// the call until ctx expired: a broker's heartbeat stalled longer than its
// session and the new controller fenced it although it was healthy.
func TestClientFollowsNewController(t *testing.T) {
	var active atomic.Int32
	active.Store(1)
	var answeredBy atomic.Int32
	answeredBy.Store(-1)
	tr := funcTransport(func(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error) {
		if node == 1 { // the old controller, cut off
			active.Store(2) // the quorum elects 2 while the request stalls
			<-ctx.Done()
			return nil, ctx.Err()
		}
		if node != active.Load() {
			r := kmsg.NewPtrBrokerHeartbeatResponse()
			r.ErrorCode = kerr.NotController.Code
			return r, nil
		}
		answeredBy.Store(node)
		return kmsg.NewPtrBrokerHeartbeatResponse(), nil
	})
	cl := &Client{Transport: tr, Active: active.Load, Nodes: []int32{1, 2, 3}}
	// The call's bound is far above the time to notice the new controller
	// (one poll); without following it, the call ends only at this bound.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := cl.Heartbeat(ctx, 3, 1, 0, false, false); err != nil {
		t.Fatalf("heartbeat while the controller moved from 1 to 2: %v", err)
	}
	if got := answeredBy.Load(); got != 2 {
		t.Fatalf("answered by node %d, want the new controller 2", got)
	}
}

// TestClientKeepsAttemptWhileHintIsStale: Active may keep naming a node
// that already answered NOT_CONTROLLER (its raft has not noticed the new
// leader yet); the client then tries the other nodes, and a slow answer
// from one of them must not be abandoned for that stale hint.
func TestClientKeepsAttemptWhileHintIsStale(t *testing.T) {
	tr := funcTransport(func(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error) {
		if node != 2 {
			r := kmsg.NewPtrBrokerHeartbeatResponse()
			r.ErrorCode = kerr.NotController.Code
			return r, nil
		}
		// Slower than several polls of Active.
		select {
		case <-time.After(10 * leaderPoll):
			return kmsg.NewPtrBrokerHeartbeatResponse(), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	cl := &Client{Transport: tr, Active: func() int32 { return 1 }, Nodes: []int32{1, 2, 3},
		Backoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxAttempts: 20}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := cl.Heartbeat(ctx, 3, 1, 0, false, false); err != nil {
		t.Fatalf("heartbeat with a stale hint: %v", err)
	}
}
