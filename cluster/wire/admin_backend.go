package wire

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/replica"
)

// AdminBackend is what the admin APIs need beyond Backend (kept apart so
// that Backend stays the produce/fetch path's contract).
type AdminBackend interface {
	// ForwardToController sends an admin request to the active controller
	// and returns its answer (KRaft brokers forward these, KIP-590). A
	// broker without a controller quorum answers every item with an error
	// naming the fix.
	ForwardToController(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
	// LogDir is the directory this broker keeps partition logs in.
	LogDir() string
	// Partitions lists this broker's replicas.
	Partitions() []*replica.Partition
}

// controllerKeys are the admin APIs a broker forwards to the controller;
// the controller's own broker serves them when they arrive forwarded.
var controllerKeys = map[int16]bool{19: true, 20: true, 30: true, 31: true, 33: true, 37: true, 43: true, 44: true, 45: true, 51: true}

// forwardToController is the handler of the forwarded admin APIs.
func forwardToController(s *Server, ctx context.Context, hdr header, req kmsg.Request) reply {
	ab, ok := s.b.(AdminBackend)
	if !ok {
		return unsupported(hdr)
	}
	resp, err := ab.ForwardToController(ctx, req)
	if err != nil || resp == nil {
		s.log.Warn("forwarding to the controller", "key", hdr.key, "err", err)
		return unsupported(hdr)
	}
	return now(resp)
}

// requested reports whether a request's topic list names topic/partition;
// a nil list names every partition (DescribeLogDirs,
// ListPartitionReassignments).
func requested[T any](topics []T, name func(T) string, partitions func(T) []int32, topic string, p int32) bool {
	if topics == nil {
		return true
	}
	for _, t := range topics {
		if name(t) == topic && slices.Contains(partitions(t), p) {
			return true
		}
	}
	return false
}
