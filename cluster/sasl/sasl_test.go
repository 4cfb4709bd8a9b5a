package sasl

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"gregor/internal/security"
)

type users map[string]Credential

func (u users) Scram(user string, t int8) (Credential, bool) {
	c, ok := u[user]
	return c, ok && c.Mechanism == t
}
func (u users) CheckPlain(user, password string) bool { return user == "user" && password == "pencil" }

// RFC 7677 section 3's SCRAM-SHA-256 exchange, byte for byte: the
// server's nonce and salt are the RFC's, the client's proof is accepted
// and the server signature is the RFC's; a proof off by one bit is not.
func TestScramSHA256RFC7677(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	cred := FromSaltedPassword(TypeSHA256, SaltPassword(TypeSHA256, "pencil", salt, 4096), salt, 4096)
	const clientFirst = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
	const serverFirst = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	const final = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
	run := func(final string) ([]byte, bool, error) {
		s := NewServer(ScramSHA256, users{"user": cred}).(*scramServer)
		if _, done, err := s.Step([]byte(clientFirst)); err != nil || done {
			t.Fatalf("client-first: done %v, %v", done, err)
		}
		s.nonce, s.serverFirst = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", serverFirst
		return s.Step([]byte(final))
	}
	out, done, err := run(final)
	if err != nil || !done || string(out) != "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=" {
		t.Fatalf("server-final %q, done %v, %v", out, done, err)
	}
	if _, _, err := run(strings.Replace(final, "p=dHzb", "p=dHzc", 1)); err == nil {
		t.Fatal("a wrong proof was accepted")
	}
}

// PLAIN: the right password, the wrong one, and an authorization id that
// is not the user (PlainSaslServer's refusals).
func TestPlain(t *testing.T) {
	for msg, ok := range map[string]bool{"\x00user\x00pencil": true, "user\x00user\x00pencil": true,
		"\x00user\x00pen": false, "admin\x00user\x00pencil": false, "user\x00pencil": false} {
		_, done, err := NewServer(Plain, users{}).Step([]byte(msg))
		if done != ok || (err == nil) != ok {
			t.Errorf("%q: done %v, %v; want ok %v", msg, done, err, ok)
		}
	}
}

// OAUTHBEARER's exchange (RFC 7628 section 3.2, Kafka's
// OAuthBearerSaslServer): one client message; a refused token is answered
// with the JSON error as a challenge and, after the client's \x01, fails
// with it as the message; a malformed message or another scheme fails with
// Kafka's generic message; an authzid must be the token's principal.
func TestOAuthBearer(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	srv := func() *oauthServer { return &oauthServer{now: func() time.Time { return now }} }
	first := func(authz, scheme, tok string) []byte {
		return []byte("n," + authz + ",\x01auth=" + scheme + " " + tok + "\x01traceId=x1\x01\x01")
	}
	good := security.UnsecuredJWS("alice", now, time.Hour)
	s := srv()
	if out, done, err := s.Step(first("", "Bearer", good)); err != nil || !done || len(out) != 0 || s.User() != "alice" {
		t.Fatalf("valid token: %q done %v err %v user %q", out, done, err, s.User())
	}
	if _, done, err := srv().Step(first("a=alice", "bearer", good)); err != nil || !done {
		t.Fatalf("authzid = principal: done %v, %v", done, err)
	}
	if _, _, err := srv().Step(first("a=bob", "Bearer", good)); err == nil || !strings.Contains(err.(*AuthError).Msg, "authorization id (bob)") {
		t.Fatalf("authzid bob for alice's token: %v", err)
	}
	s = srv()
	expired := security.UnsecuredJWS("alice", now.Add(-2*time.Hour), time.Hour)
	out, done, err := s.Step(first("", "Bearer", expired))
	if err != nil || done || string(out) != `{"status":"invalid_token"}` {
		t.Fatalf("expired token: challenge %q done %v err %v", out, done, err)
	}
	if _, _, err := s.Step([]byte{0x01}); err == nil || err.(*AuthError).Msg != `{"status":"invalid_token"}` {
		t.Fatalf("after the client's \\x01: %v", err)
	}
	for name, msg := range map[string][]byte{"basic scheme": first("", "Basic", good), "no gs2 header": []byte("auth=Bearer " + good),
		"no terminator": []byte("n,,\x01auth=Bearer " + good + "\x01"), "\\x01 first": {0x01}} {
		if _, _, err := srv().Step(msg); err == nil {
			t.Errorf("%s: accepted", name)
		} else if _, ok := err.(*AuthError); ok {
			t.Errorf("%s: %v sent to the client; Kafka sends its generic message", name, err)
		}
	}
}
