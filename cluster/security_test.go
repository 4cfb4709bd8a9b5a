package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"gregor/cluster/kconn"
	"gregor/internal/security"
)

const testAdmin, testPassword = "admin", "s3cret-Pa55"

// secured sets a broker's listener to protocol with certificates made for
// hosts in dir, the inter-broker user admin (SCRAM-SHA-512).
func secured(t *testing.T, protocol string, hosts ...string) (func(*Config), security.Certs) {
	t.Helper()
	dir := t.TempDir()
	certs, err := security.WriteCerts(dir, hosts)
	if err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte(testPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(c *Config) {
		c.Security = Security{Protocol: protocol}
		if protocol == security.SSL || protocol == security.SASLSSL {
			c.Security.CertFile, c.Security.KeyFile = certs.BrokerCert, certs.BrokerKey
			c.Security.Inter.CAFile = certs.CA
		}
		if protocol == security.SASLPlaintext || protocol == security.SASLSSL {
			c.Security.Inter.Mechanism, c.Security.Inter.User, c.Security.Inter.PasswordFile = security.ScramSHA512, testAdmin, pw
		}
	}, certs
}

func tlsOpt(t *testing.T, ca string) kgo.Opt {
	pool, err := security.LoadCA(ca)
	if err != nil {
		t.Fatal(err)
	}
	return kgo.DialTLSConfig(&tls.Config{RootCAs: pool})
}

func pingWith(addr string, opts ...kgo.Opt) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

// Every mechanism authenticates the bootstrap user over SASL_SSL, and a
// wrong password, an unknown user and a client without TLS are refused.
func TestSASLSSLMechanisms(t *testing.T) {
	mod, certs := secured(t, security.SASLSSL)
	b := startBroker(t, t.TempDir(), mod)
	addr := b.Advertised()
	tlsO := tlsOpt(t, certs.CA)
	good := map[string]sasl.Mechanism{
		"PLAIN":         plain.Auth{User: testAdmin, Pass: testPassword}.AsMechanism(),
		"SCRAM-SHA-256": scram.Auth{User: testAdmin, Pass: testPassword}.AsSha256Mechanism(),
		"SCRAM-SHA-512": scram.Auth{User: testAdmin, Pass: testPassword}.AsSha512Mechanism(),
	}
	for name, m := range good {
		if err := pingWith(addr, tlsO, kgo.SASL(m)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := map[string]sasl.Mechanism{
		"PLAIN wrong password":         plain.Auth{User: testAdmin, Pass: "nope"}.AsMechanism(),
		"SCRAM-SHA-256 wrong password": scram.Auth{User: testAdmin, Pass: "nope"}.AsSha256Mechanism(),
		"SCRAM-SHA-512 unknown user":   scram.Auth{User: "mallory", Pass: testPassword}.AsSha512Mechanism(),
	}
	for name, m := range bad {
		err := pingWith(addr, tlsO, kgo.SASL(m))
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: got %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
	}
	if err := pingWith(addr, kgo.SASL(good["PLAIN"])); err == nil {
		t.Error("a client without TLS reached a SASL_SSL listener")
	}
	if err := pingWith(addr, tlsO); err == nil {
		t.Error("a client without SASL reached a SASL_SSL listener")
	}
}

// Before authentication only ApiVersions and SaslHandshake are served: a
// Metadata request is dropped with the connection (Kafka's
// IllegalSaslStateException during the handshake); during the exchange a
// request other than SaslAuthenticate is answered ILLEGAL_SASL_STATE and
// the connection closed; an unknown mechanism is UNSUPPORTED_SASL_MECHANISM.
func TestSASLStateMachine(t *testing.T) {
	mod, _ := secured(t, security.SASLPlaintext)
	b := startBroker(t, t.TempDir(), mod)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dial := func() *kconn.Conn {
		c, err := kconn.Dial(ctx, b.Advertised(), kconn.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	c := dial()
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(9)
	if _, err := c.Request(ctx, md); err == nil {
		t.Error("Metadata before authentication was answered")
	}

	c = dial()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "GSSAPI"
	resp, err := c.Request(ctx, hs)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.SASLHandshakeResponse); r.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(r.SupportedMechanisms) != 3 {
		t.Errorf("GSSAPI handshake: error %d, mechanisms %v; want UNSUPPORTED_SASL_MECHANISM and the three enabled", r.ErrorCode, r.SupportedMechanisms)
	}
	if _, err := c.Request(ctx, kmsg.NewPtrApiVersionsRequest()); err == nil {
		t.Error("the connection stayed open after UNSUPPORTED_SASL_MECHANISM")
	}

	c = dial()
	hs.Mechanism = "PLAIN"
	if resp, err = c.Request(ctx, hs); err != nil || resp.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
		t.Fatalf("PLAIN handshake: %v %v", resp, err)
	}
	c = dial()
	hs.Mechanism = "PLAIN"
	if _, err = c.Request(ctx, hs); err != nil {
		t.Fatal(err)
	}
	list := kmsg.NewPtrListGroupsRequest()
	list.SetVersion(3)
	resp, err = c.Request(ctx, list)
	if err != nil {
		t.Fatalf("ListGroups during authentication: %v", err)
	}
	if code := resp.(*kmsg.ListGroupsResponse).ErrorCode; code != kerr.IllegalSaslState.Code {
		t.Errorf("ListGroups during authentication: error %d, want ILLEGAL_SASL_STATE", code)
	}
	if _, err := c.Request(ctx, kmsg.NewPtrSASLAuthenticateRequest()); err == nil {
		t.Error("the connection stayed open after ILLEGAL_SASL_STATE")
	}
}

// A three-broker SASL_SSL cluster replicates and runs its controller over
// the secured listener; AlterUserScramCredentials adds a user every
// broker then authenticates, DescribeUserScramCredentials lists it, and a
// deletion locks it out.
func TestSASLSSLClusterScramCredentials(t *testing.T) {
	hosts := []string{}
	var mod func(*Config)
	var certs security.Certs
	tc := startCluster(t, 3, func(c *Config) {
		if mod == nil {
			host, _, _ := net.SplitHostPort(c.Listen)
			block := host[:strings.LastIndex(host, ".")]
			for i := 1; i <= 3; i++ {
				hosts = append(hosts, block+"."+string(rune('0'+i)))
			}
			mod, certs = secured(t, security.SASLSSL, hosts...)
		}
		mod(c)
	})
	admin := scram.Auth{User: testAdmin, Pass: testPassword}.AsSha512Mechanism()
	tlsO := tlsOpt(t, certs.CA)
	cl := tc.client(tlsO, kgo.SASL(admin))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "secured"); err != nil {
		t.Fatal(err)
	}
	tc.waitFor("ISR of 3", 20*time.Second, func() error {
		if isr := tc.isr("secured", 0); len(isr) != 3 {
			return errors.New("isr not full")
		}
		return nil
	})
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "secured", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("acks=all produce over SASL_SSL (followers fetch over it too): %v", err)
	}

	upsert := kadm.UpsertSCRAM{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-pw"}
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{upsert})
	if err != nil || res.Error() != nil {
		t.Fatalf("AlterUserScramCredentials: %v %v", err, res.Error())
	}
	low := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = "bob", 1, 1000, []byte("salt"), make([]byte, 32)
	low.Upsertions = append(low.Upsertions, up)
	if r, err := low.RequestWith(ctx, cl); err != nil || len(r.Results) != 1 || r.Results[0].ErrorCode != kerr.UnacceptableCredential.Code {
		t.Errorf("1000 iterations: got %+v %v, want UNACCEPTABLE_CREDENTIAL", r, err)
	}
	alice := scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism()
	for _, br := range tc.brokers {
		addr := br.Advertised()
		tc.waitFor("alice authenticates at "+addr, 10*time.Second, func() error { return pingWith(addr, tlsO, kgo.SASL(alice)) })
	}
	desc, err := adm.DescribeUserSCRAMs(ctx, "alice")
	if err != nil || desc.Error() != nil {
		t.Fatalf("DescribeUserScramCredentials: %v %v", err, desc.Error())
	}
	if ci := desc["alice"].CredInfos; len(ci) != 1 || ci[0].Iterations != 4096 || ci[0].Mechanism != kadm.ScramSha256 {
		t.Errorf("alice described as %+v", ci)
	}
	if d, _ := adm.DescribeUserSCRAMs(ctx, "nobody"); !errors.Is(d["nobody"].Err, kerr.ResourceNotFound) {
		t.Errorf("describing an unknown user: %v, want RESOURCE_NOT_FOUND", d["nobody"].Err)
	}
	if res, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha256}}, nil); err != nil || res.Error() != nil {
		t.Fatalf("deleting alice: %v %v", err, res.Error())
	}
	tc.waitFor("alice locked out", 10*time.Second, func() error {
		if err := pingWith(tc.bootstrap()[0], tlsO, kgo.SASL(alice)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			return errors.New("alice still authenticates")
		}
		return nil
	})
}

