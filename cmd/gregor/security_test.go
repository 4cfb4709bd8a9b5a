package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gregor/harness"
	"gregor/internal/dialer"
	"gregor/internal/security"
)

// Security settings are refused at the edge, exit 2, naming the fix.
func TestSecurityFlagRefusals(t *testing.T) {
	t.Cleanup(func() { dialer.SetSecurity(nil) })
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	props := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(props, []byte("security.protocol=SASL_PLAINTEXT\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sasl := []string{"--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism", "PLAIN", "--sasl-user", "a", "--sasl-password-file", pw}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"describe", "--bootstrap", "127.0.0.1:1", "--security-protocol", "SASL_SSL"}, "needs --sasl-mechanism"},
		{[]string{"describe", "--bootstrap", "127.0.0.1:1", "--client-properties", props, "--sasl-user", "a"}, "not both"},
		// gregor up boots clusters: external ones are booted elsewhere.
		{append([]string{"up", "--runtime", "external"}, sasl...), "secured clusters boot on --runtime process, docker and image"},
		{append([]string{"up", "--runtime", "process", "--tls-ca", pw}, sasl...), "use SSL or SASL_SSL"},
		{[]string{"up", "--runtime", "process", "--security-protocol", "SSL", "--tls-ca", pw}, "holds no PEM certificate"},
		// The authorizer's settings need the authorizer, and principals as User:NAME.
		{[]string{"up", "--runtime", "process", "--super-users", "User:ops"}, "add --authorizer"},
		{[]string{"up", "--runtime", "process", "--authorizer", "--super-users", "ops"}, "give principals as User:NAME"},
		// The sim boots SASL_PLAINTEXT only: TLS is the other booting runtimes'.
		{[]string{"run", "--runtime", "sim", "--security-protocol", "SASL_SSL", "--sasl-mechanism", "PLAIN", "--sasl-user", "a", "--sasl-password-file", pw}, "secured clusters boot on --runtime process, docker and image"},
	}
	for _, tc := range cases {
		_, err := execGregor(tc.args...)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("gregor %s: exit %d, %v; want exit 2 naming %q", strings.Join(tc.args, " "), exitCode(err), err, tc.want)
		}
	}
}

// A workload that Authorizes on a cluster gregor boots without SASL
// settings gets a SASL_PLAINTEXT super user of its own, whose password
// file the cleanup removes; a protocol without SASL is refused.
func TestSecureBootMakesASuperUser(t *testing.T) {
	t.Cleanup(func() { dialer.SetSecurity(nil) })
	c := harness.ClusterConfig{Authorizer: true}
	sec := &security.Config{}
	cleanup, err := secureBoot(&c, sec, "sim")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Security.SASL() || c.Security.Protocol != security.SASLPlaintext || c.Security.User == "" {
		t.Fatalf("cluster security %+v, want a SASL_PLAINTEXT super user", c.Security)
	}
	file := c.Security.PasswordFile
	if b, err := os.ReadFile(file); err != nil || len(strings.TrimSpace(string(b))) < 32 {
		t.Fatalf("password file %s: %v (%d bytes)", file, err, len(b))
	}
	if d := dialer.Security(); d == nil || !d.SASL() {
		t.Fatalf("the clients' security is %+v", d)
	}
	cleanup()
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("password file left behind: %v", err)
	}
	if _, err := secureBoot(&harness.ClusterConfig{Authorizer: true}, &security.Config{Protocol: security.SSL}, "process"); err == nil ||
		!strings.Contains(err.Error(), "SASL_PLAINTEXT or SASL_SSL") {
		t.Fatalf("SSL with an authorizing workload: %v", err)
	}
}
