package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gregor/internal/dialer"
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
		{append([]string{"up", "--runtime", "docker"}, sasl...), "give --runtime process"},
		{append([]string{"up", "--runtime", "process", "--tls-ca", pw}, sasl...), "use SSL or SASL_SSL"},
		{[]string{"up", "--runtime", "process", "--security-protocol", "SSL", "--tls-ca", pw}, "holds no PEM certificate"},
	}
	for _, tc := range cases {
		_, err := execGregor(tc.args...)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("gregor %s: exit %d, %v; want exit 2 naming %q", strings.Join(tc.args, " "), exitCode(err), err, tc.want)
		}
	}
}
