package sasl

import (
	"regexp"
	"strings"
	"time"

	"gregor/internal/security"
)

// OAuthBearer is SASL/OAUTHBEARER (RFC 7628, KIP-255) with Kafka's
// default, unsecured tokens (security.ValidateUnsecuredJWS).
const OAuthBearer = security.OAuthBearer

// clientFirst is OAuthBearerClientInitialResponse's grammar: the GS2 header
// without channel binding, an optional authzid, then \x01-separated
// key=value pairs ending in \x01\x01, one of them auth=SCHEME TOKEN; the
// others are extensions (keys [A-Za-z]+).
var clientFirst = regexp.MustCompile(`^n,(?:a=((?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+))?,\x01((?:[A-Za-z]+=[\x21-\x7E ]*\x01)*)\x01$`)

// oauthServer is Kafka's OAuthBearerSaslServer with the unsecured
// validator: one client message; a token refused is answered with a JSON
// error as the server's challenge, the client answers \x01, and the
// exchange fails with that JSON as its message (RFC 7628 section 3.2.2).
type oauthServer struct {
	now      func() time.Time
	user     string
	errorMsg string // the challenge sent, awaiting the client's \x01
}

func (s *oauthServer) User() string { return s.user }

func (s *oauthServer) Step(token []byte) ([]byte, bool, error) {
	if len(token) == 1 && token[0] == 0x01 && s.errorMsg != "" {
		return nil, false, &AuthError{s.errorMsg}
	}
	s.errorMsg = ""
	m := clientFirst.FindStringSubmatch(string(token))
	if m == nil {
		// A SaslException: Kafka answers the generic message.
		return nil, false, errInvalidFirst
	}
	authz, bearer := m[1], ""
	for _, kv := range strings.Split(strings.TrimSuffix(m[2], "\x01"), "\x01") {
		if k, v, _ := strings.Cut(kv, "="); k == "auth" {
			bearer = v
		}
	}
	scheme, tok, ok := strings.Cut(bearer, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return nil, false, errInvalidFirst
	}
	user, err := security.ValidateUnsecuredJWS(strings.TrimLeft(tok, " "), s.now())
	if err != nil {
		s.errorMsg = `{"status":"invalid_token"}`
		return []byte(s.errorMsg), false, nil
	}
	if authz != "" && authz != user {
		return nil, false, &AuthError{"Authentication failed: Client requested an authorization id (" + authz +
			") that is different from the token's principal name (" + user + ")"}
	}
	s.user = user
	return nil, true, nil
}

type plainErr string

func (e plainErr) Error() string { return string(e) }

const errInvalidFirst = plainErr("Invalid OAUTHBEARER client first message")
