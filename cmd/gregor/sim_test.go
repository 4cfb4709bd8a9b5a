package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gregor/checker"
	"gregor/history"
	"gregor/runtime/process"
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

// A cancelled sim run stops at once and leaves nothing: SIGTERM (or
// Ctrl-C) during the fault phase of `gregor run --runtime sim` ends it as
// any run: the first signal ends the child's bubble (every goroutine of
// it must end, or synctest fails) and gregor exits 3 (interrupted); a
// second, sent once gregor says it is stopping, exits at once with 128 +
// the signal (143, 130), the child killed first. Each time no gregor-sim
// process is left and the history is one gregor check reads (not exit 2,
// a damaged file). Every wait is for an event, bounded.
func TestRunRuntimeSimSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gregor and gregor-sim")
	}
	gregor, simBin := gregorBinary(t), gregorSimBinary(t)
	for _, tc := range []struct {
		name string
		sigs []syscall.Signal
		want int
	}{
		{"SIGTERM", []syscall.Signal{syscall.SIGTERM}, checkUnknown},
		{"SIGTERM twice", []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM}, 143},
		{"Ctrl-C twice", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, 130},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startSimRun(t, gregor, simBin)
			r.waitLine(t, "gregor run: faults")
			if len(tc.sigs) > 1 {
				// A second signal must find gregor still stopping. Its
				// child's bubble tears down in no virtual time, so gregor
				// could exit 3 first, and a signal to a process that has
				// exited but is not yet reaped is still delivered (kill(2)
				// on a zombie succeeds): nothing would tell the cases
				// apart. A stopped child holds gregor in its wait (its
				// SIGTERM pending) until the second signal's SIGKILL, or
				// WaitDelay's 10 s, ends it.
				r.signalSim(t, syscall.SIGSTOP)
			}
			for i, sig := range tc.sigs {
				if i > 0 {
					r.waitLine(t, "a second signal exits at once")
				}
				if err := r.cmd.Process.Signal(sig); err != nil {
					t.Fatalf("signal %d (%v): %v:\n%s", i+1, sig, err, r.errOut.String())
				}
			}
			var err error
			select {
			case err = <-r.exited:
			case <-time.After(2 * time.Minute): // a guard: the run's time limit is an hour
				r.cmd.Process.Kill()
				t.Fatalf("still running after %v:\n%s", tc.sigs, r.errOut.String())
			}
			ee, ok := errors.AsType[*exec.ExitError](err)
			if !ok || ee.ExitCode() != tc.want {
				t.Fatalf("exit %v after %v, want %d:\n%s", err, tc.sigs, tc.want, r.errOut.String())
			}
			if len(tc.sigs) == 1 && (strings.Contains(r.errOut.String(), "did not end") || strings.Contains(r.errOut.String(), "simulation failed")) {
				t.Fatalf("the bubble did not end cleanly:\n%s", r.errOut.String())
			}
			// The killed child is reaped by the kernel at once; give
			// /proc a bounded number of looks for it to be gone.
			var left []string
			for range 100 {
				if left, err = process.ProcessesMentioning(r.sim); err != nil {
					t.Fatal(err)
				}
				if len(left) == 0 {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if len(left) > 0 {
				t.Fatalf("gregor-sim processes left: %v", left)
			}
			rd, err := history.LatestRun(filepath.Join(r.store, "queue"))
			if err != nil {
				t.Fatalf("no run directory: %v", err)
			}
			ops, _, _, err := history.ReadFile(rd.History())
			if err != nil || len(ops) == 0 {
				t.Fatalf("history: %d ops, %v", len(ops), err)
			}
			check := exec.Command(gregor, "check", rd.History())
			out, err := check.CombinedOutput()
			code := 0
			if ee, ok := errors.AsType[*exec.ExitError](err); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code == checkBadInput || code > checkUnknown {
				t.Fatalf("gregor check of the cancelled run: exit %d:\n%s", code, out)
			}
		})
	}
}

// simRun is a `gregor run --runtime sim` started as a process (acks=1,
// kill and pause, an hour's time limit: it ends only when told to), on a
// copy of gregor-sim of its own, so that /proc tells its processes from
// any other test's.
type simRun struct {
	cmd    *exec.Cmd
	errOut syncBuffer
	sim    string // the copy's path
	store  string
	exited chan error
}

