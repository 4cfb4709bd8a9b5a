package docker

import (
	"context"
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

// A cancellation at an arbitrary moment during boot (here 300 ms in, while
// containers are being created) leaves nothing either.
func TestCancelDuringCreateCleansUp(t *testing.T) {
	needEngine(t)
	name := uniqueName("t-cancel2")
	// Build the image first so that the cancellation lands in the container phase.
	if _, _, err := New(Options{}).EnsureImage(context.Background(), peerBinary); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	c, err := New(Options{}).Start(ctx, peerSpec(name, 3))
	if err == nil {
		// The machine was fast enough to boot in time: still must close clean.
		c.Close(context.Background())
		t.Log("boot finished within the 300 ms budget; checked Close instead")
	} else {
		t.Logf("start cancelled: %v", err)
	}
	assertNoLeftovers(t, name)
}

// Clean finds what a crashed run left (no Close was called).
func TestCleanRemovesLeftovers(t *testing.T) {
	needEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := uniqueName("t-clean")
	spec := peerSpec(name, 2)
	if _, err := New(Options{}).Start(ctx, spec); err != nil {
		t.Fatal(err)
	}
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
