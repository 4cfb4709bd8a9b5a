package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gregor/history"
	"gregor/internal/dialer"
)

// gregor run --runtime external against a SASL_SSL cluster (SCRAM-SHA-512)
// that `gregor up` started in another process: the run's clients
// authenticate over TLS with the CA up printed, a kill lands, the history
// is valid, and the password appears nowhere in the run directory
// (history, test.json, run.json, results, report, logs). A run without the
// security flags cannot reach the cluster.
func TestExternalRuntimeSASLSSL(t *testing.T) {
	if testing.Short() {
		t.Skip("boots clusters")
	}
	t.Cleanup(func() { dialer.SetSecurity(nil) })
	bin := gregorBinary(t)
	t.Setenv("GREGOR_BINARY", bin)
	name := fmt.Sprintf("xt-sasl-%d", os.Getpid())
	const password = "pw-9f3b1c7e-never-logged"
	pwFile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sec := []string{"--security-protocol", "SASL_SSL", "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "admin", "--sasl-password-file", pwFile}
	out, ca, boot := startSecureUp(t, bin, name, sec)
	faults := faultFile(t, bin, name)
	store := t.TempDir()
	base := []string{"run", "--runtime", "external", "--bootstrap", boot, "--faults", faults, "--store", store, "--seed", "5",
		"--nemesis", "kill", "--nemesis-interval", "2s", "--nemesis-duration", "3s", "--time-limit", "8s", "--warm-up", "1s",
		"--idempotence", "--concurrency", "4", "--rate", "100"}
	if _, err := execGregor(base...); err == nil {
		t.Fatal("a run without security flags reached a SASL_SSL cluster")
	}
	store = t.TempDir()
	base[8] = store
	args := append(append(base, sec...), "--tls-ca", ca)
	res, err := execGregor(args...)
	if err != nil {
		t.Fatalf("run against the SASL_SSL cluster: %v\n%s", err, res)
	}
	dir := filepath.Join(store, "queue", history.LatestLink)
	run, err := history.ReadRun(filepath.Join(dir, history.HistoryFile), "")
	if err != nil {
		t.Fatal(err)
	}
	oks := 0
	for _, op := range run.Ops {
		if op.Process >= 0 && op.Type == history.OK {
			oks++
		}
	}
	if oks == 0 {
		t.Fatal("no operation succeeded over SASL_SSL")
	}
	noSecretIn(t, dir, password)
	if strings.Contains(out.String(), password) {
		t.Error("gregor up's output holds the SASL password")
	}
}

// gregor run --runtime process with SASL_SSL boots a secured three-broker
// cluster for the run (a CA of its own, each broker's certificate issued
// from it, replication and controller RPCs over the secured listener):
// the clients' operations succeed, the history is valid, and the password
// is nowhere in the run directory.
func TestRunProcessSASLSSL(t *testing.T) {
	if testing.Short() {
		t.Skip("boots clusters")
	}
	t.Cleanup(func() { dialer.SetSecurity(nil) })
	t.Setenv("GREGOR_BINARY", gregorBinary(t))
	const password = "pw-4d2a-process-run"
	pwFile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	out, err := execGregor("run", "--runtime", "process", "--store", store, "--nodes", "3", "--rf", "3", "--min-isr", "2",
		"--time-limit", "5s", "--warm-up", "1s", "--concurrency", "4", "--rate", "100",
		"--security-protocol", "SASL_SSL", "--sasl-mechanism", "SCRAM-SHA-256", "--sasl-user", "admin", "--sasl-password-file", pwFile)
	if err != nil {
		t.Fatalf("a SASL_SSL run on the process runtime: %v\n%s", err, out)
	}
	dir, _ := filepath.EvalSymlinks(filepath.Join(store, "queue", history.LatestLink))
	run, err := history.ReadRun(filepath.Join(dir, history.HistoryFile), "")
	if err != nil {
		t.Fatal(err)
	}
	oks := 0
	for _, op := range run.Ops {
		if op.Process >= 0 && op.Type == history.OK {
			oks++
		}
	}
	if oks == 0 {
		t.Fatal("no operation succeeded over SASL_SSL")
	}
	noSecretIn(t, dir, password)
}

// noSecretIn fails t if any file of the run directory dir (a link is
// followed) holds secret, or if the directory holds too few files for the
// look to have meant anything (history, test.json, run.json, results,
// report, logs).
func noSecretIn(t *testing.T, dir, secret string) {
	t.Helper()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the SASL password", p)
		}
		return nil
	})
	if files < 5 {
		t.Fatalf("only %d files in the run directory %s", files, real)
	}
}

