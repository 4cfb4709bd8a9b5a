package wire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/group"
)

// GroupBackend is implemented by brokers that run a group coordinator.
// Brokers without one answer group requests COORDINATOR_NOT_AVAILABLE.
type GroupBackend interface {
	// GroupCoordinator is this broker's coordinator (nil while it has none).
	GroupCoordinator() *group.Coordinator
	// FindCoordinator names the broker coordinating key (a group id),
	// creating __consumer_offsets on first use.
	FindCoordinator(ctx context.Context, key string) (Coordinator, *kerr.Error)
}

// Coordinator is a broker address as FindCoordinator answers it.
type Coordinator struct {
	NodeID int32
	Host   string
	Port   int32
}

// coordinator returns the server's group coordinator, or nil.
func (s *Server) coordinator() *group.Coordinator {
	gb, ok := s.b.(GroupBackend)
	if !ok {
		return nil
	}
	return gb.GroupCoordinator()
}