// OAUTHBEARER with Kafka's unsecured tokens, on a listener that enables
// it: the token's principal is the connection's user, an expired token is
// refused with the status invalid_token (as franz-go's own TestOAuthAuth
// expects), and a listener with the default mechanisms refuses the
// mechanism, since an unsecured token lets anyone name any principal.
func TestSASLOAuthBearerUnsecured(t *testing.T) {
	mod, _ := secured(t, security.SASLPlaintext)
	withOAuth := func(c *Config) {
		mod(c)
		c.Security.Mechanisms = []string{security.ScramSHA512, security.OAuthBearer}
	}
	b := startBroker(t, t.TempDir(), withOAuth)
	token := func(exp time.Duration) kgo.Opt {
		return kgo.SASL(oauth.Auth{Token: security.UnsecuredJWS("alice", time.Now().Add(-time.Minute), exp+time.Minute)}.AsMechanism())
	}
	if err := pingWith(b.Advertised(), token(time.Hour)); err != nil {
		t.Fatalf("a valid unsecured token: %v", err)
	}
	err := pingWith(b.Advertised(), token(-30*time.Second))
	if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "invalid_token") {
		t.Fatalf("an expired token: %v, want SASL_AUTHENTICATION_FAILED with invalid_token", err)
	}
	plainBroker := startBroker(t, t.TempDir(), mod)
	if err := pingWith(plainBroker.Advertised(), token(time.Hour)); !errors.Is(err, kerr.UnsupportedSaslMechanism) {
		t.Fatalf("OAUTHBEARER on a listener with the default mechanisms: %v, want UNSUPPORTED_SASL_MECHANISM", err)
	}
}
