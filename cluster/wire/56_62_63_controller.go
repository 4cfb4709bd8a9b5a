package wire

// AlterPartition (56): v0-3, BrokerRegistration (62): v0-3,
// BrokerHeartbeat (63): v0-1 — the controller RPCs of the KRaft protocol.
//
// Behaviour: handed to this node's controller, which answers NOT_CONTROLLER
// unless it is the active one (the sender then tries another node). A
// single broker with local metadata has no controller: the request is
// refused as unsupported. CreateTopics and DeleteTopics forwarded by
// another broker (client id prefix ForwardClientPrefix) take the same path.

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ForwardClientPrefix marks requests a broker sends to the controller on a
// client's behalf, so they are not forwarded again.
const ForwardClientPrefix = "gregor-broker-"

func init() {
	register(56, 0, 3, handleController)
	register(62, 0, 3, handleController)
	register(63, 0, 1, handleController)
}

func handleController(s *Server, ctx context.Context, hdr header, req kmsg.Request) reply {
	cb, ok := s.b.(ControllerBackend)
	if !ok {
		return unsupported(hdr)
	}
	resp, ok := cb.Controller(ctx, req)
	if !ok {
		return unsupported(hdr)
	}
	return now(resp)
}

// forwarded reports whether a topic request came from another broker.
func forwarded(hdr header) bool { return strings.HasPrefix(hdr.clientID, ForwardClientPrefix) }
