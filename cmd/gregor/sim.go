package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"gregor/checker"
	"gregor/cluster"
	"gregor/cluster/faultpoint"
	"gregor/harness"
	"gregor/history"
	"gregor/runtime"
	"gregor/runtime/sim"
)

// --runtime sim (DESIGN.md section 7, simulation): `gregor run` validates
// the run, then execs bin/gregor-sim (a test binary: testing/synctest
// needs a *testing.T), which runs this same command inside one bubble on
// virtual time, against runtime/sim. The environment carries the run:
const (
	simArgsEnv    = "GREGOR_SIM_ARGS"    // JSON: the gregor arguments ("run", flags)
	simStartedEnv = "GREGOR_SIM_STARTED" // RFC 3339: the wall-clock time naming the run directory
	simResultEnv  = "GREGOR_SIM_RESULT"  // a file the child writes its simResult to
)

// simChild is set inside gregor-sim (sim_test.go): this process is the
// bubble's, and `gregor run` runs on the sim runtime there.
var simChild *simEnv

type simEnv struct {
	rt      runtime.Runtime
	started time.Time
	result  string
	// virtual is the bubble's clock when the child began (2000-01-01).
	virtual time.Time
}

// stamp names a run directory made in the child: the parent's start plus
// the simulated time since, so that each of several runs (gregor shrink's
// replays) has its own and they sort as they ran.
func (e *simEnv) stamp() time.Time { return e.started.Add(time.Since(e.virtual)) }

// simResult is what one simulated run hands its parent.
type simResult struct {
	Dir     string           `json:"dir"`
	Checked bool             `json:"checked"`
	Valid   checker.Validity `json:"valid"`
	Counts  map[string]int   `json:"counts"`
	Allowed []string         `json:"allowed,omitempty"`
}

// simRuntime is the runtime inside gregor-sim: gregor broker's own flag
// parser builds each node's configuration.
func simRuntime() sim.Runtime {
	return sim.Runtime{Config: func(args []string) (cluster.Config, error) {
		cmd := &cobra.Command{}
		var f brokerFlags
		f.register(cmd)
		if err := cmd.Flags().Parse(args); err != nil {
			return cluster.Config{}, err
		}
		return f.config()
	}}
}

// writeSimResult is the child's last word to its parent.
func (e *simEnv) write(rep *harness.Report) {
	if e == nil || e.result == "" || rep == nil {
		return
	}
	r := simResult{Dir: rep.Dir, Checked: rep.Checked, Valid: rep.Result.Valid, Counts: rep.Result.Counts}
	for a := range rep.Result.Allowed {
		r.Allowed = append(r.Allowed, a)
	}
	b, _ := json.Marshal(r)
	os.WriteFile(e.result, b, 0o644)
}

// simBinary is bin/gregor-sim beside this gregor (or $GREGOR_SIM_BINARY).
func simBinary() (string, error) {
	if p := os.Getenv("GREGOR_SIM_BINARY"); p != "" {
		return p, nil
	}
	self, err := selfBinary()
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.Dir(self), "gregor-sim")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("--runtime sim needs %s (the simulator, a test binary): build it with `make build`", p)
	}
	return p, nil
}

// simArgs are the run's flags as given, for the child, with the seed
// this process drew.
func simArgs(fl *pflag.FlagSet, seed int64) []string {
	return append(simCommandArgs([]string{"run"}, fl, "repeat", "seed"), "--seed="+strconv.FormatInt(seed, 10))
}

// simCommandArgs are a command's words and the flags given to it, less
// skip, for the child to run the same command.
func simCommandArgs(words []string, fl *pflag.FlagSet, skip ...string) []string {
	args := append([]string(nil), words...)
	fl.Visit(func(f *pflag.Flag) {
		if slices.Contains(skip, f.Name) {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				args = append(args, "--"+f.Name+"="+v)
			}
			if len(sv.GetSlice()) == 0 {
				args = append(args, "--"+f.Name+"=")
			}
			return
		}
		args = append(args, "--"+f.Name+"="+f.Value.String())
	})
	return args
}

// shrinkSim is `gregor shrink` of a sim run in the parent: the whole
// search runs in gregor-sim, each replay a run on the sim runtime in the
// one bubble (one after the other, each on its own in-memory cluster), so
// --budget bounds simulated time there. Its output and exit status are
// the child's; a signal ends the search (exit 3) as elsewhere.
func shrinkSim(cmd *cobra.Command, dir string) error {
	bin, err := simBinary()
	if err != nil {
		return &exitError{checkBadInput, err}
	}
	ctx, stop := interruptContext(cmd.Context(), cmd.ErrOrStderr())
	defer stop()
	enc, _ := json.Marshal(append(simCommandArgs([]string{"shrink", dir}, cmd.Flags(), "runtime"), "--runtime=sim"))
	_, code, err := simOnce(ctx, bin, string(enc), cmd.OutOrStdout(), cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return &exitError{checkUnknown, errors.New("shrink interrupted: nothing stored")}
	}
	if code != 0 {
		return &exitError{code: code} // the child said why
	}
	return nil
}

