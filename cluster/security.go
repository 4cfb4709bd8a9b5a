package cluster

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"

	"gregor/cluster/acl"
	"gregor/cluster/controller"
	"gregor/cluster/kconn"
	"gregor/cluster/sasl"
	"gregor/cluster/wire"
	"gregor/internal/security"
)

// Security is a broker's listener security and how it authenticates to
// its peers, by Kafka's broker configs.
type Security struct {
	// ListenerName is the listener's name (listeners=NAME://host:port);
	// Protocol its security protocol (listener.security.protocol.map's
	// entry for the name). Empty: PLAINTEXT.
	ListenerName string
	Protocol     string
	// Mechanisms are sasl.enabled.mechanisms (default: PLAIN and SCRAM,
	// security.DefaultMechanisms; OAUTHBEARER's unsecured tokens only when
	// named, as Kafka enables it only when told to).
	Mechanisms []string
	// CertFile and KeyFile are the broker's certificate (ssl.keystore, as
	// PEM): served on the listener, and presented to peers. Without them,
	// CAKeyFile (the key of Inter.CAFile) lets the broker issue itself one
	// for the host it advertises, into its data directory: how gregor's
	// booting runtimes secure a cluster whose addresses they learn only as
	// it starts.
	CertFile, KeyFile string
	CAKeyFile         string
	// Inter is how this broker dials its peers' listeners (inter-broker
	// replication, markers, controller RPCs): the listener's protocol,
	// sasl.mechanism.inter.broker.protocol, the broker's own user and
	// password, the CA it trusts (ssl.truststore). Its user is also the
	// bootstrap credential every broker accepts for PLAIN and each SCRAM
	// mechanism, as kafka-storage format --add-scram gives one.
	Inter security.Config
	// SuperUsers is super.users: principals ("User:alice") every ACL
	// check will pass; the inter-broker user is always one.
	SuperUsers []string
	// Authorizer turns the authorizer on (Kafka's authorizer.class.name =
	// org.apache.kafka.metadata.authorizer.StandardAuthorizer): every
	// request is checked against the metadata log's ACLs (cluster/acl).
	// Off by default, as Kafka's empty authorizer.class.name: nothing is
	// checked.
	Authorizer bool
	// AllowEveryoneIfNoACL is allow.everyone.if.no.acl.found (Kafka's
	// default false).
	AllowEveryoneIfNoACL bool
}

func (s *Security) defaults() {
	if s.Protocol == "" {
		s.Protocol = security.Plaintext
	}
	if s.ListenerName == "" {
		s.ListenerName = s.Protocol
	}
	if len(s.Mechanisms) == 0 {
		s.Mechanisms = strings.Split(security.DefaultMechanisms, ",")
	}
	s.Inter.Protocol = s.Protocol
}

// validate checks the settings once; the fix is named.
func (s *Security) validate() error {
	if !slices.Contains(security.Protocols, s.Protocol) {
		return fmt.Errorf("listener %s: security protocol %q: give one of %s", s.ListenerName, s.Protocol, strings.Join(security.Protocols, ", "))
	}
	for _, m := range s.Mechanisms {
		if !slices.Contains(security.Mechanisms, m) {
			return fmt.Errorf("--sasl-enabled-mechanisms %q: give some of %s", m, strings.Join(security.Mechanisms, ", "))
		}
	}
	tlsOn := s.Protocol == security.SSL || s.Protocol == security.SASLSSL
	if tlsOn && (s.CertFile == "") != (s.KeyFile == "") {
		return fmt.Errorf("--tls-cert and --tls-key go together: give both, or --tls-ca-key for the broker to issue its own")
	}
	if tlsOn && s.CertFile == "" && s.CAKeyFile == "" {
		return fmt.Errorf("listener %s is %s: give the broker's certificate, --tls-cert and --tls-key (PEM), or --tls-ca-key for it to issue its own", s.ListenerName, s.Protocol)
	}
	if tlsOn && s.Inter.CAFile == "" {
		return fmt.Errorf("listener %s is %s: give --tls-ca, the CA that signed the brokers' certificates (brokers dial each other over it)", s.ListenerName, s.Protocol)
	}
	if !tlsOn && (s.CertFile != "" || s.CAKeyFile != "") {
		return fmt.Errorf("TLS files given for listener %s, which is %s: use SSL or SASL_SSL, or drop them", s.ListenerName, s.Protocol)
	}
	if !s.Authorizer && (len(s.SuperUsers) > 0 || s.AllowEveryoneIfNoACL) {
		return errors.New("--super-users and --allow-everyone-if-no-acl-found configure the authorizer: add --authorizer, or drop them")
	}
	if s.Authorizer && !s.Inter.SASL() && !slices.Contains(s.SuperUsers, acl.Anonymous) {
		// Kafka's principal of a connection without SASL (and without a
		// client certificate) is User:ANONYMOUS: the brokers' own
		// replication, markers and forwarding would be refused.
		return fmt.Errorf("--authorizer on listener %s (%s): its connections are all %s, the brokers' own too; give a SASL listener, or --super-users %s", s.ListenerName, s.Protocol, acl.Anonymous, acl.Anonymous)
	}
	if m := strings.ToUpper(s.Inter.Mechanism); s.Inter.SASL() && m != "" && !slices.Contains(s.Mechanisms, m) {
		return fmt.Errorf("--sasl-mechanism %s (inter-broker) is not in --sasl-enabled-mechanisms %v: enable it", m, s.Mechanisms)
	}
	return nil
}