func startSimRun(t *testing.T, gregor, simBin string) *simRun {
	t.Helper()
	dir := t.TempDir()
	r := &simRun{sim: filepath.Join(dir, "gregor-sim"), store: filepath.Join(dir, "store"), exited: make(chan error, 1)}
	if err := os.Link(simBin, r.sim); err != nil {
		b, err := os.ReadFile(simBin)
		if err != nil || os.WriteFile(r.sim, b, 0o755) != nil {
			t.Fatalf("copying gregor-sim: %v", err)
		}
	}
	r.cmd = exec.Command(gregor, "run", "--runtime", "sim", "--acks", "1", "--nemesis", "kill,pause", "--time-limit", "1h",
		"--seed", "3", "--store", r.store)
	r.cmd.Env = append(os.Environ(), "GREGOR_SIM_BINARY="+r.sim)
	r.cmd.Stderr = &r.errOut
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.exited <- r.cmd.Wait() }()
	return r
}

// signalSim sends sig to the run's one gregor-sim process and returns its
// pid.
func (r *simRun) signalSim(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	pids, err := process.ProcessesMentioning(r.sim)
	if err != nil || len(pids) != 1 {
		t.Fatalf("want one gregor-sim, got %v (%v)", pids, err)
	}
	pid, err := strconv.Atoi(pids[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("%v to gregor-sim %d: %v", sig, pid, err)
	}
	return pid
}

// waitLine waits for s in the run's stderr, killing the run and failing
// the test past a guard.
func (r *simRun) waitLine(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // a guard, not a measure
	for !strings.Contains(r.errOut.String(), s) {
		if time.Now().After(deadline) {
			r.cmd.Process.Kill()
			t.Fatalf("no %q within the guard:\n%s", s, r.errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A simulator killed by somebody else (the kernel's OOM killer, a pkill)
// is named as such: the run's exit 3 says the answer is unknown, the line
// says why, and what it wrote of the history is still readable.
func TestRunRuntimeSimKilledChildIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gregor and gregor-sim")
	}
	r := startSimRun(t, gregorBinary(t), gregorSimBinary(t))
	r.waitLine(t, "gregor run: faults")
	pid := r.signalSim(t, syscall.SIGKILL)
	var werr error
	select {
	case werr = <-r.exited:
	case <-time.After(2 * time.Minute): // a guard
		r.cmd.Process.Kill()
		t.Fatalf("gregor still running after its simulator died:\n%s", r.errOut.String())
	}
	if ee, ok := errors.AsType[*exec.ExitError](werr); !ok || ee.ExitCode() != checkUnknown {
		t.Fatalf("exit %v, want %d:\n%s", werr, checkUnknown, r.errOut.String())
	}
	want := fmt.Sprintf("gregor-sim (pid %d) died of signal 9 (killed)", pid)
	if !strings.Contains(r.errOut.String(), want) {
		t.Fatalf("no %q in:\n%s", want, r.errOut.String())
	}
	rd, err := history.LatestRun(filepath.Join(r.store, "queue"))
	if err != nil {
		t.Fatalf("no run directory: %v", err)
	}
	if ops, _, _, err := history.ReadFile(rd.History()); err != nil || len(ops) == 0 {
		t.Fatalf("history of the killed run: %d ops, %v", len(ops), err)
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
// (fault-point-restart, no error); the correct cluster stays valid.
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

	// A pause aimed at the node the hit is about: hw-advanced is about the
	// slowest ISR follower, which the sim freezes (its pause) while the
	// leader that reached the point goes on; the firing names both.
	root = newRoot()
	out.Reset()
	errOut.Reset()
	root.SetOut(&out)
	root.SetErr(&errOut)
	store = t.TempDir()
	root.SetArgs([]string{"run", "--runtime", "sim", "--min-isr", "2", "--nemesis", "fault-points", "--fault-points", "hw-advanced",
		"--fault-point-actions", "pause", "--fault-point-aim", "about", "--fault-point-target", "all", "--nemesis-interval", "2s",
		"--nemesis-duration", "3s", "--time-limit", "10s", "--seed", "4", "--store", store})
	if err := root.Execute(); err != nil {
		t.Fatalf("gregor run --runtime sim with an aimed pause: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	if rd, err = history.LatestRun(filepath.Join(store, "queue")); err != nil {
		t.Fatal(err)
	}
	if b, err = os.ReadFile(rd.History()); err != nil {
		t.Fatal(err)
	}
	aimed := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, `"f":"`+history.VerbFaultPointFired+`"`) {
			if !strings.Contains(line, `"action":"pause"`) || !strings.Contains(line, `"aim":"about"`) {
				t.Errorf("a firing without its action or aim: %s", line)
			}
			if strings.Contains(line, `"hit_by":`) {
				aimed++
			}
		}
	}
	if aimed == 0 {
		t.Fatal("no pause fired on a follower at its leader's hw-advanced")
	}
}

// --controls --seed F without --seeds N is refused before anything runs:
// the matrix's own seeds would silently ignore F.
func TestControlsSeedNeedsSeeds(t *testing.T) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"validate", "--controls", "--seed", "6", "--out", t.TempDir()})
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "needs --seeds N") {
		t.Fatalf("validate --controls --seed 6: %v", err)
	}
}

