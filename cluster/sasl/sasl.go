// Package sasl is the brokers' side of SASL authentication: PLAIN (RFC
// 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC 7677; Kafka's KIP-84 and
// KIP-554), as Kafka's PlainSaslServer and ScramSaslServer evaluate them,
// and SCRAM credentials as Kafka's ScramFormatter derives them (KIP-152's
// stored and server keys, never the password). The protocol state around
// the exchanges (SaslHandshake, SaslAuthenticate) is cluster/wire's.
package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strings"
	"time"
)

// Mechanism names, as SaslHandshake carries them.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// Scram mechanism numbers of DescribeUserScramCredentials and
// AlterUserScramCredentials (Kafka's ScramMechanism.type()).
const (
	TypeSHA256 int8 = 1
	TypeSHA512 int8 = 2
)

// Iteration bounds of Kafka's ScramMechanism (minIterations 4096) and of
// its AlterUserScramCredentials checks (at most 16384).
const (
	MinIterations = 4096
	MaxIterations = 16384
)

// MechanismName is the name of a SCRAM mechanism number, "" if unknown.
func MechanismName(t int8) string {
	switch t {
	case TypeSHA256:
		return ScramSHA256
	case TypeSHA512:
		return ScramSHA512
	}
	return ""
}

// MechanismType is the number of a SCRAM mechanism name, 0 if unknown.
func MechanismType(name string) int8 {
	switch name {
	case ScramSHA256:
		return TypeSHA256
	case ScramSHA512:
		return TypeSHA512
	}
	return 0
}

func hashOf(mech string) func() hash.Hash {
	if mech == ScramSHA512 {
		return sha512.New
	}
	return sha256.New
}

// Credential is one user's SCRAM credential for one mechanism, as Kafka's
// UserScramCredentialRecord holds it.
type Credential struct {
	Mechanism  int8   `json:"mechanism"`
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
	Iterations int32  `json:"iterations"`
}

// FromSaltedPassword derives the credential from a salted password, as
// AlterUserScramCredentials sends it (ScramFormatter.generateCredential).
func FromSaltedPassword(t int8, salted, salt []byte, iterations int32) Credential {
	h := hashOf(MechanismName(t))
	clientKey := hmacOf(h, salted, []byte("Client Key"))
	stored := h()
	stored.Write(clientKey)
	return Credential{Mechanism: t, Salt: salt, StoredKey: stored.Sum(nil),
		ServerKey: hmacOf(h, salted, []byte("Server Key")), Iterations: iterations}
}

// SaltPassword is Hi(password, salt, iterations) of RFC 5802 (PBKDF2).
func SaltPassword(t int8, password string, salt []byte, iterations int32) []byte {
	h := hashOf(MechanismName(t))
	k, err := pbkdf2.Key(h, password, salt, int(iterations), h().Size())
	if err != nil {
		// Only FIPS-140-only mode refuses; gregor never runs in it.
		panic(err)
	}
	return k
}

// NewCredential makes a credential from a password with a fresh salt:
// the brokers' bootstrap credentials (Kafka's kafka-storage format
// --add-scram).
func NewCredential(t int8, password string, iterations int32) Credential {
	salt := make([]byte, 32)
	rand.Read(salt)
	return FromSaltedPassword(t, SaltPassword(t, password, salt, iterations), salt, iterations)
}

func hmacOf(h func() hash.Hash, key, msg []byte) []byte {
	m := hmac.New(h, key)
	m.Write(msg)
	return m.Sum(nil)
}

// Users is where a server looks credentials up.
type Users interface {
	// Scram is user's credential for mechanism t.
	Scram(user string, t int8) (Credential, bool)
	// CheckPlain reports whether password is user's PLAIN password.
	CheckPlain(user, password string) bool
}

// Server is one SASL exchange on one connection.
type Server interface {
	// Step evaluates the client's token and returns the server's; done
	// once authenticated. An error ends the exchange: an *AuthError's
	// message may go to the client, any other's must not.
	Step(token []byte) (resp []byte, done bool, err error)
	// User is the authenticated user, once done.
	User() string
}

// AuthError is a failure whose message Kafka sends the client
// (SaslAuthenticationException); other errors are answered with the
// generic "invalid credentials" message, which says nothing of whether
// the user exists.
type AuthError struct{ Msg string }

func (e *AuthError) Error() string { return e.Msg }

// NewServer starts an exchange of mechanism mech; nil for one it lacks.
func NewServer(mech string, users Users) Server {
	switch mech {
	case Plain:
		return &plainServer{users: users}
	case ScramSHA256, ScramSHA512:
		return &scramServer{users: users, mech: mech, typ: MechanismType(mech), h: hashOf(mech)}
	case OAuthBearer:
		return &oauthServer{now: time.Now}
	}
	return nil
}

// plainServer is Kafka's PlainSaslServer: one message,
// [authzid] NUL authcid NUL passwd.
type plainServer struct {
	users Users
	user  string
}

func (s *plainServer) User() string { return s.user }

