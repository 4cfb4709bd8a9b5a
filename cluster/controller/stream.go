package controller

import (
	"context"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer carries raft's TCP traffic through injectable hooks: the
// process runtime wraps the listener and the dial function to drop traffic
// between nodes (network partitions) at exactly this layer.
type streamLayer struct {
	net.Listener
	dial DialFunc
}

var _ raft.StreamLayer = (*streamLayer)(nil)

// Dial implements raft.StreamLayer.
func (s *streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return s.dial(ctx, "tcp", string(addr))
}
