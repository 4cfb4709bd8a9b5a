package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gregor/checker"
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

// `gregor run --runtime sim --nemesis pause --nemesis-target leader`
// (pause-leader) end to end: the run is valid, every pause is resumed,
// and while a paused leader is paused the others elect another leader of
// its partition (metadata.jsonl), as under SIGSTOP on the process runtime.
func TestRunRuntimeSimPauseLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gregor-sim")
	}
	t.Setenv("GREGOR_SIM_BINARY", gregorSimBinary(t))
	store := t.TempDir()
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"run", "--runtime", "sim", "--nemesis", "pause", "--nemesis-target", "leader",
		"--nemesis-interval", "5s", "--nemesis-duration", "6s", "--time-limit", "30s", "--seed", "2", "--store", store})
	if err := root.Execute(); err != nil {
		t.Fatalf("gregor run --runtime sim --nemesis pause: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "valid: true") {
		t.Fatalf("stdout lacks valid: true:\n%s", out.String())
	}
	rd, err := history.LatestRun(filepath.Join(store, "queue"))
	if err != nil {
		t.Fatal(err)
	}
	ops, _, _, err := history.ReadFile(rd.History())
	if err != nil {
		t.Fatal(err)
	}
	samples, _, err := history.ReadMetadataFile(rd.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	type pause struct {
		node, partition int32
		from, to        int64
	}
	var pauses []pause
	open := map[int32]int{}
	for _, op := range ops {
		if op.Process != history.Nemesis {
			continue
		}
		var v struct {
			Nodes     []int32 `json:"nodes"`
			Partition int32   `json:"partition"`
		}
		json.Unmarshal(op.Raw, &v)
		switch op.F {
		case "pause":
			if len(v.Nodes) != 1 {
				t.Fatalf("pause-leader paused %v", v.Nodes)
			}
			open[v.Nodes[0]] = len(pauses)
			pauses = append(pauses, pause{v.Nodes[0], v.Partition, op.Time, -1})
		case "resume":
			for _, n := range v.Nodes {
				if i, ok := open[n]; ok {
					pauses[i].to = op.Time
					delete(open, n)
				}
			}
		}
	}
	if len(pauses) == 0 || len(open) > 0 {
		t.Fatalf("%d pauses, %d never resumed", len(pauses), len(open))
	}
	moved := 0
	for _, p := range pauses {
		for _, s := range samples {
			if s.Time > p.from && s.Time < p.to && s.Broker != p.node && int(p.partition) < len(s.Partitions) {
				if l := s.Partitions[p.partition].Leader; l >= 0 && l != p.node {
					moved++
					break
				}
			}
		}
	}
	if moved == 0 {
		t.Fatalf("in none of %d pauses did leadership move off the paused leader (metadata.jsonl)", len(pauses))
	}
	t.Logf("%d pauses of the leader, leadership moved during %d", len(pauses), moved)
}

// gregor shrink of a failing sim run shrinks on the sim (the run's
// runtime): the replays run in gregor-sim, the smallest failing schedule
// is stored as <test>-shrunk with a run directory named by the wall clock
// (not the bubble's 2000-01-01), and the replays leave nothing behind.
func TestShrinkRuntimeSim(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gregor-sim")
	}
	t.Setenv("GREGOR_SIM_BINARY", gregorSimBinary(t))
	store := t.TempDir()
	run := func(args ...string) (string, error) {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(args)
		err := root.Execute()
		return out.String(), err
	}
	out, err := run("run", "--runtime", "sim", "--bug", "ack-before-isr", "--controllers", "1", "--dedicated-controllers",
		"--nemesis", "partition", "--partition-shapes", "isolate-leader", "--nemesis-target", "leader",
		"--nemesis-interval", "3s", "--nemesis-duration", "5s", "--time-limit", "20s", "--seed", "1", "--store", store)
	if ee, ok := errors.AsType[*exitError](err); !ok || ee.code != 1 {
		t.Fatalf("the planted bug's run: %v, want exit 1 (a forbidden anomaly):\n%s", err, out)
	}
	out, err = run("shrink", "--max-replays", "4", filepath.Join(store, "queue"))
	if err != nil {
		t.Fatalf("gregor shrink of a sim run: %v\n%s", err, out)
	}
	if !strings.Contains(out, "shrunk:") {
		t.Fatalf("no shrunk schedule:\n%s", out)
	}
	rd, err := history.LatestRun(filepath.Join(store, "queue-shrunk"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(filepath.Base(string(rd)), "2000") {
		t.Fatalf("the shrunk run is named by the bubble's clock: %s", rd)
	}
	cfg, err := history.ReadConfig(rd.Config())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Runtime != "sim" || !cfg.SimulatedTime {
		t.Fatalf("shrunk run's test.json: runtime %q, simulated_time %v", cfg.Runtime, cfg.SimulatedTime)
	}
	res, err := checker.ReadResultFile(rd.Results())
	if err != nil || res.Valid != checker.ValidFalse {
		t.Fatalf("the shrunk run's result: %v, %v; want invalid", res, err)
	}
	entries, _ := os.ReadDir(store)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".shrink-") {
			t.Fatalf("the replays' directory %s is left", e.Name())
		}
	}
}

// gregor validate --runtime sim runs its planted-bug probes, their
// controls and the safe runs on the sim: the probe's bug is caught in
// every run, no false alarm, every run simulated.
func TestValidateRuntimeSim(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gregor and gregor-sim")
	}
	t.Setenv("GREGOR_SIM_BINARY", gregorSimBinary(t))
	t.Setenv("GREGOR_BINARY", gregorBinary(t))
	dir := t.TempDir()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"validate", "--runtime", "sim", "--bugs", "ack-before-isr", "--runs", "2", "--safe-runs", "2", "--out", dir})
	if err := root.Execute(); err != nil {
		t.Fatalf("gregor validate --runtime sim: %v\n%s", err, out.String())
	}
	var sum struct {
		Bugs []struct {
			Bug          string `json:"bug"`
			Runs, Failed int
		} `json:"bugs"`
		FalseAlarms int `json:"false_alarms"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "validate.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Bugs) != 1 || sum.Bugs[0].Runs != 2 || sum.Bugs[0].Failed != 2 || sum.FalseAlarms != 0 {
		t.Fatalf("validate.json: %s", b)
	}
	configs, _ := filepath.Glob(filepath.Join(dir, "runs", "*", "run", "2*", "test.json"))
	if len(configs) < 6 {
		t.Fatalf("%d runs' test.json, want 6 (2 probes, 2 controls, 2 safe)", len(configs))
	}
	for _, c := range configs {
		cfg, err := history.ReadConfig(c)
		if err != nil || cfg.Runtime != "sim" || !cfg.SimulatedTime {
			t.Fatalf("%s: runtime %q simulated %v (%v)", c, cfg.Runtime, cfg.SimulatedTime, err)
		}
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