// `gregor run --runtime sim --workload share --nemesis pause-share-consumer`
// (pause-share-consumer) end to end: the paused consumer acknowledges
// its records more than the lock (15 s) after the poll that returned them;
// a correct broker refuses every one of those acknowledgements
// (INVALID_RECORD_STATE: the lock lapsed and nobody fetched them again),
// and the run is valid; a broker with share-ack-after-lock-expiry takes
// them (share-late-ack).
func TestRunRuntimeSimPauseShareConsumer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gregor-sim")
	}
	t.Setenv("GREGOR_SIM_BINARY", gregorSimBinary(t))
	run := func(bug ...string) (string, []history.Op) {
		store := t.TempDir()
		root := newRoot()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs(append([]string{"run", "--runtime", "sim", "--workload", "share", "--consumers", "1", "--controllers", "1",
			"--dedicated-controllers", "--min-isr", "2", "--nemesis", "pause-share-consumer", "--nemesis-interval", "3s",
			"--nemesis-duration", "1ms", "--time-limit", "40s", "--seed", "3", "--store", store}, bug...))
		if err := root.Execute(); err != nil && !errors.As(err, new(*exitError)) {
			t.Fatalf("gregor run: %v\nstderr:\n%s", err, errOut.String())
		}
		rd, err := history.LatestRun(filepath.Join(store, "share"))
		if err != nil {
			t.Fatalf("%v\nstderr:\n%s", err, errOut.String())
		}
		ops, _, _, err := history.ReadFile(rd.History())
		if err != nil {
			t.Fatal(err)
		}
		return out.String(), ops
	}
	out, ops := run()
	if !strings.Contains(out, "valid: true") {
		t.Fatalf("correct broker: stdout lacks valid: true:\n%s", out)
	}
	late := pausedAcks(t, ops)
	for _, a := range late {
		if len(a.Acks) != 0 || len(a.Unknown) == 0 {
			t.Fatalf("correct broker: a late acknowledgement taken: %+v", a)
		}
		for _, it := range a.Unknown {
			if a.Errors[it.Key] != "INVALID_RECORD_STATE" {
				t.Fatalf("correct broker: late acknowledgement of %s answered %q, want INVALID_RECORD_STATE", it.Key, a.Errors[it.Key])
			}
		}
	}
	out, _ = run("--bug", "share-ack-after-lock-expiry")
	if !strings.Contains(out, "valid: false") || !strings.Contains(out, "share-late-ack") {
		t.Fatalf("share-ack-after-lock-expiry: no share-late-ack:\n%s", out)
	}
	t.Logf("%d paused consumers' late acknowledgements refused by the correct broker", len(late))
}

// pausedAcks returns, for each completed pause-share-consumer step, its
// process's acknowledgement completed last before the step's end, checking
// it was sent more than the lock after the poll before it.
func pausedAcks(t *testing.T, ops []history.Op) []history.ShareAck {
	t.Helper()
	var out []history.ShareAck
	for i, op := range ops {
		if op.Process != history.Nemesis || op.F != history.EndVerb(history.NemesisPauseShareConsumer) || op.Error != "" {
			continue
		}
		var v history.NemesisValue
		json.Unmarshal(op.Raw, &v)
		if len(v.Processes) != 1 {
			t.Fatalf("pause-share-consumer ended with processes %v", v.Processes)
		}
		p := history.Process(v.Processes[0])
		ai := -1
		for j := i - 1; j >= 0 && ai < 0; j-- {
			if o := &ops[j]; o.Process == p && o.F == history.FShareAck && o.Type == history.OK {
				ai = j
			}
		}
		if ai < 0 {
			t.Fatalf("process %v: no acknowledgement before its pause ended", p)
		}
		ack := &ops[ai]
		var poll, sent int64 = -1, -1
		for j := ai - 1; j >= 0 && poll < 0; j-- {
			o := &ops[j]
			switch {
			case o.Process == p && o.F == history.FShareAck && o.Type == history.Invoke && sent < 0:
				sent = o.Time
			case o.Process == p && o.F == history.FShareFetch && o.Type == history.OK:
				poll = o.Time
			}
		}
		if sent-poll < 15e9 {
			t.Fatalf("process %v acknowledged %v after its poll, not past the 15 s lock", p, time.Duration(sent-poll))
		}
		var a history.ShareAck
		if err := history.ParseShare(ack, &a); err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		t.Fatal("no pause-share-consumer step completed")
	}
	return out
}
