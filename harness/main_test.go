package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gregor/runtime"
	"gregor/runtime/process"
)

// binary is the static gregor binary brokers run from: GREGOR_BINARY, else
// built once here with CGO_ENABLED=0.
var binary string

// Tests that boot a process cluster run in parallel (t.Parallel, at most
// make test's -parallel at once): each spends most of its time waiting on
// failure detection, session timeouts and holds, not on the CPU, and in
// series they were most of make test's wall time. Each cluster has its own
// 127.x.y block and directory, so they share nothing. The docker runtime's
// tests stay serial: they share the image build.
func TestMain(m *testing.M) {
	os.Exit(mainWithBinary(m))
}

func mainWithBinary(m *testing.M) int {
	binary = os.Getenv("GREGOR_BINARY")
	if binary == "" {
		dir, err := os.MkdirTemp("", "gregor-harness-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		binary = filepath.Join(dir, "gregor")
		root, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			fmt.Fprintln(os.Stderr, "go env GOMOD:", err)
			return 1
		}
		cmd := exec.Command("go", "build", "-o", binary, "./cmd/gregor")
		cmd.Dir = filepath.Dir(strings.TrimSpace(string(root)))
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building gregor (set GREGOR_BINARY to use a built one): %v\n%s", err, out)
			return 1
		}
	}
	return m.Run()
}

// testCluster is n combined-mode brokers with gregor run's short timeouts.
func testCluster(n, minISR int, extra ...string) ClusterConfig {
	c := DefaultConfig().Cluster
	c.Nodes, c.MinISR, c.AutoCreateTopics, c.BrokerArgs = n, minISR, false, extra
	return c
}

// testSpec is testCluster as a runtime spec, for tests that boot a cluster
// without a run.
func testSpec(name string, n, minISR int, extra ...string) runtime.ClusterSpec {
	c := testCluster(n, minISR, extra...)
	return c.Spec(name, binary)
}

// startCluster boots a process cluster that the test closes.
func startCluster(t *testing.T, spec runtime.ClusterSpec) runtime.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	c, err := process.Runtime{Dir: t.TempDir()}.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c.Close(ctx)
	})
	return c
}
