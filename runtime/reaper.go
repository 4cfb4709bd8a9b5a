package runtime

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// A reaper is a small child process whose only job is to clean up after its
// parent, the harness, if the parent dies without doing so itself (SIGKILL,
// an out-of-memory kill, a crash): testcontainers' Ryuk does this for
// containers, and its image cannot be pulled here. The parent holds the write
// end of a pipe that is the reaper's standard input. It writes releaseLine
// once it has cleaned up itself; the reaper then exits without acting. When
// the pipe closes without it, whatever the cause, the parent is gone and the
// reaper runs the clean-up it was started for.
//
// The reaper is this very executable started again (os.Executable) with
// reaperEnv naming the kind of clean-up; the package that knows how to do it
// calls ServeReaper from its init, so every binary that links a runtime
// (gregor and the test binaries alike) can serve as its own reaper.
const reaperEnv = "GREGOR_REAPER"

// reaperJobEnv carries the job (a runtime-defined string: a run id, a
// directory) to the reaper.
const reaperJobEnv = "GREGOR_REAPER_JOB"

// releaseLine tells the reaper its parent cleaned up.
const releaseLine = "release"

// ReapTimeout bounds one reaper's clean-up, so that a reaper never outlives
// its parent by more than this, whatever the engine does.
const ReapTimeout = 2 * time.Minute

// ReapFunc does a runtime's clean-up for one job.
type ReapFunc func(ctx context.Context, job string) error

// ServeReaper turns this process into a reaper when it was started as one
// for kind, and never returns then; otherwise it returns at once. Call it
// from the init of the package that registers kind.
func ServeReaper(kind string, reap ReapFunc) {
	if os.Getenv(reaperEnv) != kind {
		return
	}
	os.Exit(serveReaper(os.Stdin, os.Getenv(reaperJobEnv), reap))
}

// serveReaper waits for the parent's word or its death and acts on it; the
// exit code says what happened (0 released or reaped, 1 clean-up failed).
func serveReaper(in io.Reader, job string, reap ReapFunc) int {
	// A terminal's Ctrl-C goes to the foreground process group; the reaper
	// has its own, and must in any case outlive the parent's clean-up.
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if sc.Text() == releaseLine {
			return 0
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), ReapTimeout)
	defer cancel()
	if err := reap(ctx, job); err != nil {
		fmt.Fprintf(os.Stderr, "gregor reaper: %v\n", err)
		return 1
	}
	return 0
}

// Reaper is the parent's handle on a started reaper.
type Reaper struct {
	mu   sync.Mutex
	pipe *os.File // nil once released
	cmd  *exec.Cmd
	done chan struct{}
}

// StartReaper starts a reaper of kind for job. The reaper runs in its own
// process group (a signal to the harness's group does not reach it) with no
// output: it must not hold a test runner's output pipe open. Set
// GREGOR_REAPER_DEBUG=1 to let reapers write to this process's stderr.
func StartReaper(kind, job string) (*Reaper, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start reaper: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start reaper: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), reaperEnv+"="+kind, reaperJobEnv+"="+job)
	cmd.Stdin = r
	if os.Getenv("GREGOR_REAPER_DEBUG") != "" {
		cmd.Stderr = os.Stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("start reaper: %w", err)
	}
	r.Close() // the child has its own copy; ours would keep the pipe open
	rp := &Reaper{pipe: w, cmd: cmd, done: make(chan struct{})}
	live.Lock()
	live.pids[cmd.Process.Pid] = true
	live.Unlock()
	go func() {
		cmd.Wait()
		live.Lock()
		delete(live.pids, cmd.Process.Pid)
		live.Unlock()
		close(rp.done)
	}()
	return rp, nil
}

// live is the reapers this process started that have not exited.
var live = struct {
	sync.Mutex
	pids map[int]bool
}{pids: map[int]bool{}}

// ReaperChildren lists the reapers this process started that still run: a
// runtime that released every reaper it started has none (tests check it).
func ReaperChildren() []int {
	live.Lock()
	defer live.Unlock()
	out := make([]int, 0, len(live.pids))
	for pid := range live.pids {
		out = append(out, pid)
	}
	return out
}

// Release tells the reaper that the parent cleaned up, and waits (bounded by
// ctx) for it to exit. Releasing twice is harmless.
func (rp *Reaper) Release(ctx context.Context) error {
	if rp == nil {
		return nil
	}
	rp.mu.Lock()
	w := rp.pipe
	rp.pipe = nil
	rp.mu.Unlock()
	if w == nil {
		return nil
	}
	_, err := io.WriteString(w, releaseLine+"\n")
	w.Close()
	select {
	case <-rp.done:
	case <-ctx.Done():
		return errors.Join(err, fmt.Errorf("reaper %d did not exit: %w", rp.cmd.Process.Pid, ctx.Err()))
	}
	return err
}

// Pid is the reaper's process id (tests watch it).
func (rp *Reaper) Pid() int { return rp.cmd.Process.Pid }
