package docker

import (
	"bytes"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"gregor/runtime"
)

// TestCluster boots one 3-node cluster and walks it through every fault; one
// cluster for all of them keeps the package's run time down.
func TestCluster(t *testing.T) {
	needEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := uniqueName("t-cluster")
	var log bytes.Buffer
	rt := New(Options{Log: &log})
	c, err := rt.StartCluster(ctx, peerSpec(name, 3))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			c.Close(context.Background())
		}
	}()
	tm := c.Timings()
	t.Logf("boot of 3 nodes: total %v (image %v built=%v, network %v, containers %v, probe %v, ready %v)",
		tm.Total, tm.Image, tm.ImageBuilt, tm.Network, tm.Containers, tm.Probe, tm.Ready)
	t.Logf("capabilities:\n%s", c.Capabilities())
	nodes := c.Nodes()
	if len(nodes) != 3 || len(c.Bootstrap()) != 3 {
		t.Fatalf("nodes %v bootstrap %v", nodes, c.Bootstrap())
	}
	n1, n2, n3 := nodes[0], nodes[1], nodes[2]

	t.Run("reachable from the host on a private network", func(t *testing.T) {
		for _, n := range nodes {
			ans, err := ask(n.KafkaAddr, "ping", 5*time.Second)
			if err != nil || ans != "pong "+itoa(n.ID) {
				t.Fatalf("node %d at %s: %q %v", n.ID, n.KafkaAddr, ans, err)
			}
			if !strings.HasPrefix(n.Host, "10.") {
				t.Fatalf("node %d host %s is not on the private 10.x network", n.ID, n.Host)
			}
		}
		ins, err := c.cli.ContainerInspect(ctx, c.byID[1].containerID)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range map[string]string{LabelManaged: "true", LabelCluster: name, LabelRun: c.RunID(), LabelNode: "1", "gregor.test": "true"} {
			if ins.Config.Labels[k] != v {
				t.Fatalf("label %s = %q, want %q", k, ins.Config.Labels[k], v)
			}
		}
		if _, ok := ins.NetworkSettings.Networks["bridge"]; ok || len(ins.NetworkSettings.Networks) != 1 {
			t.Fatalf("container networks %v: want only the cluster's", ins.NetworkSettings.Networks)
		}
		if !canDial(t, n1, n2) || !canDial(t, n2, n3) {
			t.Fatal("nodes cannot reach each other")
		}
	})

	t.Run("kill then start keeps the data dir", func(t *testing.T) {
		if ans, err := ask(n1.KafkaAddr, "write kept-across-kill", 5*time.Second); err != nil || ans != "ok" {
			t.Fatalf("write: %q %v", ans, err)
		}
		if err := c.Kill(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if st, err := c.Status(ctx, 1); err != nil || st != runtime.StateStopped {
			t.Fatalf("after kill: %v %v", st, err)
		}
		if _, err := ask(n1.KafkaAddr, "ping", 500*time.Millisecond); err == nil {
			t.Fatal("killed node answers")
		}
		if err := c.Start(ctx, 1); err != nil {
			t.Fatal(err)
		}
		ans := waitAnswer(t, n1.KafkaAddr, "read")
		if ans != "kept-across-kill" {
			t.Fatalf("data after restart: %q", ans)
		}
	})

	t.Run("stop then start", func(t *testing.T) {
		if err := c.Stop(ctx, 3, time.Second); err != nil {
			t.Fatal(err)
		}
		if st, _ := c.Status(ctx, 3); st != runtime.StateStopped {
			t.Fatalf("after stop: %v", st)
		}
		if err := c.Start(ctx, 3); err != nil {
			t.Fatal(err)
		}
		waitAnswer(t, n3.KafkaAddr, "ping")
	})

	t.Run("pause stops answers and resume brings them back", func(t *testing.T) {
		if err := c.Pause(ctx, 2); err != nil {
			t.Fatal(err)
		}
		if st, _ := c.Status(ctx, 2); st != runtime.StatePaused {
			t.Fatalf("after pause: %v", st)
		}
		if ans, err := ask(n2.KafkaAddr, "ping", 500*time.Millisecond); err == nil {
			t.Fatalf("paused node answered %q", ans)
		}
		if err := c.Resume(ctx, 2); err != nil {
			t.Fatal(err)
		}
		if ans, err := ask(n2.KafkaAddr, "ping", 5*time.Second); err != nil || ans != "pong 2" {
			t.Fatalf("after resume: %q %v", ans, err)
		}
	})

	t.Run("kill and stop of a paused node", func(t *testing.T) {
		if err := c.Pause(ctx, 3); err != nil {
			t.Fatal(err)
		}
		if err := c.Kill(ctx, 3); err != nil {
			t.Fatal(err)
		}
		if st, _ := c.Status(ctx, 3); st != runtime.StateStopped {
			t.Fatalf("paused then killed node is %v", st)
		}
		if err := c.Start(ctx, 3); err != nil {
			t.Fatal(err)
		}
		waitAnswer(t, n3.KafkaAddr, "ping")
		if err := c.Pause(ctx, 3); err != nil {
			t.Fatal(err)
		}
		if err := c.Stop(ctx, 3, time.Second); err != nil {
			t.Fatal(err)
		}
		if st, _ := c.Status(ctx, 3); st != runtime.StateStopped {
			t.Fatalf("paused then stopped node is %v", st)
		}
		if err := c.Start(ctx, 3); err != nil {
			t.Fatal(err)
		}
		waitAnswer(t, n3.KafkaAddr, "ping")
	})

	t.Run("partition 1 | 2 3 and heal", func(t *testing.T) {
		if err := c.Partition(ctx, [][]int32{{1}, {2, 3}}); err != nil {
			t.Fatal(err)
		}
		if canDial(t, n1, n2) || canDial(t, n2, n1) || canDial(t, n3, n1) {
			t.Fatal("traffic crosses the partition")
		}
		if !canDial(t, n2, n3) || !canDial(t, n3, n2) {
			t.Fatal("2 <-> 3 broken by a partition that keeps them together")
		}
		if _, err := ask(n1.KafkaAddr, "ping", 5*time.Second); err != nil {
			t.Fatalf("the harness lost the isolated node: %v", err)
		}
		// A restarted node has a fresh namespace: the runtime must reinstall
		// its rules, not just rely on the peers.
		if err := c.Kill(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx, 1); err != nil {
			t.Fatal(err)
		}
		waitAnswer(t, n1.KafkaAddr, "ping")
		if canDial(t, n1, n2) {
			t.Fatal("partition gone after the isolated node restarted")
		}
		if err := c.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		if !canDial(t, n1, n2) || !canDial(t, n2, n1) || !canDial(t, n3, n1) {
			t.Fatal("heal did not restore traffic")
		}
	})

	t.Run("bridge: overlapping groups cut only pairs no group holds", func(t *testing.T) {
		if err := c.Partition(ctx, [][]int32{{1, 2}, {2, 3}}); err != nil {
			t.Fatal(err)
		}
		if canDial(t, n1, n3) || canDial(t, n3, n1) {
			t.Fatal("1 <-> 3 not cut by the bridge")
		}
		if !canDial(t, n1, n2) || !canDial(t, n3, n2) || !canDial(t, n2, n1) || !canDial(t, n2, n3) {
			t.Fatal("the bridge node 2 lost a side")
		}
		if err := c.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		if !canDial(t, n1, n3) {
			t.Fatal("heal did not restore 1 <-> 3")
		}
	})

	t.Run("partition of a paused node is enforced by its peers and by itself on resume", func(t *testing.T) {
		if err := c.Pause(ctx, 3); err != nil {
			t.Fatal(err)
		}
		if err := c.Partition(ctx, [][]int32{{1, 2}, {3}}); err != nil {
			t.Fatal(err)
		}
		if err := c.Resume(ctx, 3); err != nil {
			t.Fatal(err)
		}
		if canDial(t, n3, n1) || canDial(t, n1, n3) {
			t.Fatal("traffic crosses the partition made while 3 was paused")
		}
		if err := c.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		if !canDial(t, n3, n1) {
			t.Fatal("heal did not restore traffic")
		}
	})

	t.Run("slow adds delay and unslow removes it", func(t *testing.T) {
		// The baselines are medians: on a loaded machine one stalled ping
		// lifts a mean past the fault's effect (a 12 ms mean before the
		// fault was seen at load 25 on 2 cores). The slowed figure is a
		// mean: an emulated delay (freezing) stalls only the pings that
		// meet a freeze, and pings a few ms apart fall in step with the
		// thaw, so its median may show nothing.
		before := median(rtts(t, n2.KafkaAddr, 11))
		if err := c.Slow(ctx, 2, 100*time.Millisecond, 10*time.Millisecond, 0); err != nil {
			t.Fatal(err)
		}
		slowed := mean(rtts(t, n2.KafkaAddr, 20))
		if err := c.Unslow(ctx, 2); err != nil {
			t.Fatal(err)
		}
		after := median(rtts(t, n2.KafkaAddr, 11))
		t.Logf("RTT median before %v, mean slowed %v, median after %v (delay %s)", before, slowed, after, c.Capabilities().Get(runtime.FaultDelay).Support)
		if slowed < 5*before {
			t.Fatalf("slow did not add measurable delay: before %v slowed %v", before, slowed)
		}
		if after*2 > slowed {
			t.Fatalf("unslow left delay: slowed %v after %v", slowed, after)
		}
		if st, _ := c.Status(ctx, 2); st != runtime.StateRunning {
			t.Fatalf("node left %v after unslow", st)
		}
	})

	t.Run("slow with total loss cuts the node off; heal restores it", func(t *testing.T) {
		if c.Capabilities().Get(runtime.FaultLoss).Support == runtime.Unsupported {
			t.Skip("loss unsupported here")
		}
		if err := c.Slow(ctx, 3, 0, 0, 100); err != nil {
			t.Fatal(err)
		}
		if _, err := ask(n3.KafkaAddr, "ping", 500*time.Millisecond); err == nil {
			t.Fatal("100% loss let an answer out")
		}
		if err := c.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		waitAnswer(t, n3.KafkaAddr, "ping")
	})

	t.Run("logs hold the output of every start", func(t *testing.T) {
		rc, err := c.Logs(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(string(b), "peer 1 up"); got < 3 {
			t.Fatalf("node 1 started 3 times, logs show %d:\n%s", got, b)
		}
	})

	t.Run("unknown node is an error", func(t *testing.T) {
		if err := c.Kill(ctx, 99); err == nil {
			t.Fatal("kill of node 99 accepted")
		}
		if err := c.Partition(ctx, [][]int32{{1}, {2, 7}}); err == nil {
			t.Fatal("a partition naming node 7 accepted")
		}
	})

	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	closed = true
	assertNoLeftovers(t, name)
	if err := c.Close(ctx); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if testing.Verbose() {
		os.Stderr.Write(log.Bytes())
	}
}

// waitAnswer retries a command until the node answers (it is restarting),
// for at most 10 s.
func waitAnswer(t *testing.T, addr, cmd string) string {
	t.Helper()
	var lastErr error
	for i := 0; i < 100; i++ {
		ans, err := ask(addr, cmd, time.Second)
		if err == nil {
			return ans
		}
		lastErr = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not answer %q: %v", addr, cmd, lastErr)
	return ""
}

func itoa(id int32) string { return strconv.Itoa(int(id)) }
