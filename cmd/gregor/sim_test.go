package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gregor/history"
)

var (
	simBuildOnce sync.Once
	simBuilt     string
	simBuildErr  error
)

// gregorSimBinary builds bin/gregor-sim's equivalent once per test process
// (make build's recipe: a test binary of this package with -tags
// synctests), unless GREGOR_SIM_BINARY names one.
func gregorSimBinary(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("GREGOR_SIM_BINARY"); b != "" {
		return b
	}
	simBuildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gregor-sim-test-")
		if err != nil {
			simBuildErr = err
			return
		}
		simBuilt = filepath.Join(dir, "gregor-sim")
		cmd := exec.Command("go", "test", "-c", "-tags", "synctests", "-o", simBuilt, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			simBuildErr, simBuilt = err, string(out)
		}
	})
	if simBuildErr != nil {
		t.Fatalf("building gregor-sim: %v\n%s", simBuildErr, simBuilt)
	}
	return simBuilt
}

// `gregor run --runtime sim`: a leader kill and partition on acks=1 run in
// one bubble, stored, checked and reported as any run, test.json saying
// the time was simulated; --repeat reruns the seed and counts recurrences.
func TestRunRuntimeSim(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gregor-sim")
	}
	t.Setenv("GREGOR_SIM_BINARY", gregorSimBinary(t))
	store := t.TempDir()
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"run", "--runtime", "sim", "--acks", "1", "--nemesis", "kill,partition", "--nemesis-target", "leader",
		"--time-limit", "20s", "--seed", "7", "--store", store, "--repeat", "2"})
	err := root.Execute()
	if ee, ok := errors.AsType[*exitError](err); err != nil && (!ok || ee.code != 0) {
		t.Fatalf("gregor run --runtime sim: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{"gregor run: faults", "gregor run: done", "stored in"} {
		if !strings.Contains(errOut.String(), want) {
			t.Fatalf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
	for _, want := range []string{"valid: true", "seed 7, 2 repetitions on --runtime sim (2 checked)"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("stdout lacks %q:\n%s", want, out.String())
		}
	}
	rd, err := history.LatestRun(filepath.Join(store, "queue"))
	if err != nil {
		t.Fatal(err)
	}
	dir := string(rd)
	cfg, err := history.ReadConfig(rd.Config())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Runtime != "sim" || !cfg.SimulatedTime {
		t.Fatalf("test.json: runtime %q, simulated_time %v", cfg.Runtime, cfg.SimulatedTime)
	}
	for _, f := range []string{rd.History(), rd.Results(), filepath.Join(dir, "report.html"), filepath.Join(dir, "logs", "node-1.log")} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Fatalf("%s: missing or empty (%v)", f, err)
		}
	}
}

// A nemesis the sim does not model is refused before anything starts,
// naming why (exit 2).
func TestRunRuntimeSimRefusesPause(t *testing.T) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"run", "--runtime", "sim", "--nemesis", "kill,pause", "--store", t.TempDir()})
	err := root.Execute()
	ee, ok := errors.AsType[*exitError](err)
	if !ok || ee.code != checkBadInput || !strings.Contains(err.Error(), "pause is not modelled by --runtime sim") {
		t.Fatalf("got %v, want exit 2 naming why pause is refused", err)
	}
	if strings.Contains(out.String(), "setup") {
		t.Fatalf("the run started:\n%s", out.String())
	}
}

// SIGTERM to `gregor run --runtime sim` ends the simulation at once: the
// child ends its bubble (every goroutine of it must end, or synctest
// fails), the parent exits 3 (interrupted), and no process is left.
func TestRunRuntimeSimSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gregor and gregor-sim")
	}
	t.Setenv("GREGOR_SIM_BINARY", gregorSimBinary(t))
	var errOut syncBuffer
	cmd := exec.Command(gregorBinary(t), "run", "--runtime", "sim", "--acks", "1", "--nemesis", "kill", "--time-limit", "1h",
		"--seed", "3", "--store", t.TempDir())
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(errOut.String(), "gregor run: faults") {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no fault phase within 60s:\n%s", errOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	took := time.Since(sent)
	ee, ok := errors.AsType[*exec.ExitError](err)
	if !ok || ee.ExitCode() != checkUnknown {
		t.Fatalf("exit %v after SIGTERM, want %d:\n%s", err, checkUnknown, errOut.String())
	}
	if took > 5*time.Second {
		t.Fatalf("took %v to stop after SIGTERM", took)
	}
	if strings.Contains(errOut.String(), "did not end") || strings.Contains(errOut.String(), "simulation failed") {
		t.Fatalf("the bubble did not end cleanly:\n%s", errOut.String())
	}
}

// syncBuffer is a bytes.Buffer a process writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The sim arms fault points directly: a crash at hw-advanced, armed on
// every broker, fires (a fault-point-fired operation naming the node and
// the partition), takes that node down and the harness starts it again
// (fault-point-restart, no error); the correct cluster stays valid. A pause
// is refused before anything starts, naming why.
func TestRunRuntimeSimFaultPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gregor-sim")
	}
	t.Setenv("GREGOR_SIM_BINARY", gregorSimBinary(t))
	store := t.TempDir()
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"run", "--runtime", "sim", "--min-isr", "2", "--nemesis", "fault-points", "--fault-points", "hw-advanced",
		"--fault-point-actions", "crash", "--fault-point-target", "all", "--nemesis-interval", "2s", "--nemesis-duration", "3s",
		"--time-limit", "12s", "--seed", "4", "--store", store})
	if err := root.Execute(); err != nil {
		t.Fatalf("gregor run --runtime sim with fault points: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	rd, err := history.LatestRun(filepath.Join(store, "queue"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(rd.History())
	if err != nil {
		t.Fatal(err)
	}
	fired, restarted := 0, 0
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.Contains(line, `"f":"`+history.VerbFaultPointFired+`"`):
			fired++
			if !strings.Contains(line, `"action":"crash"`) || !strings.Contains(line, `"key":"queue/`) {
				t.Errorf("a firing without its action or partition: %s", line)
			}
		case strings.Contains(line, `"f":"`+history.VerbFaultPointRestart+`"`):
			restarted++
			if strings.Contains(line, `"error"`) {
				t.Errorf("a crashed node not restarted: %s", line)
			}
		}
	}
	if fired == 0 || restarted != fired {
		t.Fatalf("%d firings, %d restarts: want some, one restart per crash", fired, restarted)
	}

	root = newRoot()
	out.Reset()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"run", "--runtime", "sim", "--nemesis", "fault-points", "--fault-point-actions", "pause", "--store", t.TempDir()})
	err = root.Execute()
	if ee, ok := errors.AsType[*exitError](err); !ok || ee.code != checkBadInput || !strings.Contains(err.Error(), "carries out only the crash and cut") {
		t.Fatalf("a pause at a point on the sim: %v, want exit 2 naming why\n%s", err, out.String())
	}
}
