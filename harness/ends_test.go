package harness

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gregor/checker"
	"gregor/runtime/process"
)

// The SIGTERM-per-phase tests (issue 26): `gregor run` as a subprocess,
// SIGTERM sent when its progress lines (stderr, "gregor run: <phase> ...")
// show the phase under test, and the run must end long before that
// phase's own bound (several minutes: it ends within a quarter of it),
// with exit 3 (interrupted, no verdict), a history `gregor check` reads
// (exit 0, 1 or 3, never 2) and no broker process left. Nothing here
// times a phase: each signal follows a line the run printed.

// longBound is every bound of the phase under test: an end within
// endWithin of the signal is the run honouring it, not the bound passing.
const (
	longBound = 4 * time.Minute
	endWithin = longBound / 4
)

// progressLine is one progress line: its phase.
var progressLine = regexp.MustCompile(`^gregor run: (\S+)\s+[0-9.]+s  ops`)

// phaseSeen counts the progress lines of each phase so far.
type phaseSeen map[string]int

// ended is what a signalled run left.
type ended struct {
	code   int
	after  time.Duration // from the signal to the exit
	stderr string
	dir    string // the run directory
}

// signalRun runs gregor with args and env, sends SIGTERM once ready says
// so for a line of its stderr (nil: never), and waits at most limit
// after the signal (the process is killed past it, and the test fails).
//
// With twice, a second SIGTERM follows the run's word of the first
// ("stopping").
func signalRun(t *testing.T, env, args []string, ready func(line string, seen phaseSeen) bool, limit time.Duration, twice ...bool) ended {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		lines  []string
		sentAt time.Time
	)
	signalled := make(chan struct{})
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		seen := phaseSeen{}
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			lines = append(lines, line)
			mu.Unlock()
			if m := progressLine.FindStringSubmatch(line); m != nil {
				seen[m[1]]++
			}
			if ready != nil && sentAt.IsZero() && ready(line, seen) {
				sentAt = time.Now()
				t.Logf("SIGTERM after %q", line)
				cmd.Process.Signal(syscall.SIGTERM)
				close(signalled)
			}
			if len(twice) > 0 && twice[0] && strings.Contains(line, "stopping (a second signal") {
				t.Logf("second SIGTERM after %q", line)
				cmd.Process.Signal(syscall.SIGTERM)
			}
		}
	}()
	waited := make(chan error, 1)
	go func() { <-scanned; waited <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-waited:
	case <-signalled:
		select {
		case werr = <-waited:
		case <-time.After(limit):
			cmd.Process.Kill()
			<-waited
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("gregor run did not end within %v of SIGTERM:\n%s", limit, strings.Join(lines, "\n"))
		}
	}
	e := ended{code: 0}
	if !sentAt.IsZero() {
		e.after = time.Since(sentAt)
	}
	if ee, ok := errors.AsType[*exec.ExitError](werr); ok {
		e.code = ee.ExitCode()
	} else if werr != nil {
		t.Fatal(werr)
	}
	mu.Lock()
	e.stderr = strings.Join(lines, "\n") + "\n" + stdout.String()
	mu.Unlock()
	for _, l := range lines {
		if d, ok := strings.CutPrefix(l, "gregor run: stored in "); ok {
			e.dir = d
		}
	}
	return e
}

// phaseLine: the first progress line of phase.
func phaseLine(phase string) func(string, phaseSeen) bool {
	return phaseLines(phase, 1)
}

// phaseLines: the n-th progress line of phase (a second one is the
// ticker's: the phase lasted).
func phaseLines(phase string, n int) func(string, phaseSeen) bool {
	return func(_ string, seen phaseSeen) bool { return seen[phase] >= n }
}

// assertInterrupted: the run ended by the signal, long before the
// phase's bound, its history readable by gregor check, no broker left
// under tmp (none: a foreign cluster, which outlives the run).
func assertInterrupted(t *testing.T, e ended, tmp string) {
	t.Helper()
	t.Logf("ended %v after SIGTERM, exit %d", e.after.Round(time.Millisecond), e.code)
	if e.code != 3 {
		t.Fatalf("exit %d, want 3 (interrupted):\n%s", e.code, e.stderr)
	}
	if !strings.Contains(e.stderr, "interrupted") {
		t.Fatalf("no word of the interruption:\n%s", e.stderr)
	}
	assertCheckable(t, e)
	if tmp != "" {
		assertNoBrokers(t, tmp)
	}
}

