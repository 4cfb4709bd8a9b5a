// Package kconntest holds what tests of kconn's users share: a peer that
// reads requests and never answers, to hold a request in flight.
package kconntest

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/kconn"
)

// InFlight dials a peer that reads and never answers and starts one
// request on the connection; it returns once the peer has the request.
// done is closed when the request ends, which is only when release is
// called (its context ends) or the connection closes under it; the test
// must call release. The peer's listener closes with the test.
func InFlight(t *testing.T) (c *kconn.Conn, done <-chan struct{}, release func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan struct{}) // closed once the request reached the peer
	go func() {
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
	c, err = kconn.Dial(context.Background(), ln.Addr().String(), kconn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A minute bounds the request should the test forget release.
	rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		c.Request(rctx, kmsg.NewPtrApiVersionsRequest())
	}()
	<-got
	return c, ended, cancel
}

// LetGoBeforeTheRequestEnds polls mu every 5 ms until a TryLock sees
// *closed set (the closer done and its lock let go), and fails the test if
// the request from InFlight ends first: the lock was held across the Close
// that waits for it.
func LetGoBeforeTheRequestEnds(t *testing.T, inFlight <-chan struct{}, mu *sync.Mutex, closed *bool) {
	t.Helper()
	for {
		select {
		case <-inFlight:
			t.Fatal("the lock was held until the request in flight ended")
		case <-time.After(5 * time.Millisecond):
		}
		if mu.TryLock() {
			done := *closed
			mu.Unlock()
			if done {
				return
			}
		}
	}
}
