package cluster

import (
	"testing"

	"gregor/cluster/kconn"
	"gregor/cluster/kconn/kconntest"
)

// Closing a broker's peer connections does not hold their lock while a
// Conn's Close waits for the request in flight on it (a marker to a peer
// that does not answer): in the simulation a goroutine waiting on that
// sync.Mutex meanwhile stopped virtual time, so the request's deadline
// never came and the run hung.
func TestPeerConnsCloseDoesNotHoldTheLockAcrossAClose(t *testing.T) {
	c, inFlight, release := kconntest.InFlight(t) // Close now waits for the request
	pc := &peerConns{conns: map[int32]*kconn.Conn{2: c}}
	closed := make(chan struct{})
	go func() { defer close(closed); pc.close() }()
	kconntest.LetGoBeforeTheRequestEnds(t, inFlight, &pc.mu, &pc.closed)
	release() // the request ends; Close and close return
	<-inFlight
	<-closed
}
