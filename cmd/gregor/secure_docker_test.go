package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gregor/history"
	"gregor/internal/dialer"
	"gregor/runtime/docker"
)

// gregor run --runtime docker and --runtime image (gregor's own spec) with
// SASL_SSL and SCRAM-SHA-512: each container gets the CA, its key and the
// password file copied in before it starts (runtime.ClusterSpec.Files),
// its broker issues itself a certificate and replicates over the secured
// listener, the run's clients (in this process) authenticate over TLS, the
// leader is killed and started again (reading the files again), the run is
// valid, and the password is in no file of the run directory.
func TestRunDockerSASLSSL(t *testing.T) {
	if testing.Short() {
		t.Skip("boots docker clusters")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := docker.New(docker.Options{}).Available(ctx); err != nil {
		t.Skipf("SKIPPING secured docker run: no Docker engine answers: %v", err)
	}
	t.Cleanup(func() { dialer.SetSecurity(nil) })
	t.Setenv("GREGOR_BINARY", gregorBinary(t))
	t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	const password = "pw-71c0e2-docker-never-logged"
	pwFile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, rt := range [][]string{{"--runtime", "docker"}, {"--runtime", "image", "--image-spec", gregorSpec}} {
		t.Run(rt[1], func(t *testing.T) {
			store := t.TempDir()
			args := append([]string{"run", "--store", store, "--name", "xsec" + rt[1], "--seed", "7", "--nodes", "3", "--rf", "3",
				"--min-isr", "2", "--idempotence", "--nemesis", "kill", "--nemesis-target", "leader", "--nemesis-interval", "3s",
				"--nemesis-duration", "3s", "--time-limit", "12s", "--warm-up", "1s", "--concurrency", "4", "--rate", "100",
				"--session-timeout", "2s", "--replica-lag-max", "2s",
				"--security-protocol", "SASL_SSL", "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "admin",
				"--sasl-password-file", pwFile}, rt...)
			out, err := execGregor(args...)
			if err != nil {
				t.Fatalf("a SASL_SSL run on --runtime %s: %v\n%s", rt[1], err, out)
			}
			dir := filepath.Join(store, "xsec"+rt[1], history.LatestLink)
			run, err := history.ReadRun(filepath.Join(dir, history.HistoryFile), "")
			if err != nil {
				t.Fatal(err)
			}
			oks, kills, starts := 0, 0, 0
			for _, op := range run.Ops {
				switch {
				case op.Process >= 0 && op.Type == history.OK:
					oks++
				case op.Process == history.Nemesis && op.Error != "":
					t.Fatalf("nemesis %s failed: %s", op.F, op.Error)
				case op.Process == history.Nemesis && op.F == history.NemesisKill:
					kills++
				case op.Process == history.Nemesis && op.F == history.VerbStart:
					starts++
				}
			}
			if oks == 0 || kills == 0 || starts == 0 {
				t.Fatalf("%d operations succeeded over SASL_SSL, %d kills, %d starts: want each", oks, kills, starts)
			}
			noSecretIn(t, dir, password)
		})
	}
}
