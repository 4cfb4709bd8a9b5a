package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	dnetwork "github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"gregor/history"
	"gregor/runtime/docker"
)

// needDocker skips, loudly, without an engine, and in -short mode (these
// runs take a minute each).
func needDocker(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("docker runs take a minute each; run without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := docker.New(docker.Options{}).Available(ctx); err != nil {
		t.Skipf("SKIPPING docker run test: no Docker engine answers: %v", err)
	}
}

// leftovers lists containers and networks labelled with the cluster's name.
func leftovers(t *testing.T, cluster string) []string {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := filters.NewArgs(filters.Arg("label", docker.LabelCluster+"="+cluster))
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cli.NetworkList(ctx, dnetwork.ListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cs {
		out = append(out, "container "+strings.Join(c.Names, ","))
	}
	for _, n := range ns {
		out = append(out, "network "+n.Name)
	}
	return out
}

// gregorRun starts `gregor run` in the docker runtime as a subprocess; the
// cluster is named <name>-<seed%100000> (cmd/gregor/run.go).
func gregorRun(t *testing.T, name string, seed int64, store string, limit time.Duration) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(binary, "run", "--runtime", "docker", "--nodes", "3", "--time-limit", limit.String(),
		"--nemesis", "kill,partition,pause", "--nemesis-interval", "4s", "--nemesis-duration", "3s",
		"--seed", fmt.Sprint(seed), "--name", name, "--store", store, "--warm-up", "2s", "--rate", "100")
	cmd.Env = append(os.Environ(), "TESTCONTAINERS_RYUK_DISABLED=true", "GREGOR_BINARY="+binary)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		docker.Clean(ctx, docker.Filter{Cluster: fmt.Sprintf("%s-%d", name, seed%100000)})
	})
	return cmd, bufio.NewScanner(stderr)
}

// exitCode waits for cmd, bounded.
func exitCode(t *testing.T, cmd *exec.Cmd, limit time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(limit):
		cmd.Process.Kill()
		t.Fatalf("gregor run did not exit within %v", limit)
		return -1
	}
}

// A 30 s docker run with kill, partition and pause completes, heals,
// final-reads, checks, and leaves no container or network behind.
func TestDockerRunCompletes(t *testing.T) {
	needDocker(t)
	seed := time.Now().UnixNano() % 1e9
	store := t.TempDir()
	cmd, sc := gregorRun(t, "dkrun", seed, store, 30*time.Second)
	var lines []string
	for sc.Scan() && len(lines) < 10000 {
		lines = append(lines, sc.Text())
	}
	code := exitCode(t, cmd, 4*time.Minute)
	t.Logf("exit %d; last lines:\n%s", code, strings.Join(lines[max(0, len(lines)-8):], "\n"))
	if code != 0 && code != 1 && code != 3 {
		t.Fatalf("gregor run exited %d (2 is bad input, other codes a harness error)", code)
	}
	dir := filepath.Join(store, "dkrun", history.LatestLink)
	if _, err := os.Stat(filepath.Join(dir, history.ResultsFile)); err != nil {
		t.Fatalf("no results.json: %v", err)
	}
	ops, _, _, err := history.ReadFile(filepath.Join(dir, history.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	verbs := map[string]int{}
	finalAssign := false
	for _, op := range ops {
		if op.Process == history.Nemesis {
			verbs[op.F]++
		}
		if op.F == history.FAssign && verbs["heal-all"] > 0 {
			finalAssign = true
		}
	}
	if verbs["heal-all"] != 1 || !finalAssign {
		t.Fatalf("nemesis verbs %v, final assign %v: the run did not heal and final-read", verbs, finalAssign)
	}
	if verbs["kill"]+verbs["partition"]+verbs["pause"] < 2 {
		t.Fatalf("only nemesis verbs %v in 30 s", verbs)
	}
	if left := leftovers(t, fmt.Sprintf("dkrun-%d", seed%100000)); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// SIGINT in the middle of the fault phase tears everything down and leaves
// a readable history.
func TestDockerRunSIGINT(t *testing.T) {
	needDocker(t)
	seed := time.Now().UnixNano()%1e9 + 1
	store := t.TempDir()
	cmd, sc := gregorRun(t, "dkint", seed, store, 60*time.Second)
	sawFaults := make(chan struct{})
	go func() {
		closed := false
		for i := 0; sc.Scan() && i < 10000; i++ {
			if !closed && strings.Contains(sc.Text(), "faults") && strings.Contains(sc.Text(), "(active 1)") {
				close(sawFaults)
				closed = true
			}
		}
	}()
	select {
	case <-sawFaults:
	case <-time.After(2 * time.Minute):
		t.Fatal("no fault in force within 2 minutes")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd, 2*time.Minute); code != 3 {
		t.Errorf("interrupted run exited %d, want 3 (no verdict)", code)
	}
	if left := leftovers(t, fmt.Sprintf("dkint-%d", seed%100000)); len(left) > 0 {
		t.Fatalf("left behind after SIGINT: %v", left)
	}
	ops, _, _, err := history.ReadFile(filepath.Join(store, "dkint", history.LatestLink, history.HistoryFile))
	if err != nil || len(ops) == 0 {
		t.Fatalf("history after SIGINT: %d ops, %v", len(ops), err)
	}
	nem := 0
	for _, op := range ops {
		if op.Process == history.Nemesis {
			nem++
		}
	}
	if nem == 0 {
		t.Fatal("no nemesis operation in the interrupted history")
	}
}
