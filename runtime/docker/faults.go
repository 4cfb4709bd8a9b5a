package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	dnetwork "github.com/docker/docker/api/types/network"

	"gregor/runtime"
	"gregor/runtime/docker/nsfault"
)

// probeResult is what `gregor nsfault probe` found in a node's namespace.
type probeResult struct {
	nftErr, netemErr string // empty: works
}

func (p probeResult) nftOK() bool   { return p.nftErr == "" }
func (p probeResult) netemOK() bool { return p.netemErr == "" }

// probeFaults asks a node's kernel what it allows and fills the capabilities.
// A node that cannot run the probe (crashed broker) is skipped; if none can,
// the network faults are reported as unavailable with the reason.
func (c *Cluster) probeFaults(ctx context.Context) error {
	var p probeResult
	var lastErr error
	probed := false
	for _, n := range c.nodes {
		out, err := c.nsfault(ctx, n, "probe")
		if err != nil {
			lastErr = err
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		var pj nsfault.Probe
		if err := json.Unmarshal([]byte(out), &pj); err != nil {
			lastErr = fmt.Errorf("nsfault probe printed %q: %w", out, err)
			continue
		}
		p, probed = probeResult{nftErr: pj.NFTables, netemErr: pj.Netem}, true
		break
	}
	if !probed {
		reason := fmt.Sprintf("could not run gregor nsfault in any node: %v", lastErr)
		p = probeResult{nftErr: reason, netemErr: reason}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.probe = p
	c.caps = capabilitiesFor(p, c.r.opts.ForceDisconnectPartitions)
	if c.r.opts.Foreign != nil {
		for _, f := range []runtime.Fault{runtime.FaultPartition, runtime.FaultDelay, runtime.FaultLoss} {
			if cp := c.caps[f]; cp.Support == runtime.Real {
				cp.How += ", run from gregor's image in a one-shot sidecar sharing the node's network namespace"
				c.caps[f] = cp
			}
		}
	}
	return nil
}

func capabilitiesFor(p probeResult, forceDisconnect bool) runtime.Capabilities {
	caps := runtime.Capabilities{
		runtime.FaultKill:  {Support: runtime.Real, How: "docker kill SIGKILL; start reuses the container and its data"},
		runtime.FaultStop:  {Support: runtime.Real, How: "docker stop: SIGTERM, SIGKILL after the grace period"},
		runtime.FaultPause: {Support: runtime.Real, How: "docker pause (cgroup freezer)"},
	}
	switch {
	case p.nftOK() && !forceDisconnect:
		caps[runtime.FaultPartition] = runtime.Capability{Support: runtime.Real, How: "nftables drop rules in each container's network namespace (gregor nsfault)"}
	case forceDisconnect:
		caps[runtime.FaultPartition] = runtime.Capability{Support: runtime.Emulated, How: "docker network disconnect, isolate-one only (forced by option); the node is cut off from the harness too"}
	default:
		caps[runtime.FaultPartition] = runtime.Capability{Support: runtime.Emulated, How: "docker network disconnect, isolate-one only; the node is cut off from the harness too (nftables refused: " + p.nftErr + ")"}
	}
	switch {
	case p.netemOK():
		caps[runtime.FaultDelay] = runtime.Capability{Support: runtime.Real, How: "netem qdisc on the container's links (gregor nsfault)"}
		caps[runtime.FaultLoss] = runtime.Capability{Support: runtime.Real, How: "netem qdisc loss on the container's links"}
	default:
		caps[runtime.FaultDelay] = runtime.Capability{Support: runtime.Emulated, How: "freezing the container for delay+-jitter, then letting it run delay/4 (docker pause): requests wait up to delay, throughput falls to ~1/5; the kernel has no netem: " + p.netemErr}
		if p.nftOK() {
			caps[runtime.FaultLoss] = runtime.Capability{Support: runtime.Real, How: "nftables random drop of outgoing packets (numgen), netem being unavailable"}
		} else {
			caps[runtime.FaultLoss] = runtime.Capability{Support: runtime.Unsupported, How: "neither netem nor nftables: " + p.nftErr}
		}
	}
	return caps
}

// Capabilities says which faults are real here and which emulated.
func (c *Cluster) Capabilities() runtime.Capabilities {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(runtime.Capabilities, len(c.caps))
	for k, v := range c.caps {
		out[k] = v
	}
	return out
}

func (c *Cluster) useDisconnect() bool {
	return c.r.opts.ForceDisconnectPartitions || !c.probe.nftOK()
}

// Partition drops traffic between nodes of different groups, both ways. Each
// listed node gets the full set of addresses it must drop, so either side of
// a pair alone enforces the cut: a paused or stopped node's peers still drop
// its packets, and its own rules are installed when it resumes or restarts.
func (c *Cluster) Partition(ctx context.Context, groups [][]int32) error {
	for _, g := range groups {
		for _, id := range g {
			if _, err := c.node(id); err != nil {
				return err
			}
		}
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errors.New("partition: cluster is closed")
	}
	if c.useDisconnect() {
		c.mu.Unlock()
		return c.partitionByDisconnect(ctx, groups)
	}
	// Cuts is symmetric, so merging it keeps the drops invariant.
	var touched []*node
	for a, bs := range runtime.Cuts(groups) {
		if c.drops[a] == nil {
			c.drops[a] = map[int32]bool{}
		}
		for b := range bs {
			c.drops[a][b] = true
		}
		touched = append(touched, c.byID[a])
	}
	c.mu.Unlock()
	return c.forEach(ctx, touched, c.applyDrops)
}

// Heal removes every partition and slow link on every node.
func (c *Cluster) Heal(ctx context.Context) error {
	c.mu.Lock()
	c.drops = make(map[int32]map[int32]bool)
	c.slow = make(map[int32]slowSpec)
	disc := c.disconnected
	c.disconnected = make(map[int32]bool)
	c.mu.Unlock()
	for _, n := range c.nodes {
		c.stopFreezer(n)
	}
	var errs []error
	for id := range disc {
		if err := c.reconnect(ctx, c.byID[id]); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, c.forEach(ctx, c.nodes, func(ctx context.Context, n *node) error {
		return errors.Join(c.applyDrops(ctx, n), c.applySlow(ctx, n))
	}))
	return errors.Join(errs...)
}

// Slow adds delay +- jitter and loss to the node's outgoing packets: netem
// where the kernel has it; else loss by nftables and delay by freezing.
func (c *Cluster) Slow(ctx context.Context, id int32, delay, jitter time.Duration, lossPct float64) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	if delay < 0 || delay > nsfault.MaxDelay || jitter < 0 || jitter > nsfault.MaxDelay || !(lossPct >= 0 && lossPct <= 100) {
		return fmt.Errorf("slow node %d: delay %v jitter %v loss %v%%: delays in [0, %v], loss in [0, 100]", id, delay, jitter, lossPct, nsfault.MaxDelay)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errors.New("slow: cluster is closed")
	}
	if lossPct > 0 && !c.probe.netemOK() && !c.probe.nftOK() {
		c.mu.Unlock()
		return fmt.Errorf("slow node %d: loss needs netem or nftables; the kernel refused both (%s)", id, c.probe.nftErr)
	}
	c.slow[id] = slowSpec{delay: delay, jitter: jitter, lossPct: lossPct}
	emulateDelay := !c.probe.netemOK() && delay > 0
	c.mu.Unlock()
	// The freezer starts after the command: inNode would thaw its first freeze.
	c.stopFreezer(n)
	if err := c.applySlow(ctx, n); err != nil {
		return err
	}
	if emulateDelay {
		c.startFreezer(n, delay, jitter)
	}
	return nil
}

// Unslow removes the node's slow link.
func (c *Cluster) Unslow(ctx context.Context, id int32) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.slow, id)
	c.mu.Unlock()
	c.stopFreezer(n)
	return c.applySlow(ctx, n)
}

