package cluster

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/kconn"
)

// Closing a broker's peer connections does not hold their lock while a
// Conn's Close waits for the request in flight on it (a marker to a peer
// that does not answer): in the simulation a goroutine waiting on that
// sync.Mutex meanwhile stopped virtual time, so the request's deadline
// never came and the run hung.
func TestPeerConnsCloseDoesNotHoldTheLockAcrossAClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan struct{}) // closed once the request reached the peer
	go func() {                // a peer that reads and never answers
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		buf := make([]byte, 1024)
		if _, err := nc.Read(buf); err != nil {
			return
		}
		close(got)
		for _, err := nc.Read(buf); err == nil; _, err = nc.Read(buf) {
		}
	}()
	c, err := kconn.Dial(context.Background(), ln.Addr().String(), kconn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pc := &peerConns{conns: map[int32]*kconn.Conn{2: c}}
	rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inFlight := make(chan struct{})
	go func() {
		defer close(inFlight)
		c.Request(rctx, kmsg.NewPtrApiVersionsRequest())
	}()
	<-got // in flight: Close now waits for it
	closed := make(chan struct{})
	go func() { defer close(closed); pc.close() }()
	for {
		select {
		case <-inFlight:
			t.Fatal("the peer connections' lock was held until the request in flight ended")
		case <-time.After(5 * time.Millisecond):
		}
		if pc.mu.TryLock() {
			done := pc.closed
			pc.mu.Unlock()
			if done {
				break
			}
		}
	}
	cancel() // the request ends; Close and close return
	<-inFlight
	<-closed
}
