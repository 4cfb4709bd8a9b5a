package controller

import (
	"net"
	"testing"

	"gregor/cluster/kconn"
	"gregor/cluster/kconn/kconntest"
)

// Closing the controller transport does not hold its lock while a Conn's
// Close waits for the request in flight (an AlterPartition to a frozen
// controller): in the sim, a broker's stop closed its quorum transport
// that way while its ISR goroutine waited on the same sync.Mutex in conn,
// which stopped virtual time (4 of 1,360 nightly controls under the stop
// nemesis, MEASUREMENTS 2.000000000b).
func TestKconnTransportCloseDoesNotHoldTheLockAcrossAClose(t *testing.T) {
	c, inFlight, release := kconntest.InFlight(t) // Close now waits for the request
	ln, err := net.Listen("tcp", "127.0.0.1:0")   // node 2: a dial would succeed
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tr := &KconnTransport{Addrs: map[int32]string{1: "127.0.0.1:1", 2: ln.Addr().String()}, conns: map[int32]*kconn.Conn{1: c}}
	closed := make(chan struct{})
	go func() { defer close(closed); tr.Close() }()
	kconntest.LetGoBeforeTheRequestEnds(t, inFlight, &tr.mu, &tr.closed)

	if _, err := tr.conn(t.Context(), 2); err == nil {
		t.Fatal("a closed transport handed out a connection")
	}
	release() // the request ends; Close returns
	<-inFlight
	<-closed
}
