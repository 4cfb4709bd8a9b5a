package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"gregor/harness"
	"gregor/internal/dialer"
	"gregor/internal/security"
)

// securityFlags are a client's security settings: the flags, or a Kafka
// client properties file, never both. Every command that talks to a
// cluster binds them (run, up, describe); load checks them once and makes
// them every client's (dialer.SetSecurity).
type securityFlags struct {
	cfg   security.Config
	props string
	fl    *pflag.FlagSet
}

func (s *securityFlags) register(fl *pflag.FlagSet) {
	s.fl = fl
	fl.StringVar(&s.cfg.Protocol, "security-protocol", "", "security.protocol: PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL")
	fl.StringVar(&s.cfg.Mechanism, "sasl-mechanism", "", "sasl.mechanism: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER (the token in --sasl-password-file, else an unsecured token for --sasl-user, as Kafka's default login makes)")
	fl.StringVar(&s.cfg.User, "sasl-user", "", "SASL user name")
	fl.StringVar(&s.cfg.PasswordFile, "sasl-password-file", "", "file whose first line is the SASL password, or with OAUTHBEARER the bearer token (never a flag: it would show in ps and histories)")
	fl.StringVar(&s.cfg.CAFile, "tls-ca", "", "PEM file of the CA that signed the brokers' certificates (ssl.truststore)")
	fl.StringVar(&s.cfg.CertFile, "tls-cert", "", "PEM client certificate, for brokers that ask for one (ssl.keystore)")
	fl.StringVar(&s.cfg.KeyFile, "tls-key", "", "PEM key of --tls-cert")
	fl.StringVar(&s.props, "client-properties", "", "a Kafka client properties file instead of the flags above (security.protocol, sasl.mechanism, sasl.jaas.config or sasl.username/sasl.password, ssl.truststore.location with ssl.truststore.type=PEM, ...)")
}

var securityFlagNames = []string{"security-protocol", "sasl-mechanism", "sasl-user", "sasl-password-file", "tls-ca", "tls-cert", "tls-key"}

// load checks the settings and makes them every client's.
func (s *securityFlags) load() (*security.Config, error) {
	if s.props != "" {
		for _, n := range securityFlagNames {
			if s.fl.Changed(n) {
				return nil, fmt.Errorf("--client-properties with --%s: give the properties file or the flags, not both", n)
			}
		}
		c, err := security.ParseProperties(s.props)
		if err != nil {
			return nil, err
		}
		s.cfg = c
	}
	if err := s.cfg.Load(); err != nil {
		return nil, err
	}
	dialer.SetSecurity(&s.cfg)
	return &s.cfg, nil
}

// brokerSecurityFlags are `gregor broker`'s: the listener's protocol (by
// its name in --listen and --listener-security-protocol-map, as Kafka's
// listeners and listener.security.protocol.map), its certificate, and the
// broker's own credentials for its peers.
type brokerSecurityFlags struct {
	protocolMap string
	mechanisms  string
	certFile    string
	keyFile     string
	caFile      string
	caKeyFile   string
	mechanism   string
	user        string
	password    string
	superUsers  string
	authorizer  bool
	allowNoACL  bool
}

const defaultProtocolMap = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"

func (f *brokerSecurityFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.protocolMap, "listener-security-protocol-map", defaultProtocolMap, "listener.security.protocol.map: NAME:PROTOCOL,... (the listener's name is --listen's NAME://, default PLAINTEXT)")
	fl.StringVar(&f.mechanisms, "sasl-enabled-mechanisms", security.DefaultMechanisms, "sasl.enabled.mechanisms; OAUTHBEARER (unsecured tokens, Kafka's default validator: anyone may name any principal) only when listed")
	fl.StringVar(&f.certFile, "tls-cert", "", "the broker's PEM certificate (ssl.keystore), served and shown to peers")
	fl.StringVar(&f.keyFile, "tls-key", "", "PEM key of --tls-cert")
	fl.StringVar(&f.caFile, "tls-ca", "", "PEM CA the brokers' certificates chain to (ssl.truststore)")
	fl.StringVar(&f.caKeyFile, "tls-ca-key", "", "PEM key of --tls-ca: without --tls-cert, the broker issues itself a certificate for its advertised host")
	fl.StringVar(&f.mechanism, "sasl-mechanism", "", "sasl.mechanism.inter.broker.protocol")
	fl.StringVar(&f.user, "sasl-user", "", "the broker's own SASL user (inter-broker), also a bootstrap credential for PLAIN and SCRAM and a super user")
	fl.StringVar(&f.password, "sasl-password-file", "", "file whose first line is --sasl-user's password")
	fl.StringVar(&f.superUsers, "super-users", "", "super.users: User:NAME;User:NAME (with --authorizer)")
	fl.BoolVar(&f.authorizer, "authorizer", false, "check every request against the ACLs (authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer); off: nothing is checked")
	fl.BoolVar(&f.allowNoACL, "allow-everyone-if-no-acl-found", false, "allow.everyone.if.no.acl.found (with --authorizer): a resource without any ACL is open to all")
}