// prepare issues the broker's certificate when it has only the CA's key,
// and loads its own client side (its certificate is the keystore's).
func (s *Security) prepare(host, dataDir string) error {
	if s.Inter.TLS() && s.CertFile == "" {
		var err error
		if s.CertFile, s.KeyFile, err = security.Issue(s.Inter.CAFile, s.CAKeyFile, "broker", []string{host}, filepath.Join(dataDir, "tls")); err != nil {
			return err
		}
	}
	if s.Inter.TLS() {
		s.Inter.CertFile, s.Inter.KeyFile = s.CertFile, s.KeyFile
	}
	if err := s.Inter.Load(); err != nil {
		return fmt.Errorf("inter-broker security: %w", err)
	}
	return nil
}

// wireOptions set the listener's TLS and SASL on opts.
func (b *Broker) wireOptions(opts *wire.Options) error {
	s := &b.cfg.Security
	if s.Inter.TLS() {
		cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		// ssl.client.auth=none, Kafka's default: clients need no certificate.
		opts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if s.Inter.SASL() {
		opts.SASL = &wire.SASLOptions{Mechanisms: s.Mechanisms, Users: b.users()}
	}
	if s.Authorizer {
		supers := slices.Clone(s.SuperUsers)
		if s.Inter.User != "" {
			supers = append(supers, "User:"+s.Inter.User) // the brokers' own traffic
		}
		opts.Authz = &acl.Settings{SuperUsers: supers, AllowEveryoneIfNoACL: s.AllowEveryoneIfNoACL}
	}
	return nil
}

// peerOptions adds the inter-broker security to a connection's options.
func (b *Broker) peerOptions(o kconn.Options) kconn.Options {
	o.TLS = b.cfg.Security.Inter.ClientTLS()
	o.SASL = b.cfg.Security.Inter.SASLMechanism()
	return o
}

// brokerUsers looks credentials up for the listener: the metadata log's
// SCRAM credentials first, then the bootstrap credential (the broker's
// own user), which also serves PLAIN.
type brokerUsers struct {
	b        *Broker
	user     string
	password string
	boot     map[int8]sasl.Credential
}

func (b *Broker) users() *brokerUsers {
	in := b.cfg.Security.Inter
	u := &brokerUsers{b: b, user: in.User, password: in.Password(), boot: map[int8]sasl.Credential{}}
	if in.User != "" {
		for _, t := range []int8{sasl.TypeSHA256, sasl.TypeSHA512} {
			u.boot[t] = sasl.NewCredential(t, u.password, sasl.MinIterations)
		}
	}
	return u
}

func (u *brokerUsers) Scram(user string, t int8) (sasl.Credential, bool) {
	if c, ok := u.b.Image().Scram[user][t]; ok {
		return c, true
	}
	if user != "" && user == u.user {
		c, ok := u.boot[t]
		return c, ok
	}
	return sasl.Credential{}, false
}

func (u *brokerUsers) CheckPlain(user, password string) bool {
	return user != "" && user == u.user && subtle.ConstantTimeCompare([]byte(password), []byte(u.password)) == 1
}

// raftSecurity puts the controller quorum's raft traffic under mutual TLS
// when the listener has TLS: raft is not the Kafka protocol, so SASL has
// no place in it, and the peers prove who they are by the certificate the
// cluster's CA signed (Kafka's controller listener would run SASL_SSL or
// SSL; here raft's own stream is the controller listener). Without TLS,
// raft stays in the clear and unauthenticated, as a PLAINTEXT controller
// listener is.
func (b *Broker) raftSecurity(ln net.Listener) (net.Listener, controller.DialFunc, error) {
	in := b.cfg.Security.Inter
	if !in.TLS() {
		return ln, b.net.Dial, nil
	}
	cert, err := tls.LoadX509KeyPair(b.cfg.Security.CertFile, b.cfg.Security.KeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	client := in.ClientTLS()
	server := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
		ClientCAs: client.RootCAs, ClientAuth: tls.RequireAndVerifyClientCert}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := b.net.Dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := client.Clone()
		if host, _, err := net.SplitHostPort(addr); err == nil {
			tc.ServerName = host
		}
		c := tls.Client(raw, tc)
		if err := c.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, err
		}
		return c, nil
	}
	return tls.NewListener(ln, server), dial, nil
}
