package wire

// A SASL listener's connections authenticate before anything else, as
// Kafka's SaslServerAuthenticator runs them (KIP-43 handshake, KIP-152
// SaslAuthenticate framing):
//
//   - first, ApiVersions (once) and SaslHandshake only; any other request
//     is an IllegalSaslStateException there, and the connection is closed
//     without an answer;
//   - SaslHandshake names a mechanism: an enabled one is answered NONE with
//     the enabled list and the exchange begins; another is answered
//     UNSUPPORTED_SASL_MECHANISM with the list, and the connection closed;
//   - during the exchange only SaslAuthenticate; another request is
//     answered ILLEGAL_SASL_STATE (in its own response's error field) and
//     the connection closed;
//   - a failed exchange is answered SASL_AUTHENTICATION_FAILED, after
//     Kafka's connection.failed.authentication.delay.ms (100 ms), and the
//     connection closed;
//   - once authenticated the connection serves every request as its user;
//     a later SaslHandshake or SaslAuthenticate is answered
//     ILLEGAL_SASL_STATE by its handler (KafkaApis; re-authentication,
//     KIP-368, is not served: the session lifetime answered is 0).
//
// SaslHandshake v0 (raw tokens after the handshake, without
// SaslAuthenticate) is not served: it is answered ILLEGAL_SASL_STATE and
// the connection closed; every client since Kafka 1.0 uses v1.

import (
	"context"
	"reflect"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/sasl"
)

// SASLOptions make a listener authenticate its connections.
type SASLOptions struct {
	// Mechanisms are sasl.enabled.mechanisms.
	Mechanisms []string
	// Users is where credentials are looked up.
	Users sasl.Users
}

// failedAuthDelay is Kafka's connection.failed.authentication.delay.ms.
const failedAuthDelay = 100 * time.Millisecond

type authPhase int

const (
	phaseVersionsOrHandshake authPhase = iota
	phaseHandshake
	phaseAuthenticate
	phaseDone
)

// connAuth is one connection's authentication state; nil on a listener
// without SASL. Only the connection's reading goroutine touches it.
type connAuth struct {
	phase  authPhase
	mech   string
	server sasl.Server
	user   string
}

// authenticate handles a request that arrives before the connection is
// authenticated: served reports whether it did (else the request is
// dispatched as usual).
func (s *Server) authenticate(ctx context.Context, a *connAuth, hdr header, req kmsg.Request) (r reply, served bool) {
	if a == nil || a.phase == phaseDone {
		return reply{}, false
	}
	switch a.phase {
	case phaseVersionsOrHandshake, phaseHandshake:
		if hdr.key == 18 && a.phase == phaseVersionsOrHandshake {
			a.phase = phaseHandshake
			return reply{}, false
		}
		if hdr.key != 17 {
			s.log.Warn("closing connection: unexpected request during SASL handshake", "key", hdr.key, "name", kmsg.NameForKey(hdr.key), "client", hdr.clientID)
			return reply{none: true, closeAfter: true}, true
		}
		return s.handshake(a, hdr, req.(*kmsg.SASLHandshakeRequest)), true
	}
	if hdr.key != 36 {
		s.log.Warn("closing connection: unexpected request during SASL authentication", "key", hdr.key, "name", kmsg.NameForKey(hdr.key), "client", hdr.clientID)
		return reply{resp: errorResponse(req, kerr.IllegalSaslState.Code), closeAfter: true}, true
	}
	return s.saslStep(ctx, a, req.(*kmsg.SASLAuthenticateRequest)), true
}

func (s *Server) handshake(a *connAuth, hdr header, req *kmsg.SASLHandshakeRequest) reply {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = slices.Clone(s.opts.SASL.Mechanisms)
	if hdr.version < 1 {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return reply{resp: resp, closeAfter: true}
	}
	if !slices.Contains(s.opts.SASL.Mechanisms, req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return reply{resp: resp, closeAfter: true}
	}
	a.mech, a.server, a.phase = req.Mechanism, sasl.NewServer(req.Mechanism, s.opts.SASL.Users), phaseAuthenticate
	return now(resp)
}

func (s *Server) saslStep(ctx context.Context, a *connAuth, req *kmsg.SASLAuthenticateRequest) reply {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	out, done, err := a.server.Step(req.SASLAuthBytes)
	if err != nil {
		// Kafka sends its SaslAuthenticationException's message, and for
		// any other failure one that does not say whether the user exists.
		msg := "Authentication failed during authentication due to invalid credentials with SASL mechanism " + a.mech
		if ae, ok := err.(*sasl.AuthError); ok {
			msg = ae.Msg
		}
		s.log.Info("SASL authentication failed", "mechanism", a.mech, "err", err)
		resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, kmsg.StringPtr(msg)
		t := time.NewTimer(failedAuthDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		return reply{resp: resp, closeAfter: true}
	}
	resp.SASLAuthBytes = out
	if done {
		a.phase, a.user = phaseDone, a.server.User()
		s.log.Debug("SASL authenticated", "mechanism", a.mech, "user", a.user)
	}
	return now(resp)
}

// errorResponse is req's response with every top-level ErrorCode field set
// to code: Kafka's AbstractRequest.getErrorResponse sets the error on each
// item the request names, which ends the same way here (the connection
// closes after it).
func errorResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	if f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode"); f.IsValid() && f.Kind() == reflect.Int16 {
		f.SetInt(int64(code))
	}
	return resp
}