// reapply installs the faults in force on a node that was stopped or paused.
func (c *Cluster) reapply(ctx context.Context, n *node) error {
	return errors.Join(c.applyDrops(ctx, n), c.applySlow(ctx, n))
}

// inNode runs f (a command inside the node) while no pause state can change.
// A node frozen by the slow freezer is thawed first (its current freeze ends
// early); a node held by Pause, or not running, is skipped: its peers enforce
// partitions, and reapply catches up on Resume or Start.
func (c *Cluster) inNode(ctx context.Context, n *node, f func() error) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.frozen {
		// "is not paused": the container died or was restarted while the
		// freezer held it (a kill races the freezer), so it runs already.
		if err := c.cli.ContainerUnpause(ctx, n.containerID); err != nil && !strings.Contains(err.Error(), "is not paused") {
			return fmt.Errorf("node %d: thaw for a command: %w", n.info.ID, err)
		}
		n.frozen = false
	}
	if n.userPaused {
		return nil
	}
	st, err := c.Status(ctx, n.info.ID)
	if err != nil || st != runtime.StateRunning {
		return err
	}
	return f()
}

// applyDrops makes the node's drop table match c.drops.
func (c *Cluster) applyDrops(ctx context.Context, n *node) error {
	c.mu.Lock()
	if c.useDisconnect() {
		c.mu.Unlock()
		return nil
	}
	var ips []string
	for peer, on := range c.drops[n.info.ID] {
		if on {
			ips = append(ips, c.byID[peer].ip.String())
		}
	}
	c.mu.Unlock()
	sort.Strings(ips)
	args := append([]string{"drop"}, ips...)
	if len(ips) == 0 {
		args = []string{"heal"}
	}
	return c.inNode(ctx, n, func() error {
		if _, err := c.nsfault(ctx, n, args...); err != nil {
			return fmt.Errorf("node %d: %w", n.info.ID, err)
		}
		return nil
	})
}

