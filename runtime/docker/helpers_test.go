package docker

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	dnetwork "github.com/docker/docker/api/types/network"

	"gregor/runtime"
)

// peerBinary is the static test broker (testdata/peer), built once by TestMain.
var peerBinary string

func TestMain(m *testing.M) {
	os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	dir, err := os.MkdirTemp("", "gregor-docker-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	peerBinary = filepath.Join(dir, "peer")
	cmd := exec.Command("go", "build", "-trimpath", "-o", peerBinary, "../testdata/peer")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build testdata/peer: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// needEngine skips, loudly, when no Docker engine answers.
func needEngine(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := New(Options{}).Available(ctx); err != nil {
		t.Skipf("SKIPPING docker runtime test: %v", err)
	}
}

// peerSpec is a cluster of the test broker with n nodes.
func peerSpec(name string, n int) runtime.ClusterSpec {
	s := runtime.ClusterSpec{Name: name, KafkaPort: 9092, RaftPort: 9093, Binary: peerBinary,
		Labels: map[string]string{"gregor.test": "true"}}
	for i := 1; i <= n; i++ {
		s.Nodes = append(s.Nodes, runtime.NodeSpec{ID: int32(i),
			Args: []string{"--id", "{{.ID}}", "--listen", "{{.KafkaAddr}}", "--data", "{{.DataDir}}"}})
	}
	// Ready when every node answers a ping: the stand-in for "every partition
	// has a leader".
	s.Ready = func(ctx context.Context, c runtime.Cluster) error {
		for _, nd := range c.Nodes() {
			if _, err := ask(nd.KafkaAddr, "ping", time.Second); err != nil {
				return err
			}
		}
		return nil
	}
	return s
}

// uniqueName keeps concurrent or leftover runs apart.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1e9)
}

// ask sends one command line to a test broker and returns its answer.
func ask(addr, cmd string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := fmt.Fprintln(c, cmd); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

// mustDial asks node from to dial node to (inside the cluster network) and
// reports whether it got through.
func canDial(t *testing.T, from, to runtime.NodeInfo) bool {
	t.Helper()
	ans, err := ask(from.KafkaAddr, "dial "+to.KafkaAddr, 5*time.Second)
	if err != nil {
		t.Fatalf("ask node %d to dial node %d: %v", from.ID, to.ID, err)
	}
	return strings.HasPrefix(ans, "ok pong")
}

// leftovers counts containers and networks still labelled with the cluster name.
func leftovers(t *testing.T, cluster string) (containers, networks int) {
	t.Helper()
	cli, err := newClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f := filters.NewArgs(filters.Arg("label", LabelCluster+"="+cluster))
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cli.NetworkList(ctx, dnetwork.ListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs), len(ns)
}

func assertNoLeftovers(t *testing.T, cluster string) {
	t.Helper()
	if c, n := leftovers(t, cluster); c != 0 || n != 0 {
		t.Fatalf("cluster %s left %d containers and %d networks", cluster, c, n)
	}
}

// waitFor polls cond until it holds, failing the test after limit.
func waitFor(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// assertNoReapers fails when a reaper child of this process is still alive:
// every Start that returned, and every Close, must have released its own.
func assertNoReapers(t *testing.T) {
	t.Helper()
	if pids := runtime.ReaperChildren(); len(pids) > 0 {
		t.Fatalf("reaper processes %v still running", pids)
	}
}

// meanRTT is the mean time of n pings to addr, spaced by a varying gap so
// that they sample every phase of a periodic fault rather than bunching.
// rtts pings addr n times, a few milliseconds apart, and returns the round
// trips sorted.
func rtts(t *testing.T, addr string, n int) []time.Duration {
	t.Helper()
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		time.Sleep(time.Duration(3+i*7%11) * time.Millisecond)
		t0 := time.Now()
		if _, err := ask(addr, "ping", 5*time.Second); err != nil {
			t.Fatalf("ping %s: %v", addr, err)
		}
		out = append(out, time.Since(t0))
	}
	slices.Sort(out)
	return out
}

func median(d []time.Duration) time.Duration { return d[len(d)/2] }

func mean(d []time.Duration) time.Duration {
	var total time.Duration
	for _, x := range d {
		total += x
	}
	return total / time.Duration(len(d))
}
