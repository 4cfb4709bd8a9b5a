package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"gregor/history"
	"gregor/runtime"
)

// Store layout, one directory per run:
//
//	<store>/<test>/<timestamp>/history.jsonl   written as it happens
//	<store>/<test>/<timestamp>/test.json       the configuration, seed included
//	<store>/<test>/<timestamp>/results.json    the checker's result
//	<store>/<test>/<timestamp>/logs/node-N.log every broker's output
//	<store>/<test>/latest -> <timestamp>
const (
	HistoryFile = "history.jsonl"
	ConfigFile  = "test.json"
	ResultsFile = "results.json"
	// ReportFile is the self-contained HTML report of the run.
	ReportFile = "report.html"
	LogsDir    = "logs"
	LatestLink = "latest"
)

// runDir is one run's directory and its open history.
type runDir struct {
	path string
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
		return nil, err
	}
	if err := history.WriteConfig(filepath.Join(dir, ConfigFile), cfg); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, HistoryFile), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	// Replace latest atomically: a new symlink renamed over the old one.
	tmp := filepath.Join(base, fmt.Sprintf(".latest-%d", os.Getpid()))
	os.Remove(tmp)
	if err := os.Symlink(stamp, tmp); err == nil {
		os.Rename(tmp, filepath.Join(base, LatestLink))
	}
	return &runDir{path: dir, file: f, hist: history.NewWriter(f, history.DefaultFlushInterval)}, nil
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
	return err
}

// MaxLogBytes bounds one node's saved log.
const MaxLogBytes = 64 << 20

// saveLogs copies every node's output to logs/node-N.log.
func saveLogs(ctx context.Context, c runtime.Cluster, dir string) error {
	ld := filepath.Join(dir, LogsDir)
	if err := os.MkdirAll(ld, 0o755); err != nil {
		return err
	}
	var first error
	for _, n := range c.Nodes() {
		if err := saveLog(ctx, c, n.ID, filepath.Join(ld, fmt.Sprintf("node-%d.log", n.ID))); err != nil && first == nil {
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