// startSecureUp starts `gregor up` with TLS in another process (startUp)
// and returns the CA and bootstrap it prints.
func startSecureUp(t *testing.T, bin, name string, flags []string) (out *syncBuffer, ca, boot string) {
	t.Helper()
	caLine := regexp.MustCompile(`(?m)^tls ca: (\S+)$`)
	bootLine := regexp.MustCompile(`(?m)^bootstrap: (\S+)$`)
	out = startUp(t, bin, name, append(append([]string{}, upArgs...), flags...), "printed no tls ca", func(o string) bool {
		if m := caLine.FindStringSubmatch(o); m != nil {
			ca, boot = m[1], bootLine.FindStringSubmatch(o)[1]
			return true
		}
		return false
	})
	return out, ca, boot
}

// The authz workload through --runtime external against a SASL_SSL
// cluster `gregor up --authorizer` started in another process (its
// --sasl-user the super user): the run's principals are refused before
// their grants and served after (TOPIC_AUTHORIZATION_FAILED only an
// authorizer answers), under kills, and the history is valid.
func TestExternalRuntimeAuthz(t *testing.T) {
	if testing.Short() {
		t.Skip("boots clusters")
	}
	t.Cleanup(func() { dialer.SetSecurity(nil) })
	bin := gregorBinary(t)
	t.Setenv("GREGOR_BINARY", bin)
	name := fmt.Sprintf("xt-authz-%d", os.Getpid())
	pwFile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pwFile, []byte("pw-authz-external\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sec := []string{"--security-protocol", "SASL_SSL", "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "admin", "--sasl-password-file", pwFile}
	_, ca, boot := startSecureUp(t, bin, name, append([]string{"--authorizer", "--super-users", "User:ops"}, sec...))
	faults := faultFile(t, bin, name)
	store := t.TempDir()
	args := append([]string{"run", "--runtime", "external", "--bootstrap", boot, "--faults", faults, "--store", store, "--seed", "7",
		"--workload", "authz", "--concurrency", "2", "--acks", "all", "--min-isr", "2", "--rf", "3", "--partitions", "3",
		"--nemesis", "kill", "--nemesis-interval", "3s", "--nemesis-duration", "3s", "--time-limit", "12s", "--warm-up", "1s",
		"--tls-ca", ca}, sec...)
	res, err := execGregor(args...)
	if err != nil {
		t.Fatalf("the authz workload against the SASL_SSL cluster: %v\n%s", err, res)
	}
	dir := filepath.Join(store, "authz", history.LatestLink)
	run, err := history.ReadRun(filepath.Join(dir, history.HistoryFile), "")
	if err != nil {
		t.Fatal(err)
	}
	refused, sent := 0, 0
	for _, op := range run.Ops {
		if op.F != "authz-send" {
			continue
		}
		switch {
		case op.Type == history.OK:
			sent++
		case strings.Contains(op.Error, "TOPIC_AUTHORIZATION_FAILED"):
			refused++
		}
	}
	if sent == 0 || refused == 0 {
		t.Fatalf("authz-send: %d ok, %d refused: want both (the authorizer granting and revoking)\n%s", sent, refused, res)
	}
	if !strings.Contains(res, "valid: true") {
		t.Fatalf("the run is not valid:\n%s", res)
	}
}
