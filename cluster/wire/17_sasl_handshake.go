package wire

// SaslHandshake: v1.
//
// Behaviour: on a SASL listener the handshake is the connection's
// authentication (auth.go) and never reaches this handler; here, on an
// authenticated connection or a listener without SASL, it is answered
// ILLEGAL_SASL_STATE, as KafkaApis.handleSaslHandshakeRequest does. v0
// (raw tokens, no SaslAuthenticate) is not served.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(17, 1, 1, handleSaslHandshake) }

func handleSaslHandshake(s *Server, _ context.Context, _ header, req kmsg.Request) reply {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	if s.opts.SASL != nil {
		resp.SupportedMechanisms = s.opts.SASL.Mechanisms
	}
	return now(resp)
}
