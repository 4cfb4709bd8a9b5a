package security

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// An unsecured JWS (RFC 7515 appendix A.5: header {"alg":"none"}, the
// claims, an empty signature) is the token of Kafka's default OAUTHBEARER
// handlers: OAuthBearerUnsecuredLoginCallbackHandler makes one on the
// client, OAuthBearerUnsecuredValidatorCallbackHandler checks it on the
// broker. Anyone can make one for any principal: Kafka enables OAUTHBEARER
// only when told to (sasl.enabled.mechanisms defaults to GSSAPI), and so
// does gregor (not in DefaultMechanisms). Both sides are here so that the
// format is spelled once.

// UnsecuredLifetime is unsecuredLoginLifetimeSeconds' default (3600 s).
const UnsecuredLifetime = time.Hour

var b64 = base64.RawURLEncoding

// UnsecuredJWS is the token Kafka's unsecured login makes for principal sub
// (unsecuredLoginStringClaim_sub), issued now and valid for life.
func UnsecuredJWS(sub string, now time.Time, life time.Duration) string {
	claims, _ := json.Marshal(map[string]any{"sub": sub, "iat": now.Unix(), "exp": now.Add(life).Unix()})
	return b64.EncodeToString([]byte(`{"alg":"none"}`)) + "." + b64.EncodeToString(claims) + "."
}

// ErrInvalidToken is every reason ValidateUnsecuredJWS refuses a token:
// Kafka answers each with the status "invalid_token".
var ErrInvalidToken = errors.New("invalid_token")

// ValidateUnsecuredJWS checks tok as OAuthBearerUnsecuredValidatorCallbackHandler
// does with its default options (principal claim "sub", no required scope,
// no clock skew) and returns the principal: three dot-separated parts, the
// third empty (OAuthBearerUnsecuredJws); "alg" none; "sub" a non-empty
// string; "exp" present and after now; "iat", if present, not after now
// and before "exp" (OAuthBearerValidationUtils).
func ValidateUnsecuredJWS(tok string, now time.Time) (string, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[2] != "" {
		return "", fmt.Errorf("%w: an unsecured JWS has 3 dot-separated Base64URL values, the third empty", ErrInvalidToken)
	}
	var header struct {
		Alg string `json:"alg"`
	}
	if err := decodePart(parts[0], &header); err != nil || header.Alg != "none" {
		return "", fmt.Errorf("%w: the header must be JSON with alg none (%v)", ErrInvalidToken, err)
	}
	var claims map[string]any
	if err := decodePart(parts[1], &claims); err != nil {
		return "", fmt.Errorf("%w: the claims are not a JSON object: %v", ErrInvalidToken, err)
	}
	sub, ok := claims["sub"].(string)
	if !ok || sub == "" {
		return "", fmt.Errorf("%w: no string claim sub", ErrInvalidToken)
	}
	nowMs := now.UnixMilli()
	exp, ok := claimMs(claims, "exp")
	if !ok {
		return "", fmt.Errorf("%w: no numeric claim exp", ErrInvalidToken)
	}
	if nowMs >= exp {
		return "", fmt.Errorf("%w: the token expired at %d ms", ErrInvalidToken, exp)
	}
	if _, present := claims["iat"]; present {
		iat, ok := claimMs(claims, "iat")
		if !ok || nowMs < iat || iat >= exp {
			return "", fmt.Errorf("%w: iat must be a number not after now and before exp", ErrInvalidToken)
		}
	}
	return sub, nil
}

func decodePart(p string, v any) error {
	b, err := b64.DecodeString(p)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// claimMs is a NumericDate claim (seconds, maybe fractional) in ms.
func claimMs(claims map[string]any, name string) (int64, bool) {
	f, ok := claims[name].(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e15 {
		return 0, false
	}
	return int64(f * 1000), true
}
