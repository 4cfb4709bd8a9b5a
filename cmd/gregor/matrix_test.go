package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"gregor/runtime/process"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// gregorBinary builds the static gregor binary once per test process: a
// matrix runs every cell as a `gregor run` subprocess, and the test binary
// is not one.
func gregorBinary(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("GREGOR_BINARY"); b != "" {
		return b
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gregor-cmd-test-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "gregor")
		cmd := exec.Command("go", "build", "-o", builtBin, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = err
			builtBin = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("building gregor: %v\n%s", buildErr, builtBin)
	}
	return builtBin
}

// Shards of a real matrix, merged, give the same index (and results) as
// the unsharded run. The cells are fault-free, so every run's figures are
// the same whichever process ran it: any difference is the merge's.
func TestShardsMergeOnRealRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("boots clusters")
	}
	bin := gregorBinary(t)
	t.Setenv("GREGOR_BINARY", bin)
	dir := t.TempDir()
	spec := filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(spec, []byte(`name: shards
defaults: {rf: 1, nodes: 1, partitions: 2, time_limit: 2s, rate: 50, args: [--warm-up, 1s]}
configs:
  - {acks: "1", min_isr: 1}
  - {acks: all, min_isr: 1, idempotence: true}
nemeses:
  - {name: none, kinds: [none]}
seeds: [1]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(io.Discard)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("gregor %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
	}
	whole, s1, s2, merged := filepath.Join(dir, "whole"), filepath.Join(dir, "s1"), filepath.Join(dir, "s2"), filepath.Join(dir, "merged")
	run("matrix", "--config", spec, "--runtime", "process", "--out", whole)
	run("matrix", "--config", spec, "--runtime", "process", "--out", s1, "--shard", "1/2")
	run("matrix", "--config", spec, "--runtime", "process", "--out", s2, "--shard", "2/2")
	run("report", "merge", "--out", merged, "--title", "gregor matrix shards", filepath.Join(s1, "results.json"), filepath.Join(s2, "results.json"))
	// Runs are stored by cell id and start time: the times differ between
	// the two matrices, nothing else may.
	stamp := regexp.MustCompile(`/run/\d{8}T\d{6}\.\d{3}Z/`)
	for _, f := range []string{"index.html", "results.json"} {
		a := stamp.ReplaceAll(mustRead(t, filepath.Join(whole, f)), []byte("/run/TIME/"))
		b := stamp.ReplaceAll(mustRead(t, filepath.Join(merged, f)), []byte("/run/TIME/"))
		if !bytes.Equal(a, b) {
			t.Fatalf("merged %s differs from the unsharded run's:\n--- unsharded\n%s\n--- merged\n%s", f, a, b)
		}
	}
	if n := bytes.Count(mustRead(t, filepath.Join(whole, "results.json")), []byte(`"valid": "true"`)); n != 2 {
		t.Fatalf("%d valid cells of 2 in the unsharded run", n)
	}
	// Every run the merged index links to was copied beside it.
	links := regexp.MustCompile(`href="(runs/[^"]+)"`).FindAllSubmatch(mustRead(t, filepath.Join(merged, "index.html")), -1)
	if len(links) != 2 {
		t.Fatalf("%d run links in the merged index, want 2", len(links))
	}
	for _, l := range links {
		if _, err := os.Stat(filepath.Join(merged, string(l[1]))); err != nil {
			t.Fatalf("merged index links to a missing run: %v", err)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A matrix killed with SIGKILL part-way and run again with --resume runs only
// the cells that did not finish and writes the uninterrupted run's report
// (run timestamps aside). Its runs die with it: nothing is left writing into
// a cell.
func TestMatrixResumeAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("boots clusters")
	}
	bin := gregorBinary(t)
	t.Setenv("GREGOR_BINARY", bin)
	dir := t.TempDir()
	spec := filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(spec, []byte(`name: resume
defaults: {rf: 1, nodes: 1, partitions: 2, time_limit: 2s, rate: 50, args: [--warm-up, 1s]}
configs:
  - {acks: "1", min_isr: 1}
  - {acks: all, min_isr: 1, idempotence: true}
  - {acks: all, min_isr: 1, idempotence: false}
nemeses:
  - {name: none, kinds: [none]}
seeds: [1]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	whole, resumed := filepath.Join(dir, "whole"), filepath.Join(dir, "resumed")
	if out, err := runGregor(t, "matrix", "--config", spec, "--runtime", "process", "--out", whole); err != nil {
		t.Fatalf("uninterrupted matrix: %v\n%s", err, out)
	}

	kill := exec.Command(bin, "matrix", "--config", spec, "--runtime", "process", "--out", resumed)
	if err := kill.Start(); err != nil {
		t.Fatal(err)
	}
	defer kill.Process.Kill()
	records := func() []string {
		m, _ := filepath.Glob(filepath.Join(resumed, "runs", "*", "cell.json"))
		return m
	}
	deadline := time.Now().Add(3 * time.Minute)
	for len(records()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no cell finished within 3 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := kill.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	kill.Wait()
	done := records()
	if len(done) == 3 {
		t.Fatal("every cell finished before the kill: the test did not interrupt the matrix")
	}
	// The run in progress gets SIGTERM from its dead parent and its
	// brokers die with it: wait for nothing to mention the matrix's output.
	procsMentioning := func(s string) []string {
		pids, err := process.ProcessesMentioning(s)
		if err != nil {
			t.Fatal(err)
		}
		return pids
	}
	for time.Now().Before(deadline) && len(procsMentioning(resumed)) > 0 {
		time.Sleep(100 * time.Millisecond)
	}
	if p := procsMentioning(resumed); len(p) > 0 {
		t.Fatalf("processes %v still run for the killed matrix", p)
	}
	latest := func(record string) string {
		l, _ := os.Readlink(filepath.Join(filepath.Dir(record), "run", "latest"))
		return l
	}
	before := map[string]string{}
	for _, r := range done {
		before[r] = latest(r)
	}

	if out, err := runGregor(t, "matrix", "--config", spec, "--runtime", "process", "--out", resumed, "--resume"); err != nil {
		t.Fatalf("resumed matrix: %v\n%s", err, out)
	}
	for r, l := range before {
		if l == "" || latest(r) != l {
			t.Fatalf("%s ran again on --resume (latest %q, was %q)", filepath.Dir(r), latest(r), l)
		}
	}
	stamp := regexp.MustCompile(`/run/\d{8}T\d{6}\.\d{3}Z/`)
	for _, f := range []string{"index.html", "results.json"} {
		a := stamp.ReplaceAll(mustRead(t, filepath.Join(whole, f)), []byte("/run/TIME/"))
		b := stamp.ReplaceAll(mustRead(t, filepath.Join(resumed, f)), []byte("/run/TIME/"))
		if !bytes.Equal(a, b) {
			t.Fatalf("resumed %s differs from the uninterrupted run's:\n--- uninterrupted\n%s\n--- resumed\n%s", f, a, b)
		}
	}
}
