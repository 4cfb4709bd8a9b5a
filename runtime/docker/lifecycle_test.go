package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"gregor/runtime"
)

func TestAvailableNamesTheFix(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/gregor-test.sock")
	err := New(Options{}).Available(context.Background())
	if err == nil {
		t.Fatal("an engine answered at a socket that does not exist")
	}
	for _, want := range []string{"no Docker engine answers at unix:///nonexistent/gregor-test.sock", "start dockerd", "DOCKER_HOST", "--runtime process"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q lacks %q", err, want)
		}
	}
}

// A run cancelled after its containers exist (as by Ctrl-C) removes them.
func TestCancelledStartCleansUp(t *testing.T) {
	needEngine(t)
	name := uniqueName("t-cancel")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	spec := peerSpec(name, 3)
	reached := false
	spec.Ready = func(ctx context.Context, c runtime.Cluster) error {
		reached = true
		cancel()
		return ctx.Err()
	}
	_, err := New(Options{}).Start(ctx, spec)
	if err == nil {
		t.Fatal("a cancelled start succeeded")
	}
	if !reached {
		t.Fatalf("start failed before its containers existed: %v", err)
	}
	assertNoLeftovers(t, name)
}

// A cancellation at any moment of boot (image present, then network,
// container creates still in flight at the engine, starts, the readiness
// wait) leaves nothing: no container, network, reaper process or temporary
// file. The points are spread over the boot time measured first, at most
// cancelPoints of them, cancelStep apart at the least; each gets a random
// offset within its step, so that runs together cover the whole boot.
func TestCancelBootAtManyPoints(t *testing.T) {
	needEngine(t)
	const cancelPoints, cancelStep = 16, 50 * time.Millisecond
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	if _, _, err := New(Options{}).EnsureImage(context.Background(), peerBinary); err != nil {
		t.Fatal(err)
	}
	name := uniqueName("t-boot")
	t0 := time.Now()
	c, err := New(Options{}).Start(context.Background(), peerSpec(name, 3))
	if err != nil {
		t.Fatal(err)
	}
	boot := time.Since(t0)
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertNoLeftovers(t, name)
	step := max(cancelStep, boot/cancelPoints)
	cancelled := 0
	for i := 0; time.Duration(i)*step <= boot+step; i++ {
		at := time.Duration(i)*step + rand.N(step)
		if i == 0 {
			at = 0 // cancelled before Start is even called
		}
		name := fmt.Sprintf("%s-%d", uniqueName("t-boot"), i)
		ctx, cancel := context.WithTimeout(context.Background(), at)
		c, err := New(Options{}).Start(ctx, peerSpec(name, 3))
		cancel()
		if err == nil {
			if err := c.Close(context.Background()); err != nil {
				t.Fatalf("cancel at %v: boot finished, close: %v", at, err)
			}
		} else {
			cancelled++
			if !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "deadline exceeded") {
				t.Fatalf("cancel at %v: start failed for another reason: %v", at, err)
			}
		}
		assertNoLeftovers(t, name)
		assertNoReapers(t)
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			t.Fatalf("cancel at %v left %d entries in TMPDIR (%s, ...)", at, len(left), left[0].Name())
		}
	}
	if cancelled == 0 {
		t.Fatalf("no point cancelled a boot of %v: the test did not test cancellation", boot)
	}
	t.Logf("boot %v; %d of the points cancelled it, %v apart", boot.Round(time.Millisecond), cancelled, step)
}

// A harness killed with SIGKILL, during boot or once the cluster runs, cannot
// clean up; its reaper removes the run's containers and network.
func TestReaperCleansUpAfterSIGKILL(t *testing.T) {
	needEngine(t)
	if _, _, err := New(Options{}).EnsureImage(context.Background(), peerBinary); err != nil {
		t.Fatal(err)
	}
	for _, when := range []string{"booted", "booting"} {
		t.Run(when, func(t *testing.T) {
			name := uniqueName("t-reap")
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHarness$")
			cmd.Env = append(os.Environ(), helperEnv+"="+name)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			lines := bufio.NewScanner(out)
			for lines.Scan() && lines.Text() != when {
			}
			if when == "booting" {
				// Kill it while its creates are under way: wait for the
				// first container to exist, not for a guessed time.
				waitFor(t, 60*time.Second, func() bool { c, _ := leftovers(t, name); return c > 0 })
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			waitFor(t, 90*time.Second, func() bool { c, n := leftovers(t, name); return c == 0 && n == 0 })
		})
	}
}

// helperEnv makes TestHelperHarness a harness that boots a cluster named by
// its value and hangs (bounded) until it is killed.
const helperEnv = "GREGOR_TEST_HARNESS_CLUSTER"

func TestHelperHarness(t *testing.T) {
	name := os.Getenv(helperEnv)
	if name == "" {
		t.Skip("only run as a child by TestReaperCleansUpAfterSIGKILL")
	}
	fmt.Println("booting")
	if _, err := New(Options{}).Start(context.Background(), peerSpec(name, 3)); err != nil {
		t.Fatal(err)
	}
	fmt.Println("booted")
	time.Sleep(2 * time.Minute) // the parent kills us long before
	t.Fatal("not killed")
}

// Clean finds what a crashed run left (no Close was called).
func TestCleanRemovesLeftovers(t *testing.T) {
	needEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := uniqueName("t-clean")
	spec := peerSpec(name, 2)
	c, err := New(Options{}).Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	// Only to release its reaper once Clean has done the work under test.
	defer c.Close(context.Background())
	if c, n := leftovers(t, name); c != 2 || n != 1 {
		t.Fatalf("before clean: %d containers %d networks", c, n)
	}
	removed, err := Clean(ctx, Filter{Cluster: name})
	if err != nil {
		t.Fatal(err)
	}
	if len(removed.Containers) != 2 || len(removed.Networks) != 1 || len(removed.Images) != 0 {
		t.Fatalf("removed %+v", removed)
	}
	assertNoLeftovers(t, name)
	again, err := Clean(ctx, Filter{Cluster: name})
	if err != nil || !again.Empty() {
		t.Fatalf("second clean: %+v %v", again, err)
	}
}

// Where nftables is refused the runtime isolates one node by disconnecting it;
// the option forces that path so it is tested on a kernel that has nftables.
func TestDisconnectFallback(t *testing.T) {
	needEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := uniqueName("t-disc")
	c, err := New(Options{ForceDisconnectPartitions: true}).Start(ctx, peerSpec(name, 3))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		c.Close(context.Background())
		assertNoLeftovers(t, name)
	}()
	if got := c.Capabilities().Get(runtime.FaultPartition); got.Support != runtime.Emulated || !strings.Contains(got.How, "disconnect") {
		t.Fatalf("partition capability %+v", got)
	}
	n := c.Nodes()
	if err := c.Partition(ctx, [][]int32{{1}, {2}, {3}}); err == nil {
		t.Fatal("a three-way partition accepted by the disconnect fallback")
	}
	if err := c.Partition(ctx, [][]int32{{1, 2}, {2, 3}}); err == nil {
		t.Fatal("a bridge accepted by the disconnect fallback")
	}
	if err := c.Partition(ctx, [][]int32{{1}, {2, 3}}); err != nil {
		t.Fatal(err)
	}
	if canDial(t, n[1], n[0]) {
		t.Fatal("isolated node still reachable from its peer")
	}
	if !canDial(t, n[1], n[2]) {
		t.Fatal("2 <-> 3 broken")
	}
	if err := c.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if !canDial(t, n[1], n[0]) || !canDial(t, n[0], n[2]) {
		t.Fatal("heal did not reconnect the node")
	}
}