// runSim is `gregor run --runtime sim` in the parent: --repeat times the
// child, then (repeating) how often each anomaly recurred.
func runSim(cmd *cobra.Command, cfg *harness.Config, repeat int) error {
	for _, a := range cfg.PointActions {
		if !slices.Contains(sim.Runtime{}.PointActions(), faultpoint.Action(a)) {
			return &exitError{checkBadInput, fmt.Errorf("--fault-point-actions %s: %s", a, sim.PointActionRefusal)}
		}
	}
	bin, err := simBinary()
	if err != nil {
		return &exitError{checkBadInput, err}
	}
	// As every run: the first signal ends the run (the child's bubble
	// tears down, exit 3), a second exits at once (130, 143), killing
	// the child first.
	ctx, stop := interruptContext(cmd.Context(), cmd.ErrOrStderr())
	defer stop()
	args := simArgs(cmd.Flags(), cfg.Seed)
	enc, _ := json.Marshal(args)
	var results []simResult
	code := 0
	for i := 0; i < repeat; i++ {
		if repeat > 1 {
			fmt.Fprintf(cmd.ErrOrStderr(), "gregor run: sim repetition %d of %d (seed %d)\n", i+1, repeat, cfg.Seed)
		}
		res, c, err := simOnce(ctx, bin, string(enc), cmd.OutOrStdout(), cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		code = max(code, c)
		if ctx.Err() != nil {
			return &exitError{checkUnknown, harness.ErrInterrupted}
		}
		if res != nil {
			results = append(results, *res)
		}
	}
	if repeat > 1 {
		recurrence(cmd.OutOrStdout(), cfg.Seed, repeat, results)
	}
	if code != 0 {
		return &exitError{code: code} // the child said why
	}
	return nil
}

// simOnce runs gregor-sim once; cancelling ctx sends it SIGTERM (it ends
// its bubble, whose goroutines must all end), then SIGKILL 10 s later.
func simOnce(ctx context.Context, bin, args string, out, errOut io.Writer) (*simResult, int, error) {
	f, err := os.CreateTemp("", "gregor-sim-result-*.json")
	if err != nil {
		return nil, 0, err
	}
	f.Close()
	defer os.Remove(f.Name())
	c := exec.CommandContext(ctx, bin, "-test.run=^TestSim$", "-test.timeout=0")
	c.Env = append(os.Environ(), simArgsEnv+"="+args, simStartedEnv+"="+time.Now().UTC().Format(time.RFC3339Nano),
		simResultEnv+"="+f.Name())
	c.Stdout, c.Stderr = out, errOut
	c.Cancel = func() error { return c.Process.Signal(syscall.SIGTERM) }
	c.WaitDelay = 10 * time.Second
	// A parent that dies (SIGKILL included) takes its simulation with it.
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := c.Start(); err != nil {
		return nil, 0, fmt.Errorf("gregor-sim: %w", err)
	}
	simChildren.add(c.Process)
	err = c.Wait()
	simChildren.remove(c.Process)
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
		if code < 0 {
			code = checkUnknown
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ctx.Err() == nil {
				// gregor signals its child only once ctx ends: this
				// death came from outside, and the exit 3 alone would not
				// say so (a matrix shows the cell crashed).
				fmt.Fprintf(errOut, "gregor: gregor-sim (pid %d) died of signal %d (%v), sent by neither gregor nor its run "+
					"(the kernel's OOM killer? a kill or pkill?): the answer is unknown; what it wrote of the history is on disk for gregor check\n",
					c.Process.Pid, int(ws.Signal()), ws.Signal())
			}
		}
	} else if err != nil {
		return nil, 0, fmt.Errorf("gregor-sim: %w", err)
	}
	b, err := os.ReadFile(f.Name())
	if err != nil || len(b) == 0 {
		return nil, code, nil
	}
	var r simResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, code, nil
	}
	return &r, code, nil
}

// simChildren are the gregor-sim processes running: a second signal
// (interruptContext) kills them before gregor exits at once, so that
// nothing of the run outlives it.
var simChildren = procSet{procs: map[*os.Process]bool{}}

type procSet struct {
	mu    sync.Mutex
	procs map[*os.Process]bool
}

func (s *procSet) add(p *os.Process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.procs[p] = true
}

func (s *procSet) remove(p *os.Process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.procs, p)
}

// kill SIGKILLs every process of the set and waits for none: the process
// exits next.
func (s *procSet) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.procs {
		p.Kill()
	}
}

// recurrence prints how often each anomaly recurred over the repetitions
// of one seed: the schedule is the seed's, the goroutine interleavings are
// not (a bubble's scheduling is not deterministic).
func recurrence(w io.Writer, seed int64, repeat int, rs []simResult) {
	fmt.Fprintf(w, "seed %d, %d repetitions on --runtime sim (%d checked):\n", seed, repeat, len(rs))
	valid := map[checker.Validity]int{}
	for _, r := range rs {
		valid[r.Valid]++
	}
	for _, v := range []checker.Validity{checker.ValidTrue, checker.ValidFalse, checker.ValidUnknown} {
		if n := valid[v]; n > 0 {
			fmt.Fprintf(w, "  valid %-8s %d of %d\n", v.String()+":", n, repeat)
		}
	}
	allowed := map[string]bool{}
	for _, r := range rs {
		for _, a := range r.Allowed {
			allowed[a] = true
		}
	}
	for _, a := range checker.AnomalyNames {
		runs, total := 0, 0
		for _, r := range rs {
			if n := r.Counts[a]; n > 0 {
				runs++
				total += n
			}
		}
		if runs > 0 {
			kind := "forbidden"
			if allowed[a] {
				kind = "allowed"
			}
			fmt.Fprintf(w, "  %-20s in %d of %d runs (%d in all), %s\n", a, runs, repeat, total, kind)
		}
	}
	for _, r := range rs {
		fmt.Fprintf(w, "  results: %s\n", history.RunDir(r.Dir).Results())
	}
}
