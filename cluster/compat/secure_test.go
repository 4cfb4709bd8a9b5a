package compat

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"gregor/cluster"
	"gregor/internal/security"
)

// TestClientsSASLSSL: Debian's kcat and python3-confluent-kafka (both
// librdkafka) against a three-broker SASL_SSL cluster with SCRAM-SHA-512,
// certificates made at run time: metadata, an acks=all produce, a consume
// back; a wrong password is refused; kcat's unsecured OAUTHBEARER token
// authenticates too.
func TestClientsSASLSSL(t *testing.T) {
	kcat := requireTool(t, "kcat", "kcat")
	requirePython(t, "confluent_kafka", "python3-confluent-kafka")
	block := fmt.Sprintf("127.%d.%d", 1+rand.IntN(254), rand.IntN(255))
	dir := t.TempDir()
	certs, err := security.WriteCerts(dir, []string{block + ".1", block + ".2", block + ".3"})
	if err != nil {
		t.Fatal(err)
	}
	const user, password = "admin", "compat-Pa55-word"
	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tc := startClusterWith(t, block, func(c *cluster.Config) {
		c.Security = cluster.Security{Protocol: security.SASLSSL, CertFile: certs.BrokerCert, KeyFile: certs.BrokerKey,
			Mechanisms: []string{security.ScramSHA512, security.OAuthBearer},
			Inter:      security.Config{Mechanism: security.ScramSHA512, User: user, PasswordFile: pw, CAFile: certs.CA}}
	})
	// Topics made first, RF 3, by franz-go over the same listener.
	pool, err := security.LoadCA(certs.CA)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(tc.bootstrap, ",")...), kgo.DialTLSConfig(&tls.Config{RootCAs: pool}),
		kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, topic := range []string{"kcat-sasl", "ck-sasl"} {
		if _, err := kadm.NewClient(cl).CreateTopic(t.Context(), 3, 3, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("kcat", func(t *testing.T) {
		const topic, n = "kcat-sasl", 50
		sec := func(pass string) []string {
			return []string{"-b", tc.bootstrap, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-512",
				"-X", "sasl.username=" + user, "-X", "sasl.password=" + pass, "-X", "ssl.ca.location=" + certs.CA}
		}
		md, _ := run(t, 30*time.Second, "", false, kcat, append(sec(password), "-L")...)
		if !strings.Contains(md, " 3 brokers:") {
			t.Fatalf("kcat -L over SASL_SSL:\n%s", md)
		}
		var in strings.Builder
		for i := range n {
			fmt.Fprintf(&in, "v%d\n", i)
		}
		_, stderr := run(t, 60*time.Second, in.String(), false, kcat, append(sec(password), "-P", "-t", topic, "-X", "acks=all")...)
		if strings.Contains(stderr, "ERROR") {
			t.Fatalf("produce over SASL_SSL: %s", stderr)
		}
		out, _ := run(t, 60*time.Second, "", false, kcat, append(sec(password), "-C", "-t", topic, "-e", "-o", "beginning")...)
		if got := len(sortedLines(out)); got != n {
			t.Fatalf("consumed %d of %d records over SASL_SSL:\n%s", got, n, out)
		}
		_, stderr = run(t, 30*time.Second, "", true, kcat, append(sec("wrong"), "-L", "-m", "5")...)
		if !strings.Contains(stderr, "Authentication failed") && !strings.Contains(stderr, "SASL authentication error") {
			t.Fatalf("a wrong password: kcat said %q, want an authentication failure", tail(stderr))
		}
	})
	// librdkafka's own unsecured JWT (enable.sasl.oauthbearer.unsecure.jwt)
	// against the broker's unsecured validator: its claims (fractional
	// iat and exp) are taken, and the metadata names every broker.
	t.Run("kcat-oauthbearer", func(t *testing.T) {
		md, stderr := run(t, 30*time.Second, "", false, kcat, "-b", tc.bootstrap, "-X", "security.protocol=SASL_SSL",
			"-X", "sasl.mechanisms=OAUTHBEARER", "-X", "enable.sasl.oauthbearer.unsecure.jwt=true",
			"-X", "sasl.oauthbearer.config=principal="+user, "-X", "ssl.ca.location="+certs.CA, "-L")
		if !strings.Contains(md, "3 brokers:") {
			t.Fatalf("kcat -L over SASL_SSL with OAUTHBEARER:\n%s\n%s", md, tail(stderr))
		}
	})
	t.Run("confluent-kafka", func(t *testing.T) {
		out, _ := run(t, 120*time.Second, "", false, python, "testdata/confluent_kafka_sasl.py", tc.bootstrap, "ck-sasl", "ck-sasl-group",
			certs.CA, user, pw, "40")
		var r struct {
			Produced, Consumed int
			Errors             []string
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("printed %q: %v", out, err)
		}
		if r.Produced != 40 || r.Consumed != 40 {
			t.Fatalf("produced %d, consumed %d of 40 over SASL_SSL; errors %v", r.Produced, r.Consumed, r.Errors)
		}
	})
}
