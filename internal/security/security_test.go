package security

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Java's and librdkafka's property names map to the same settings, and
// the password is read but never printed.
func TestParseProperties(t *testing.T) {
	certs, err := WriteCerts(t.TempDir(), []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	java := write(t, "java.properties", `# kafka-console-producer --command-config
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="al1ce-secret";
ssl.truststore.type=PEM
ssl.truststore.location=`+certs.CA+`
client.id=ignored
`)
	rd := write(t, "rdkafka.properties", "security.protocol=sasl_ssl\nsasl.mechanisms=SCRAM-SHA-512\nsasl.username=alice\nsasl.password=al1ce-secret\nssl.ca.location="+certs.CA+"\n")
	for _, p := range []string{java, rd} {
		c, err := ParseProperties(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if err := c.Load(); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if c.Protocol != SASLSSL || c.Mechanism != ScramSHA512 || c.User != "alice" || c.Password() != "al1ce-secret" || c.ClientTLS() == nil || c.SASLMechanism() == nil {
			t.Errorf("%s: read as %+v", p, c)
		}
		if strings.Contains(c.String(), "al1ce-secret") {
			t.Errorf("String() shows the password: %s", c.String())
		}
	}
}

// Refusals name the fix.
func TestLoadRefusals(t *testing.T) {
	pw := write(t, "pw", "secret\n")
	empty := write(t, "empty", "\n")
	jks := write(t, "jks.properties", "security.protocol=SSL\nssl.truststore.location=/x.jks\n")
	cases := []struct {
		c    Config
		want string
	}{
		{Config{Protocol: "TLS"}, "give one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"},
		{Config{Protocol: SASLPlaintext, User: "a", PasswordFile: pw}, "needs --sasl-mechanism"},
		{Config{Protocol: SASLPlaintext, Mechanism: "GSSAPI", User: "a", PasswordFile: pw}, "give one of PLAIN"},
		{Config{Protocol: SASLPlaintext, Mechanism: PLAIN, PasswordFile: pw}, "needs --sasl-user"},
		{Config{Protocol: SASLPlaintext, Mechanism: PLAIN, User: "a"}, "needs --sasl-password-file"},
		{Config{Protocol: SASLPlaintext, Mechanism: PLAIN, User: "a", PasswordFile: empty}, "the first line is empty"},
		{Config{Protocol: Plaintext, User: "a"}, "use SASL_PLAINTEXT or SASL_SSL"},
		{Config{Protocol: SASLPlaintext, Mechanism: PLAIN, User: "a", PasswordFile: pw, CAFile: pw}, "use SSL or SASL_SSL"},
		{Config{Protocol: SSL, CertFile: pw}, "--tls-cert and --tls-key go together"},
		{Config{Protocol: SSL, CAFile: pw}, "holds no PEM certificate"},
	}
	for _, tc := range cases {
		err := tc.c.Load()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.c, err, tc.want)
		}
	}
	if _, err := ParseProperties(jks); err == nil || !strings.Contains(err.Error(), "ssl.truststore.type=PEM") {
		t.Errorf("a JKS truststore: %v", err)
	}
}
