package process

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gregor/runtime"
)

// peerBinary is the runtimes' stand-in broker (runtime/testdata/peer).
var peerBinary string

func TestMain(m *testing.M) {
	if p := os.Getenv(peerEnv); p != "" { // a child harness: the parent built it
		peerBinary = p
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "gregor-process-test")
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

func peerSpec(name string, n int) runtime.ClusterSpec {
	s := runtime.ClusterSpec{Name: name, KafkaPort: 9092, RaftPort: 9093, Binary: peerBinary}
	for i := 1; i <= n; i++ {
		s.Nodes = append(s.Nodes, runtime.NodeSpec{ID: int32(i),
			Args: []string{"--id", "{{.ID}}", "--listen", "{{.KafkaAddr}}", "--data", "{{.DataDir}}"}})
	}
	s.Ready = func(ctx context.Context, c runtime.Cluster) error {
		for _, nd := range c.Nodes() {
			conn, err := net.DialTimeout("tcp", nd.KafkaAddr, time.Second)
			if err != nil {
				return err
			}
			conn.Close()
		}
		return nil
	}
	return s
}

func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1e9)
}

func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	pids, err := ProcessesMentioning(s)
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A cancellation at any moment of boot leaves no broker process, no
// directory and no reaper: points spread over the boot time measured first.
func TestCancelBootAtManyPoints(t *testing.T) {
	const cancelPoints, cancelStep = 16, 5 * time.Millisecond
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	name := uniqueName("t-boot")
	t0 := time.Now()
	c, err := Runtime{}.Start(context.Background(), peerSpec(name, 3))
	if err != nil {
		t.Fatal(err)
	}
	boot := time.Since(t0)
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	step := max(cancelStep, boot/cancelPoints)
	cancelled := 0
	for i := 0; time.Duration(i)*step <= boot+step; i++ {
		at := time.Duration(i)*step + rand.N(step)
		if i == 0 {
			at = 0
		}
		name := fmt.Sprintf("%s-%d", uniqueName("t-boot"), i)
		ctx, cancel := context.WithTimeout(context.Background(), at)
		c, err := Runtime{}.Start(ctx, peerSpec(name, 3))
		cancel()
		if err == nil {
			if err := c.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		} else {
			cancelled++
			if !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "deadline exceeded") {
				t.Fatalf("cancel at %v: start failed for another reason: %v", at, err)
			}
		}
		if pids := processesMentioning(t, name); len(pids) > 0 {
			t.Fatalf("cancel at %v left broker processes %v", at, pids)
		}
		if pids := runtime.ReaperChildren(); len(pids) > 0 {
			t.Fatalf("cancel at %v left reapers %v", at, pids)
		}
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			t.Fatalf("cancel at %v left %s in TMPDIR", at, left[0].Name())
		}
	}
	if cancelled == 0 {
		t.Fatalf("no point cancelled a boot of %v", boot)
	}
	t.Logf("boot %v; %d points cancelled it, %v apart", boot.Round(time.Millisecond), cancelled, step)
}

// A harness killed with SIGKILL takes its brokers with it (Pdeathsig), and its
// reaper removes the directory it made.
func TestBrokersDieWithHarness(t *testing.T) {
	tmp := t.TempDir()
	name := uniqueName("t-orphan")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHarness$")
	cmd.Env = append(os.Environ(), helperEnv+"="+name, peerEnv+"="+peerBinary, "TMPDIR="+tmp)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var addrs []string
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if a, ok := strings.CutPrefix(lines.Text(), "addr "); ok {
			addrs = append(addrs, a)
		}
		if lines.Text() == "booted" {
			break
		}
	}
	if len(addrs) != 3 || len(processesMentioning(t, name)) != 3 {
		t.Fatalf("child harness booted %v, processes %v", addrs, processesMentioning(t, name))
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	waitFor(t, 30*time.Second, "brokers gone", func() bool { return len(processesMentioning(t, name)) == 0 })
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Fatalf("%s still listening after its harness died", a)
		}
	}
	waitFor(t, 30*time.Second, "cluster directory removed", func() bool {
		left, _ := os.ReadDir(tmp)
		return len(left) == 0
	})
}

const (
	helperEnv = "GREGOR_TEST_HARNESS_CLUSTER"
	peerEnv   = "GREGOR_TEST_PEER"
)

// TestHelperHarness is the harness TestBrokersDieWithHarness kills.
func TestHelperHarness(t *testing.T) {
	name := os.Getenv(helperEnv)
	if name == "" {
		t.Skip("only run as a child by TestBrokersDieWithHarness")
	}
	c, err := Runtime{}.Start(context.Background(), peerSpec(name, 3))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range c.Bootstrap() {
		fmt.Println("addr", a)
	}
	fmt.Println("booted")
	time.Sleep(2 * time.Minute) // the parent kills us long before
	t.Fatal("not killed")
}

// A fault's undo right after a kill whose context ended (the fault phase's
// deadline fell on it): Kill returns before the process exits, and Start
// must wait for that exit and start a new process, not take the dying one
// for a running node and leave it down. Found by TestPowerLossAllEffect.
func TestStartAfterCancelledKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rt, err := Runtime{Dir: t.TempDir()}.Start(ctx, peerSpec(uniqueName("rekill"), 1))
	if err != nil {
		t.Fatal(err)
	}
	c := rt.(*Cluster)
	defer c.Close(context.Background())
	for i := range 20 {
		old := c.Pid(1)
		if old == 0 {
			t.Fatalf("round %d: node 1 not running", i)
		}
		gone, stop := context.WithCancel(ctx)
		stop()
		c.Kill(gone, 1) // returns at once: its context has ended
		if err := c.Start(ctx, 1); err != nil {
			t.Fatalf("round %d: start after a cancelled kill: %v", i, err)
		}
		if pid := c.Pid(1); pid == 0 || pid == old {
			t.Fatalf("round %d: after the restart node 1 runs pid %d (before: %d): the killed process was taken for a running node", i, pid, old)
		}
	}
}

// A node SIGKILLed by someone else (a fault file's `kill -9 PID`, as the
// external runtime's runs against `gregor up` do) and started at once is
// started again: the kill is not seen yet (the process is dying or a
// zombie not reaped) when Start asks whether it runs, and "already
// running" would leave it down for good.
func TestStartRightAfterAnOutsideKill(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	c, err := Runtime{}.Start(context.Background(), peerSpec(uniqueName("t-okill"), 1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	pc := c.(*Cluster)
	for round := range 20 {
		old := pc.Pid(1)
		if old == 0 {
			t.Fatalf("round %d: node 1 not running", round)
		}
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := pc.Start(ctx, 1)
		cancel()
		if err != nil {
			t.Fatalf("round %d: start: %v", round, err)
		}
		if p := pc.Pid(1); p == 0 || p == old {
			t.Fatalf("round %d: after an outside kill of pid %d and a start, node 1's pid is %d: not started again", round, old, p)
		}
	}
}
