package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"gregor/history"
	"gregor/internal/atomicfile"
	"gregor/runtime"
)

// StoreError is a store that cannot be written: a read-only directory, a
// full disk. The run stops (a history that lost lines must not be checked:
// it would show records as lost); what was already written stays whole, but
// for at most one torn last line (history.ReadRun drops it). gregor run
// exits 4 on it.
type StoreError struct {
	Path string
	Err  error
}

func (e *StoreError) Error() string {
	return fmt.Sprintf("store: cannot write %s: %v (free space on its disk, or give --store a writable directory)", e.Path, e.Err)
}

func (e *StoreError) Unwrap() error { return e.Err }

// BootError: the cluster did not come up (a runtime's Start failed, its
// readiness timed out), so nothing was tested: not a finding about the
// cluster's safety. gregor run exits 5 on it, and a matrix boots such a cell
// again (matrix.bootAttempts) before calling it crashed: on a machine
// loaded far past its cores a boot can outlast its readiness bound.
type BootError struct{ Err error }

func (e *BootError) Error() string { return "boot: " + e.Err.Error() }

func (e *BootError) Unwrap() error { return e.Err }

// storeErr wraps err, when not nil, as a StoreError on path.
func storeErr(path string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*StoreError](err); ok {
		return err
	}
	return &StoreError{Path: path, Err: err}
}

// writeFileAtomic replaces path whole (internal/atomicfile), so that a full
// disk or a crash leaves the old file (or none), never half a new one.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	return storeErr(path, atomicfile.Write(path, 0o644, write))
}

// runDir is one run's directory (history.RunDir names its files) and its
// open history.
type runDir struct {
	path history.RunDir
	file *os.File
	hist *history.Writer
}

// openRunDir creates <store>/<test>/<timestamp>, writes test.json, opens
// history.jsonl and points latest at it, so a crash at any later point
// leaves a readable run behind.
func openRunDir(store, test string, cfg *history.Config, now time.Time) (*runDir, error) {
	base := filepath.Join(store, test)
	stamp := now.UTC().Format("20060102T150405.000Z")
	dir := filepath.Join(base, stamp)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, storeErr(dir, err)
	}
	rd := history.RunDir(dir)
	if err := history.WriteConfig(rd.Config(), cfg); err != nil {
		return nil, storeErr(rd.Config(), err)
	}
	f, err := os.OpenFile(rd.History(), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, storeErr(rd.History(), err)
	}
	pointLatest(base, stamp)
	return &runDir{path: rd, file: f, hist: history.NewWriter(f, history.DefaultFlushInterval)}, nil
}

// pointLatest points <base>/latest at the run directory <base>/<stamp>,
// atomically: a new symlink renamed over the old one. Best effort: a
// filesystem without symlinks has none (history.LatestRun copes).
func pointLatest(base, stamp string) {
	tmp := filepath.Join(base, fmt.Sprintf(".latest-%d", os.Getpid()))
	os.Remove(tmp)
	if err := os.Symlink(stamp, tmp); err == nil {
		os.Rename(tmp, filepath.Join(base, history.LatestLink))
	}
}

// close flushes and syncs the history.
func (d *runDir) close() error {
	err := d.hist.Close()
	if serr := d.file.Sync(); err == nil {
		err = serr
	}
	if cerr := d.file.Close(); err == nil {
		err = cerr
	}
	return storeErr(d.path.History(), err)
}

// MaxLogBytes bounds one node's saved log.
const MaxLogBytes = 64 << 20

// saveLogs copies every node's output to logs/node-N.log.
func saveLogs(ctx context.Context, c runtime.Cluster, dir history.RunDir) error {
	if err := os.MkdirAll(dir.Logs(), 0o755); err != nil {
		return err
	}
	var first error
	for _, n := range c.Nodes() {
		if err := saveLog(ctx, c, n.ID, dir.NodeLog(n.ID)); err != nil && first == nil {
			first = fmt.Errorf("logs of node %d: %w", n.ID, err)
		}
	}
	return first
}

func saveLog(ctx context.Context, c runtime.Cluster, id int32, path string) error {
	rc, err := c.Logs(ctx, id)
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, io.LimitReader(rc, MaxLogBytes))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// stamp is the time that names the run directory: Test.Started when set.
func (t *Test) stamp(clock time.Time) time.Time {
	if !t.Started.IsZero() {
		return t.Started
	}
	return clock
}
