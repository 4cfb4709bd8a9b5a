package security

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

// The token Kafka's unsecured login makes is the one its unsecured
// validator takes; each of OAuthBearerUnsecuredJws' and
// OAuthBearerValidationUtils' refusals is one here.
func TestUnsecuredJWS(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tok := UnsecuredJWS("alice", now, UnsecuredLifetime)
	if sub, err := ValidateUnsecuredJWS(tok, now.Add(time.Minute)); err != nil || sub != "alice" {
		t.Fatalf("own token: %q, %v", sub, err)
	}
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	none := enc(`{"alg":"none"}`)
	bad := map[string]string{
		"expired":         tok,
		"signed":          none + "." + enc(`{"sub":"a","exp":1900000000}`) + ".c2ln",
		"two parts":       none + "." + enc(`{"sub":"a","exp":1900000000}`),
		"alg HS256":       enc(`{"alg":"HS256"}`) + "." + enc(`{"sub":"a","exp":1900000000}`) + ".",
		"no sub":          none + "." + enc(`{"exp":1900000000}`) + ".",
		"numeric sub":     none + "." + enc(`{"sub":7,"exp":1900000000}`) + ".",
		"no exp":          none + "." + enc(`{"sub":"a"}`) + ".",
		"iat in future":   none + "." + enc(`{"sub":"a","iat":1850000000,"exp":1900000000}`) + ".",
		"iat after exp":   none + "." + enc(`{"sub":"a","iat":1700000000,"exp":1600000000}`) + ".",
		"claims not JSON": none + "." + enc(`sub=a`) + ".",
		"not base64":      none + ".%%%.",
	}
	at := map[string]time.Time{"expired": now.Add(2 * UnsecuredLifetime)}
	for name, tok := range bad {
		when := now
		if w, ok := at[name]; ok {
			when = w
		}
		if sub, err := ValidateUnsecuredJWS(tok, when); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%s: accepted as %q (%v)", name, sub, err)
		}
	}
	if !strings.HasSuffix(tok, ".") || strings.Count(tok, ".") != 2 {
		t.Errorf("token %q is not an unsecured compact JWS", tok)
	}
}

// Kafka's unsecured OAUTHBEARER login as a properties file takes the
// principal from unsecuredLoginStringClaim_sub; the client's mechanism
// then presents a fresh unsecured token for it, which the validator takes.
func TestOAuthBearerProperties(t *testing.T) {
	p := write(t, "oauth.properties", `security.protocol=SASL_PLAINTEXT
sasl.mechanism=OAUTHBEARER
sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="alice";
`)
	c, err := ParseProperties(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Load(); err != nil {
		t.Fatal(err)
	}
	m := c.SASLMechanism()
	if c.Mechanism != OAuthBearer || c.User != "alice" || m == nil || m.Name() != OAuthBearer {
		t.Fatalf("read as %+v, mechanism %v", c, m)
	}
	_, first, err := m.Authenticate(t.Context(), "broker:9092")
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimPrefix(strings.Split(string(first), "\x01")[1], "auth=Bearer ")
	if sub, err := ValidateUnsecuredJWS(tok, time.Now()); err != nil || sub != "alice" {
		t.Fatalf("the token presented: %q, %v", sub, err)
	}
	noSub := write(t, "bad.properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\nsasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;\n")
	if _, err := ParseProperties(noSub); err == nil || !strings.Contains(err.Error(), "unsecuredLoginStringClaim_sub") {
		t.Fatalf("a login module without a principal: %v", err)
	}
}