// assertCheckable: gregor check reads the stored history (0, 1 or 3).
func assertCheckable(t *testing.T, e ended) {
	t.Helper()
	if e.dir == "" {
		t.Fatalf("no run directory named:\n%s", e.stderr)
	}
	out, err := exec.Command(binary, "check", filepath.Join(e.dir, "history.jsonl")).CombinedOutput()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != 0 && code != 1 && code != 3 {
		t.Fatalf("gregor check of the interrupted run: exit %d:\n%s", code, out)
	}
}

// assertNoBrokers: no process mentions tmp (the brokers' directories are
// under it) once the run ended; the Pdeathsig and reaper children may
// take a moment, so the check waits for them to go, bounded.
func assertNoBrokers(t *testing.T, tmp string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := processesMentioning(t, tmp)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left after the run: %v", pids)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	pids, err := process.ProcessesMentioning(s)
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

// processRun is gregor run on the process runtime with every bound long
// unless args say otherwise; the brokers live under the TMPDIR it returns.
func processRun(t *testing.T, name string, args ...string) (env, all []string, tmp string) {
	tmp = t.TempDir()
	store := t.TempDir()
	all = append([]string{"run", "--runtime", "process", "--store", store, "--name", name, "--seed", "7",
		"--nodes", "3", "--rate", "100",
		"--time-limit", longBound.String(), "--recovery-timeout", longBound.String(),
		"--final-read-timeout", longBound.String(), "--warm-up", longBound.String()}, args...)
	return []string{"TMPDIR=" + tmp}, all, tmp
}

func TestEndsInSetup(t *testing.T) {
	t.Parallel()
	env, args, tmp := processRun(t, "ends-setup")
	e := signalRun(t, env, args, phaseLine("setup"), endWithin)
	assertNoBrokers(t, tmp)
	// Cut short in the boot, before the history has a line: exit 3 and a
	// directory gregor check reads (an empty history is unknown).
	t.Logf("ended %v after SIGTERM, exit %d", e.after.Round(time.Millisecond), e.code)
	if e.code != 3 {
		t.Fatalf("exit %d, want 3:\n%s", e.code, e.stderr)
	}
	assertCheckable(t, e)
}

func TestEndsInWarmUp(t *testing.T) {
	t.Parallel()
	env, args, tmp := processRun(t, "ends-warmup")
	e := signalRun(t, env, args, phaseLine("warm-up"), endWithin)
	assertInterrupted(t, e, tmp)
}

func TestEndsInFaults(t *testing.T) {
	t.Parallel()
	// A kill in force when the signal comes: the faults phase's time limit
	// is long, so only the signal ends it.
	env, args, tmp := processRun(t, "ends-faults", "--warm-up", "1s", "--nemesis", "kill",
		"--nemesis-interval", "1s", "--nemesis-duration", longBound.String())
	e := signalRun(t, env, args, func(line string, seen phaseSeen) bool {
		return seen["faults"] > 0 && strings.Contains(line, "(active 1)")
	}, endWithin)
	assertInterrupted(t, e, tmp)
}

func TestEndsInHeal(t *testing.T) {
	t.Parallel()
	// A kill still in force when the short time limit ends: the heal
	// restarts the broker when the signal comes.
	env, args, tmp := processRun(t, "ends-heal", "--warm-up", "1s", "--time-limit", "6s", "--nemesis", "kill",
		"--nemesis-interval", "1s", "--nemesis-duration", longBound.String())
	e := signalRun(t, env, args, phaseLine("heal"), endWithin)
	assertInterrupted(t, e, tmp)
}

func TestEndsInRecovery(t *testing.T) {
	t.Parallel()
	// After a pause: the producers' sends to the paused broker are in
	// flight when recovery stops the workload.
	env, args, tmp := processRun(t, "ends-recovery", "--warm-up", "1s", "--time-limit", "6s", "--nemesis", "pause",
		"--nemesis-interval", "1s", "--nemesis-duration", longBound.String(), "--delivery-timeout", "2m")
	e := signalRun(t, env, args, phaseLine("recovery"), endWithin)
	assertInterrupted(t, e, tmp)
}

func TestEndsInFinalRead(t *testing.T) {
	t.Parallel()
	env, args, tmp := processRun(t, "ends-final", "--warm-up", "1s", "--time-limit", "3s", "--rate", "0")
	e := signalRun(t, env, args, phaseLine("final-read"), endWithin)
	assertInterrupted(t, e, tmp)
}

func TestEndsInCheck(t *testing.T) {
	t.Parallel()
	// The check of a small history may finish before the signal lands:
	// then the run's own verdict (0, 1 or 3); else exit 3. Either way the
	// history is complete and gregor check reads it.
	env, args, tmp := processRun(t, "ends-check", "--warm-up", "1s", "--time-limit", "2s")
	e := signalRun(t, env, args, phaseLine("check"), endWithin)
	t.Logf("ended %v after SIGTERM, exit %d", e.after.Round(time.Millisecond), e.code)
	if e.code != 0 && e.code != 1 && e.code != 3 {
		t.Fatalf("exit %d:\n%s", e.code, e.stderr)
	}
	assertCheckable(t, e)
	assertNoBrokers(t, tmp)
}

// kfakeProc is a foreign Kafka-protocol cluster (franz-go's kfake, 3 brokers
// in one process: `gregor kfake`) for the external runtime, and its pid
// file for the fault file's commands.
type kfakeProc struct {
	dir, pidFile, bootstrap string
	cmd                     *exec.Cmd
}

func startKfake(t *testing.T) *kfakeProc {
	t.Helper()
	k := &kfakeProc{dir: t.TempDir()}
	k.pidFile = filepath.Join(k.dir, "pid")
	var ports, addrs []string
	var ls []net.Listener
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		p := l.Addr().(*net.TCPAddr).Port
		ports = append(ports, fmt.Sprint(p))
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", p))
	}
	for _, l := range ls {
		l.Close()
	}
	k.bootstrap = strings.Join(addrs, ",")
	addrFile := filepath.Join(k.dir, "addrs")
	log, err := os.Create(filepath.Join(k.dir, "kfake.log"))
	if err != nil {
		t.Fatal(err)
	}
	k.cmd = exec.Command(binary, "kfake", "--brokers", "3", "--ports", strings.Join(ports, ","),
		"--data", filepath.Join(k.dir, "data"), "--addr-file", addrFile)
	k.cmd.Stdout, k.cmd.Stderr = log, log
	if err := k.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { k.cmd.Wait(); log.Close(); close(exited) }()
	t.Cleanup(func() {
		k.cmd.Process.Signal(syscall.SIGCONT)
		k.cmd.Process.Kill()
		<-exited
	})
	if err := os.WriteFile(k.pidFile, []byte(fmt.Sprint(k.cmd.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			return k
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(filepath.Join(k.dir, "kfake.log"))
			t.Fatalf("kfake exited:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("kfake did not listen within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// faults writes a fault file of kill and start commands (sh, the pid file
// as $P) and returns its path.
func (k *kfakeProc) faults(t *testing.T, kill, start string) string {
	t.Helper()
	path := filepath.Join(k.dir, "faults.yaml")
	q := func(s string) string { return strings.ReplaceAll(s, "$P", k.pidFile) }
	y := fmt.Sprintf("timeout: 5m\ncommands:\n  kill: %q\n  start: %q\n", q(kill), q(start))
	if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// externalRun is gregor run on the external runtime against k.
func externalRun(t *testing.T, k *kfakeProc, faults string, args ...string) []string {
	store := t.TempDir()
	return append([]string{"run", "--runtime", "external", "--bootstrap", k.bootstrap, "--faults", faults,
		"--store", store, "--seed", "7", "--min-isr", "1", "--unclean=false", "--rate", "100",
		"--warm-up", "1s", "--nemesis", "kill", "--nemesis-interval", "1s", "--nemesis-duration", longBound.String(),
		"--recovery-timeout", longBound.String(), "--final-read-timeout", longBound.String()}, args...)
}

func TestEndsInHealExternal(t *testing.T) {
	t.Parallel()
	k := startKfake(t)
	// The kill does nothing; the start fails at once the first time (the
	// undo of the step in force when the time limit ends: the node stays
	// stopped) and then sleeps (as a slow restart script would): the heal,
	// which starts every node left stopped, lasts, and the signal must end
	// the command's process group too.
	mark := filepath.Join(k.dir, "undone")
	faults := k.faults(t, "true", fmt.Sprintf("if [ -e %s ]; then sleep 301; fi; touch %s; exit 1", mark, mark))
	args := externalRun(t, k, faults, "--time-limit", "6s")
	e := signalRun(t, nil, args, phaseLines("heal", 2), endWithin)
	assertInterrupted(t, e, "")
	if pids := processesMentioning(t, "sleep 301"); len(pids) > 0 {
		t.Fatalf("the heal's command outlived the run: %v", pids)
	}
}

// A signal while a step's undo runs in the faults phase: the undo
// outlives the time limit's deadline (for at most the runner's undo
// timeout, 60 s) but not the run's end; the run ends well within a
// quarter of that bound, its command's process group killed.
func TestEndsInFaultsExternal(t *testing.T) {
	t.Parallel()
	k := startKfake(t)
	mark := filepath.Join(k.dir, "undoing")
	faults := k.faults(t, "true", fmt.Sprintf("touch %s; sleep 304", mark))
	args := externalRun(t, k, faults, "--time-limit", longBound.String(), "--nemesis-duration", "1s")
	e := signalRun(t, nil, args, func(string, phaseSeen) bool {
		_, err := os.Stat(mark)
		return err == nil
	}, endWithin)
	assertInterrupted(t, e, "")
	if undo := 60 * time.Second; e.after > undo/4 {
		t.Fatalf("ended %v after SIGTERM: the undo (bound %v) held it", e.after, undo)
	}
	if pids := processesMentioning(t, "sleep 304"); len(pids) > 0 {
		t.Fatalf("the undo's command outlived the run: %v", pids)
	}
}

func TestEndsInRecoveryExternal(t *testing.T) {
	t.Parallel()
	// The kill kills the one process of every broker and the start does
	// not restart it: recovery waits on a dead cluster (the issue's
	// case), with sends, polls, commits and transactions in flight to it.
	for _, wl := range []string{"queue", "group", "txn"} {
		t.Run(wl, func(t *testing.T) {
			t.Parallel()
			k := startKfake(t)
			faults := k.faults(t, "kill -9 $(cat $P) 2>/dev/null; true", "true")
			args := externalRun(t, k, faults, "--time-limit", "6s", "--workload", wl, "--partitions", "4")
			e := signalRun(t, nil, args, phaseLines("recovery", 2), endWithin)
			assertInterrupted(t, e, "")
		})
	}
}

// A final read whose bound passes on a dead cluster ends the run by
// itself with verdict unknown, naming what it still awaited: a check
// cannot tell the records it did not read from lost ones.
func TestFinalReadBoundUnknownExternal(t *testing.T) {
	t.Parallel()
	k := startKfake(t)
	faults := k.faults(t, "kill -9 $(cat $P) 2>/dev/null; true", "true")
	args := externalRun(t, k, faults, "--time-limit", "6s", "--recovery-timeout", "2s", "--final-read-timeout", "5s")
	e := signalRun(t, nil, args, nil, 0)
	t.Logf("exit %d", e.code)
	if e.code != 3 {
		t.Fatalf("exit %d, want 3 (unknown):\n%s", e.code, e.stderr)
	}
	for _, want := range []string{"recovery: not healthy within 2s", "final-read did not finish within 5s"} {
		if !strings.Contains(e.stderr, want) {
			t.Errorf("no %q:\n%s", want, e.stderr)
		}
	}
	b, err := os.ReadFile(filepath.Join(e.dir, AwaitedFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", b)
	out, err := exec.Command(binary, "check", filepath.Join(e.dir, "history.jsonl")).CombinedOutput()
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 3 {
		t.Fatalf("gregor check of a run whose final read passed its bound: %v (want exit 3):\n%s", err, out)
	}
}

// A second SIGTERM while the first one's cleanup goes on exits at once
// with 128+15; what the history holds is still readable (a line cut by
// the exit is the last one, which gregor check tolerates). The cleanup
// made long: a run cut short before its heal heals the foreign cluster on
// its way out, and the start command sleeps.
func TestSecondSignalExits(t *testing.T) {
	t.Parallel()
	k := startKfake(t)
	faults := k.faults(t, "true", "sleep 302")
	store := t.TempDir()
	args := externalRun(t, k, faults, "--time-limit", longBound.String(), "--store", store)
	e := signalRun(t, nil, args, func(line string, seen phaseSeen) bool {
		return seen["faults"] > 0 && strings.Contains(line, "(active 1)")
	}, endWithin, true)
	t.Logf("ended %v after the first signal, exit %d", e.after.Round(time.Millisecond), e.code)
	if e.code != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit %d, want %d:\n%s", e.code, 128+int(syscall.SIGTERM), e.stderr)
	}
	if !strings.Contains(e.stderr, "exiting now") {
		t.Fatalf("no word of the second signal:\n%s", e.stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(store, "queue", "2*"))
	if len(dirs) != 1 {
		t.Fatalf("run directories %v", dirs)
	}
	assertCheckable(t, ended{dir: dirs[0]})
	deadline := time.Now().Add(10 * time.Second)
	for len(processesMentioning(t, "sleep 302")) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the heal's command outlived the run: %v", processesMentioning(t, "sleep 302"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestApplyAwaited(t *testing.T) {
	read := Awaited{Phase: "final-read", Bound: "5s", What: "t/1 at 873 of 886", Decisive: true}
	rec := Awaited{Phase: "recovery", Bound: "1m0s", What: "t/0 has no leader"}
	for _, c := range []struct {
		name      string
		valid     checker.Validity
		forbidden []string
		aw        []Awaited
		want      checker.Validity
	}{
		{"a pass with the read cut short", checker.ValidTrue, nil, []Awaited{read}, checker.ValidUnknown},
		{"unseen only, read cut short", checker.ValidFalse, []string{checker.Unseen}, []Awaited{read}, checker.ValidUnknown},
		{"a lost write stays a finding", checker.ValidFalse, []string{checker.LostWrite, checker.Unseen}, []Awaited{read}, checker.ValidFalse},
		{"recovery alone decides nothing", checker.ValidTrue, nil, []Awaited{rec}, checker.ValidTrue},
	} {
		res := checker.Result{Valid: c.valid, Forbidden: map[string]string{}}
		for _, f := range c.forbidden {
			res.Forbidden[f] = "x"
		}
		applyAwaited(&res, c.aw)
		if res.Valid != c.want {
			t.Errorf("%s: %s, want %s", c.name, res.Valid, c.want)
		}
		if len(res.Warnings) != len(c.aw) {
			t.Errorf("%s: warnings %q", c.name, res.Warnings)
		}
		if c.want == checker.ValidUnknown && !strings.Contains(strings.Join(res.UnknownReasons, ";"), "t/1 at 873 of 886") {
			t.Errorf("%s: reasons %q do not say what was awaited", c.name, res.UnknownReasons)
		}
	}
}

// The docker runtime, in recovery: its sends were in flight to a paused
// container when recovery stops the workload. Serial, as the docker
// runtime's tests are (they share the image build).
func TestEndsInRecoveryDocker(t *testing.T) {
	needDocker(t)
	store := t.TempDir()
	const name = "ends-docker"
	args := []string{"run", "--runtime", "docker", "--store", store, "--name", name, "--seed", "7",
		"--nodes", "3", "--rate", "100", "--warm-up", "2s", "--time-limit", "8s", "--nemesis", "pause",
		"--nemesis-interval", "2s", "--nemesis-duration", longBound.String(), "--delivery-timeout", "2m",
		"--recovery-timeout", longBound.String(), "--final-read-timeout", longBound.String()}
	e := signalRun(t, []string{"TESTCONTAINERS_RYUK_DISABLED=true", "GREGOR_BINARY=" + binary}, args,
		phaseLine("recovery"), endWithin)
	assertInterrupted(t, e, "")
	if left := leftovers(t, name+"-7"); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}
