package wire

// SaslAuthenticate: v0-2.
//
// Behaviour: on a SASL listener the exchange is the connection's
// authentication (auth.go) and never reaches this handler; here, after
// authentication or on a listener without SASL, it is answered
// ILLEGAL_SASL_STATE, as KafkaApis.handleSaslAuthenticateRequest does.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(36, 0, 2, handleSaslAuthenticate) }

func handleSaslAuthenticate(_ *Server, _ context.Context, _ header, req kmsg.Request) reply {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate request received after successful authentication")
	return now(resp)
}
