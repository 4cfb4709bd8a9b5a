package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gregor/runtime/docker"
)

// mountTmpfs mounts a tmpfs of the given options on a new directory and
// unmounts it when the test ends. Mounting needs root (CI and this project's
// machines run as root); elsewhere the test cannot make a full or read-only
// disk and says so.
func mountTmpfs(t *testing.T, opts string, flags uintptr) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", flags, opts); err != nil {
		t.Skipf("SKIPPING: cannot mount a tmpfs to make a full or read-only store (%v): run as root", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

func runGregor(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out strings.Builder
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// A store that cannot be written gets one error naming the path and exit 4;
// a disk that fills mid-run stops the run, unchecked, and what was written
// stays readable by gregor check (a torn last line at most).
func TestStoreCannotBeWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a cluster")
	}
	t.Setenv("GREGOR_BINARY", gregorBinary(t))
	base := []string{"run", "--runtime", "process", "--nodes", "1", "--rf", "1", "--partitions", "1", "--time-limit", "20s"}

	ro := mountTmpfs(t, "size=1m", syscall.MS_RDONLY)
	out, err := runGregor(t, append(base, "--store", filepath.Join(ro, "s"))...)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != storeFailed || !strings.Contains(err.Error(), ro) || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("read-only store: %v, want exit %d naming %s\n%s", err, storeFailed, ro, out)
	}

	full := mountTmpfs(t, "size=48k", 0)
	out, err = runGregor(t, append(base, "--store", full)...)
	if !errors.As(err, &ee) || ee.code != storeFailed || !strings.Contains(err.Error(), full) || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("full store: %v, want exit %d naming %s\n%s", err, storeFailed, full, out)
	}
	hist := filepath.Join(full, "queue", "latest", "history.jsonl")
	if st, err := os.Stat(hist); err != nil || st.Size() == 0 {
		t.Fatalf("history of the stopped run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(full, "queue", "latest", "results.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a run whose history lost lines was checked anyway (results.json: %v)", err)
	}
	root := newRoot()
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	root.SetArgs([]string{"check", hist})
	if err := root.Execute(); errors.As(err, &ee) && ee.code == checkBadInput {
		t.Fatalf("gregor check cannot read what the run wrote: %v", err)
	}
}

// The harness under its own fault: `gregor run` (docker runtime) killed with
// SIGKILL mid-test leaves a history `gregor check` reads, `gregor clean`
// leaves nothing of its cluster (its reaper may have been first), and the
// next `gregor run` on the same store works.
func TestRunSIGKILLStory(t *testing.T) {
	if testing.Short() {
		t.Skip("boots docker clusters")
	}
	bin := gregorBinary(t)
	t.Setenv("GREGOR_BINARY", bin)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := docker.New(docker.Options{}).Available(ctx); err != nil {
		t.Skipf("SKIPPING docker story: %v", err)
	}
	store := t.TempDir()
	const seed = 4242
	cluster := fmt.Sprintf("story-%d", seed%100000)
	run := exec.Command(bin, "run", "--runtime", "docker", "--nodes", "3", "--time-limit", "60s",
		"--nemesis", "kill", "--nemesis-interval", "2s", "--seed", strconv.Itoa(seed), "--name", "story", "--store", store)
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer run.Process.Kill()
	hist := filepath.Join(store, "story", "latest", "history.jsonl")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, _ := os.ReadFile(hist)
		if bytes.Count(b, []byte("\n")) >= 300 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run wrote no 300 history lines within 2 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := run.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	run.Wait()

	out, err := runGregor(t, "check", hist)
	var ee *exitError
	if errors.As(err, &ee) && ee.code == checkBadInput {
		t.Fatalf("gregor check cannot read the killed run's history: %v\n%s", err, out)
	}
	if out, err := runGregor(t, "clean", "--cluster", cluster); err != nil {
		t.Fatalf("gregor clean: %v\n%s", err, out)
	}
	cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if left, err := docker.Clean(cctx, docker.Filter{Cluster: cluster}); err != nil || !left.Empty() {
		t.Fatalf("after gregor clean, cluster %s still had %+v (%v)", cluster, left, err)
	}
	first, _ := os.Readlink(filepath.Join(store, "story", "latest"))
	out, err = runGregor(t, "run", "--runtime", "docker", "--nodes", "3", "--time-limit", "3s",
		"--seed", strconv.Itoa(seed), "--name", "story", "--store", store)
	if err != nil {
		t.Fatalf("the next run on the same store: %v\n%s", err, out)
	}
	if second, _ := os.Readlink(filepath.Join(store, "story", "latest")); second == first || second == "" {
		t.Fatalf("latest still points at %q after the next run", second)
	}
}