// listener splits --listen's NAME:// (Kafka's listeners) from its address
// and finds the listener's protocol in the map.
func (f *brokerSecurityFlags) listener(listen string) (name, addr, protocol string, err error) {
	name, addr = "PLAINTEXT", listen
	if n, a, ok := strings.Cut(listen, "://"); ok {
		name, addr = strings.ToUpper(n), a
	}
	for _, kv := range strings.Split(f.protocolMap, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), ":")
		if !ok {
			return "", "", "", fmt.Errorf("--listener-security-protocol-map %q: give NAME:PROTOCOL,...", f.protocolMap)
		}
		if strings.EqualFold(k, name) {
			return name, addr, strings.ToUpper(v), nil
		}
	}
	return "", "", "", fmt.Errorf("listener %s (--listen %s) is not in --listener-security-protocol-map %s: add %s:PROTOCOL", name, listen, f.protocolMap, name)
}

func (f *brokerSecurityFlags) superUserList() ([]string, error) {
	var out []string
	for _, p := range strings.Split(f.superUsers, ";") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if !strings.HasPrefix(p, "User:") {
			return nil, errors.New("--super-users: give principals as User:NAME;User:NAME")
		}
		out = append(out, p)
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, strings.ToUpper(p))
		}
	}
	return out
}

// secureBoot readies a cluster gregor boots for sec: the brokers' listener
// takes sec's protocol and its user as their bootstrap credential, and
// with TLS a CA made here (in a directory of its own, removed by the
// returned cleanup), from which each broker issues itself a certificate and
// which the clients trust. The user's own TLS files are for clusters gregor
// did not boot. The files are the brokers' (harness.ClusterConfig.Security),
// placed by the runtime.
func secureBoot(c *harness.ClusterConfig, sec *security.Config, runtimeName string) (cleanup func(), err error) {
	cleanup = func() {}
	if c.Authorizer && !sec.SASL() {
		if sec.Secured() {
			return cleanup, fmt.Errorf("--security-protocol %s: the workload's principals are SASL users of the brokers' authorizer; give SASL_PLAINTEXT or SASL_SSL, or no security settings (a SASL_PLAINTEXT super user is then made)", sec.Protocol)
		}
		if cleanup, err = superUser(sec); err != nil {
			return func() {}, err
		}
	}
	if !sec.Secured() {
		return cleanup, nil
	}
	// The sim's brokers run in this process and read the password file as
	// the process runtime's do; SASL is bytes over its in-memory network.
	// TLS is not the sim's: its brokers issue themselves certificates from
	// the CA's key, which the sim's disk does not hold. The docker and
	// image runtimes copy the files into each container
	// (runtime.ClusterSpec.Files); an image spec says whether its
	// templates render them (image.Spec.Security).
	simSASL := runtimeName == "sim" && sec.Protocol == security.SASLPlaintext
	if !slices.Contains([]string{"process", "docker", "image", "auto", ""}, runtimeName) && !simSASL {
		return cleanup, fmt.Errorf("--security-protocol %s with --runtime %s: secured clusters boot on --runtime process, docker and image (and SASL_PLAINTEXT on --runtime sim) only; give one of those", sec.Protocol, runtimeName)
	}
	if sec.CAFile != "" || sec.CertFile != "" || sec.KeyFile != "" {
		return cleanup, errors.New("--tls-ca, --tls-cert and --tls-key are for a cluster gregor did not boot: a cluster gregor boots gets a CA of its own (printed as \"tls ca:\")")
	}
	if sec.PasswordFile != "" {
		if sec.PasswordFile, err = filepath.Abs(sec.PasswordFile); err != nil {
			return cleanup, err
		}
	}
	if sec.TLS() {
		prev := cleanup
		dir, err := os.MkdirTemp("", "gregor-tls-")
		if err != nil {
			return cleanup, err
		}
		cleanup = func() { os.RemoveAll(dir); prev() }
		if sec.CAFile, c.CAKey, err = security.WriteCA(dir); err != nil {
			cleanup()
			return func() {}, err
		}
		if err := sec.Load(); err != nil { // now trusting the new CA
			cleanup()
			return func() {}, err
		}
	}
	c.Security = *sec
	dialer.SetSecurity(sec)
	return cleanup, nil
}

// superUser makes sec SASL_PLAINTEXT with a SCRAM-SHA-512 super user of
// its own (the brokers' inter-broker user, always a super user): its
// password, random, in a file of a directory the returned cleanup
// removes, never printed. For a workload that Authorizes on a cluster
// gregor boots without SASL settings.
func superUser(sec *security.Config) (cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "gregor-sasl-")
	if err != nil {
		return nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	pw := make([]byte, 24)
	if _, err := rand.Read(pw); err != nil {
		cleanup()
		return nil, err
	}
	file := filepath.Join(dir, "password")
	if err := os.WriteFile(file, []byte(hex.EncodeToString(pw)+"\n"), 0o600); err != nil {
		cleanup()
		return nil, err
	}
	sec.Protocol, sec.Mechanism, sec.User, sec.PasswordFile = security.SASLPlaintext, security.ScramSHA512, "gregor-admin", file
	if err := sec.Load(); err != nil {
		cleanup()
		return nil, err
	}
	return cleanup, nil
}