func (s *plainServer) Step(token []byte) ([]byte, bool, error) {
	parts := strings.Split(string(token), "\x00")
	if len(parts) != 3 {
		return nil, false, &AuthError{fmt.Sprintf("Invalid SASL/PLAIN response: expected 3 tokens, got %d", len(parts))}
	}
	authz, user, pass := parts[0], parts[1], parts[2]
	if user == "" {
		return nil, false, &AuthError{"Authentication failed: username not specified"}
	}
	if pass == "" {
		return nil, false, &AuthError{"Authentication failed: password not specified"}
	}
	if !s.users.CheckPlain(user, pass) {
		return nil, false, &AuthError{"Authentication failed: Invalid username or password"}
	}
	if authz != "" && authz != user {
		return nil, false, &AuthError{"Authentication failed: Client requested an authorization id that is different from username"}
	}
	s.user = user
	return nil, true, nil
}

// scramServer is Kafka's ScramSaslServer: client-first, server-first,
// client-final, server-final (RFC 5802 section 5), no channel binding.
type scramServer struct {
	users Users
	mech  string
	typ   int8
	h     func() hash.Hash

	state       int // 0 client-first, 1 client-final, 2 done
	user        string
	cred        Credential
	clientBare  string
	serverFirst string
	nonce       string
}

func (s *scramServer) User() string { return s.user }

var errScram = errors.New("scram: invalid credentials")

func (s *scramServer) Step(token []byte) ([]byte, bool, error) {
	switch s.state {
	case 0:
		return s.clientFirst(string(token))
	case 1:
		return s.clientFinal(string(token))
	}
	return nil, false, errors.New("scram: unexpected message after completion")
}

func (s *scramServer) clientFirst(msg string) ([]byte, bool, error) {
	// gs2-header: "n," (no channel binding) then [a=authzid] ",".
	gs2, rest, ok := strings.Cut(msg, ",")
	if !ok || (gs2 != "n" && gs2 != "y") {
		return nil, false, fmt.Errorf("scram: bad gs2 header %q", gs2)
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, false, errors.New("scram: bad client-first message")
	}
	attrs := parseAttrs(bare)
	name, nonce := attrs["n"], attrs["r"]
	if name == "" || nonce == "" {
		return nil, false, errors.New("scram: client-first message lacks n= or r=")
	}
	user := strings.NewReplacer("=2C", ",", "=3D", "=").Replace(name)
	cred, ok := s.users.Scram(user, s.typ)
	if !ok {
		return nil, false, fmt.Errorf("scram: Authentication failed: Invalid user credentials")
	}
	if authz != "" && strings.TrimPrefix(authz, "a=") != user {
		return nil, false, &AuthError{"Authentication failed: Client requested an authorization id that is different from username"}
	}
	if cred.Iterations < MinIterations {
		return nil, false, fmt.Errorf("scram: iterations %d below the minimum %d", cred.Iterations, MinIterations)
	}
	rnd := make([]byte, 24)
	rand.Read(rnd)
	s.user, s.cred, s.clientBare = user, cred, bare
	s.nonce = nonce + base64.RawStdEncoding.EncodeToString(rnd)
	s.serverFirst = fmt.Sprintf("r=%s,s=%s,i=%d", s.nonce, base64.StdEncoding.EncodeToString(cred.Salt), cred.Iterations)
	s.state = 1
	return []byte(s.serverFirst), false, nil
}

func (s *scramServer) clientFinal(msg string) ([]byte, bool, error) {
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return nil, false, errors.New("scram: client-final message lacks its proof")
	}
	withoutProof := msg[:i]
	proof, err := base64.StdEncoding.DecodeString(msg[i+3:])
	if err != nil {
		return nil, false, errors.New("scram: bad proof encoding")
	}
	// Kafka's check is endsWith, not equality (ScramSaslServer): some
	// clients (librdkafka 1.x) send their own nonce again before the
	// combined one, and Kafka takes them.
	if !strings.HasSuffix(parseAttrs(withoutProof)["r"], s.nonce) {
		return nil, false, errors.New("scram: Invalid client nonce in the final client message.")
	}
	authMsg := []byte(s.clientBare + "," + s.serverFirst + "," + withoutProof)
	sig := hmacOf(s.h, s.cred.StoredKey, authMsg)
	if len(proof) != len(sig) {
		return nil, false, errScram
	}
	clientKey := make([]byte, len(sig))
	for j := range sig {
		clientKey[j] = proof[j] ^ sig[j]
	}
	stored := s.h()
	stored.Write(clientKey)
	if subtle.ConstantTimeCompare(stored.Sum(nil), s.cred.StoredKey) != 1 {
		return nil, false, errScram
	}
	s.state = 2
	serverSig := hmacOf(s.h, s.cred.ServerKey, authMsg)
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSig)), true, nil
}

// parseAttrs reads "k=v,k=v" (a value may hold '=').
func parseAttrs(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && len(k) == 1 {
			if _, dup := out[k]; !dup {
				out[k] = v
			}
		}
	}
	return out
}
