// Package security is the one record of how a client of gregor's (a
// workload, a probe, `gregor describe`, a broker dialing its peers)
// authenticates to and encrypts its traffic with a Kafka-protocol cluster:
// Kafka's security.protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), its
// SASL mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER) and credentials, and
// its TLS material as PEM files. It is filled from flags or from a Kafka
// client properties file (ParseProperties), checked once (Load: every refusal
// names the fix) and never prints its password (String, and the password
// lives only in memory, read from a file).
package security

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Kafka's security.protocol values (SecurityProtocol.java).
const (
	Plaintext     = "PLAINTEXT"
	SSL           = "SSL"
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"
)

// Protocols are the security protocols, in Kafka's order.
var Protocols = []string{Plaintext, SSL, SASLPlaintext, SASLSSL}

// The SASL mechanisms gregor's brokers and clients speak.
const (
	PLAIN       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
	// OAuthBearer is RFC 7628's, with Kafka's unsecured tokens by default
	// (jws.go); a broker enables it only when told to.
	OAuthBearer  = "OAUTHBEARER"
	defaultMechs = PLAIN + "," + ScramSHA256 + "," + ScramSHA512
)

// Mechanisms are the SASL mechanisms gregor speaks.
var Mechanisms = []string{PLAIN, ScramSHA256, ScramSHA512, OAuthBearer}

// DefaultMechanisms is what a broker enables unless told otherwise.
const DefaultMechanisms = defaultMechs

// Config is one client's security settings, as flags or a properties file
// give them. The zero value is PLAINTEXT.
type Config struct {
	Protocol     string // security.protocol; "" is PLAINTEXT
	Mechanism    string // sasl.mechanism
	User         string
	PasswordFile string // a file holding the password (its first line)
	CAFile       string // PEM: the CA that signed the brokers' certificates
	CertFile     string // PEM: this client's certificate (mutual TLS)
	KeyFile      string // PEM: its key

	password string // loaded by Load, or set by a properties file
	loaded   *tls.Config
}

// TLS reports whether the protocol encrypts.
func (c *Config) TLS() bool { return c.Protocol == SSL || c.Protocol == SASLSSL }

// SASL reports whether the protocol authenticates with SASL.
func (c *Config) SASL() bool { return c.Protocol == SASLPlaintext || c.Protocol == SASLSSL }

// Secured reports whether anything but PLAINTEXT is asked for.
func (c *Config) Secured() bool { return c.TLS() || c.SASL() }

// Password is the SASL password Load read.
func (c *Config) Password() string { return c.password }

// String names the settings without the password.
func (c *Config) String() string {
	if !c.Secured() {
		return Plaintext
	}
	s := c.Protocol
	if c.SASL() {
		s += fmt.Sprintf(" %s user %q", c.Mechanism, c.User)
	}
	if c.TLS() && c.CAFile != "" {
		s += " ca " + c.CAFile
	}
	return s
}

// Load checks the settings and reads the password and TLS files, once, at
// the edge; every refusal names the flag (or property) that fixes it.
func (c *Config) Load() error {
	if c.Protocol == "" {
		c.Protocol = Plaintext
	}
	c.Protocol = strings.ToUpper(c.Protocol)
	if !slices.Contains(Protocols, c.Protocol) {
		return fmt.Errorf("--security-protocol %q: give one of %s (Kafka's security.protocol)", c.Protocol, strings.Join(Protocols, ", "))
	}
	if err := c.loadSASL(); err != nil {
		return err
	}
	return c.loadTLS()
}

func (c *Config) loadSASL() error {
	if !c.SASL() {
		if c.Mechanism != "" || c.User != "" || c.PasswordFile != "" || c.password != "" {
			return fmt.Errorf("SASL settings (--sasl-mechanism, --sasl-user, --sasl-password-file) given with --security-protocol %s: use SASL_PLAINTEXT or SASL_SSL, or drop them", c.Protocol)
		}
		return nil
	}
	c.Mechanism = strings.ToUpper(c.Mechanism)
	if c.Mechanism == "" {
		return fmt.Errorf("--security-protocol %s needs --sasl-mechanism (one of %s)", c.Protocol, strings.Join(Mechanisms, ", "))
	}
	if !slices.Contains(Mechanisms, c.Mechanism) {
		return fmt.Errorf("--sasl-mechanism %q: give one of %s", c.Mechanism, strings.Join(Mechanisms, ", "))
	}
	if c.User == "" {
		return fmt.Errorf("--security-protocol %s needs --sasl-user NAME", c.Protocol)
	}
	if c.PasswordFile != "" {
		pw, err := ReadPasswordFile(c.PasswordFile)
		if err != nil {
			return err
		}
		c.password = pw
	}
	if c.password == "" && c.Mechanism == OAuthBearer {
		return nil // an unsecured token for --sasl-user, made per connection
	}
	if c.password == "" {
		return fmt.Errorf("--security-protocol %s needs --sasl-password-file FILE (a file holding the password: it never goes on a command line)", c.Protocol)
	}
	return nil
}

// ReadPasswordFile reads a password: the file's first line, trimmed of its
// line ending.
func ReadPasswordFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--sasl-password-file: %w", err)
	}
	pw, _, _ := strings.Cut(string(b), "\n")
	pw = strings.TrimSuffix(pw, "\r")
	if pw == "" {
		return "", fmt.Errorf("--sasl-password-file %s: the first line is empty; write the password there", path)
	}
	return pw, nil
}

func (c *Config) loadTLS() error {
	if !c.TLS() {
		if c.CAFile != "" || c.CertFile != "" || c.KeyFile != "" {
			return fmt.Errorf("TLS files (--tls-ca, --tls-cert, --tls-key) given with --security-protocol %s: use SSL or SASL_SSL, or drop them", c.Protocol)
		}
		return nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pool, err := LoadCA(c.CAFile)
		if err != nil {
			return fmt.Errorf("--tls-ca: %w", err)
		}
		tc.RootCAs = pool
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return errors.New("--tls-cert and --tls-key go together: give both (mutual TLS) or neither")
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	c.loaded = tc
	return nil
}

// LoadCA reads a PEM file of one or more CA certificates.
func LoadCA(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// ClientTLS is the TLS configuration to dial with (nil without TLS). Each
// call returns a copy, to be given the server name by the dialer.
func (c *Config) ClientTLS() *tls.Config {
	if c == nil || c.loaded == nil {
		return nil
	}
	return c.loaded.Clone()
}

// SASLMechanism is franz-go's client side of the mechanism (nil without
// SASL).
func (c *Config) SASLMechanism() sasl.Mechanism {
	if c == nil || !c.SASL() {
		return nil
	}
	switch c.Mechanism {
	case PLAIN:
		return plain.Auth{User: c.User, Pass: c.password}.AsMechanism()
	case ScramSHA256:
		return scram.Auth{User: c.User, Pass: c.password}.AsSha256Mechanism()
	case ScramSHA512:
		return scram.Auth{User: c.User, Pass: c.password}.AsSha512Mechanism()
	case OAuthBearer:
		// The token file's bearer token (the identity provider's), else
		// Kafka's unsecured login for --sasl-user, fresh on every
		// connection so that a long run never presents an expired one.
		return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			tok := c.password
			if tok == "" {
				tok = UnsecuredJWS(c.User, time.Now(), UnsecuredLifetime)
			}
			return oauth.Auth{Token: tok}, nil
		})
	}
	return nil
}
