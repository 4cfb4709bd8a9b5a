package wire

// SaslHandshake: v0-1 (v0 answered, never served).
//
// Behaviour: on a SASL listener the handshake is the connection's
// authentication (auth.go) and never reaches this handler; here, on an
// authenticated connection or a listener without SASL, it is answered
// ILLEGAL_SASL_STATE, as KafkaApis.handleSaslHandshakeRequest does. v0 is
// advertised because librdkafka requires it to enable SASL at all, and then
// uses v1; a v0 handshake (raw tokens after it, no SaslAuthenticate) is
// answered ILLEGAL_SASL_STATE and the connection closed (auth.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(17, 0, 1, handleSaslHandshake) }

func handleSaslHandshake(s *Server, _ context.Context, _ header, req kmsg.Request) reply {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	if s.opts.SASL != nil {
		resp.SupportedMechanisms = s.opts.SASL.Mechanisms
	}
	return now(resp)
}