// applySlow makes the node's netem / loss rule match c.slow.
func (c *Cluster) applySlow(ctx context.Context, n *node) error {
	c.mu.Lock()
	s, on := c.slow[n.info.ID]
	netemOK, nftOK := c.probe.netemOK(), c.probe.nftOK()
	c.mu.Unlock()
	if !netemOK && !nftOK {
		return nil // nothing in the namespace to set or clear
	}
	args := []string{"unslow"}
	switch {
	case on && netemOK:
		args = []string{"slow", "--delay", s.delay.String(), "--jitter", s.jitter.String(), "--loss", strconv.FormatFloat(s.lossPct, 'f', -1, 64)}
	case on && s.lossPct > 0:
		args = []string{"slow", "--via", "nftables", "--loss", strconv.FormatFloat(s.lossPct, 'f', -1, 64)}
	}
	return c.inNode(ctx, n, func() error {
		if _, err := c.nsfault(ctx, n, args...); err != nil {
			return fmt.Errorf("node %d: %w", n.info.ID, err)
		}
		return nil
	})
}

// forEach runs f on the nodes in parallel (one goroutine per node, bounded
// by MaxNodes) and joins the errors.
func (c *Cluster) forEach(ctx context.Context, nodes []*node, f func(context.Context, *node) error) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(ctx, n)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// partitionByDisconnect is the fallback where nftables is refused: it can
// only cut one node off, by disconnecting it from the cluster network.
func (c *Cluster) partitionByDisconnect(ctx context.Context, groups [][]int32) error {
	var lone []int32
	nonEmpty := 0
	seen := map[int32]bool{}
	for _, g := range groups {
		for _, id := range g {
			if seen[id] {
				return fmt.Errorf("partition %v: without nftables groups cannot overlap: %s", groups, c.Capabilities().Get(runtime.FaultPartition).How)
			}
			seen[id] = true
		}
		if len(g) > 0 {
			nonEmpty++
		}
		if len(g) == 1 {
			lone = append(lone, g[0])
		}
	}
	if nonEmpty != 2 || len(lone) == 0 {
		return fmt.Errorf("partition %v: without nftables only isolate-one (two groups, one of a single node) is possible: %s",
			groups, c.Capabilities().Get(runtime.FaultPartition).How)
	}
	id := lone[0]
	c.mu.Lock()
	already := c.disconnected[id]
	c.disconnected[id] = true
	c.mu.Unlock()
	if already {
		return nil
	}
	n := c.byID[id]
	if err := c.cli.NetworkDisconnect(ctx, c.network, n.containerID, true); err != nil {
		c.mu.Lock()
		delete(c.disconnected, id)
		c.mu.Unlock()
		return fmt.Errorf("isolate node %d: network disconnect: %w", id, err)
	}
	return nil
}

func (c *Cluster) reconnect(ctx context.Context, n *node) error {
	err := c.cli.NetworkConnect(ctx, c.network, n.containerID, &dnetwork.EndpointSettings{
		IPAMConfig: &dnetwork.EndpointIPAMConfig{IPv4Address: n.ip.String()},
	})
	if err != nil {
		return fmt.Errorf("heal node %d: network connect: %w", n.info.ID, err)
	}
	return nil
}
