package docker

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"gregor/runtime"
)

// Kill sends SIGKILL. A paused node is thawed after the signal so that it
// dies rather than staying frozen with the kill pending.
func (c *Cluster) Kill(ctx context.Context, id int32) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := c.cli.ContainerKill(ctx, n.containerID, "SIGKILL"); err != nil {
		return fmt.Errorf("kill node %d: %w", id, err)
	}
	c.thawAfterDeath(ctx, n)
	return nil
}

// Stop sends SIGTERM and SIGKILL after grace. A paused node is resumed first:
// a frozen process cannot run its shutdown.
func (c *Cluster) Stop(ctx context.Context, id int32, grace time.Duration) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.userPaused || n.frozen {
		if err := c.cli.ContainerUnpause(ctx, n.containerID); err != nil {
			return fmt.Errorf("stop node %d: resume it first: %w", id, err)
		}
		n.userPaused, n.frozen = false, false
	}
	// The engine counts whole seconds; round up so a grace is never cut short.
	secs := int((max(grace, 0) + time.Second - 1) / time.Second)
	if err := c.cli.ContainerStop(ctx, n.containerID, container.StopOptions{Signal: "SIGTERM", Timeout: &secs}); err != nil {
		return fmt.Errorf("stop node %d: %w", id, err)
	}
	return nil
}

// thawAfterDeath unpauses a container killed while frozen; the engine may have
// done so already, so an error is not reported. Caller holds n.mu.
func (c *Cluster) thawAfterDeath(ctx context.Context, n *node) {
	if n.userPaused || n.frozen {
		c.cli.ContainerUnpause(ctx, n.containerID)
	}
	n.userPaused, n.frozen = false, false
}

// Start restarts a killed or stopped node in the same container (same data,
// same IP) and applies the network faults in force to its new namespace.
func (c *Cluster) Start(ctx context.Context, id int32) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	if err := c.cli.ContainerStart(ctx, n.containerID, container.StartOptions{}); err != nil {
		return fmt.Errorf("start node %d: %w", id, err)
	}
	return c.reapply(ctx, n)
}

// Pause freezes the node's processes (cgroup freezer).
func (c *Cluster) Pause(ctx context.Context, id int32) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.frozen { // the slow freezer holds it paused: take over
		n.frozen, n.userPaused = false, true
		return nil
	}
	if err := c.cli.ContainerPause(ctx, n.containerID); err != nil {
		return fmt.Errorf("pause node %d: %w", id, err)
	}
	n.userPaused = true
	return nil
}

// Resume thaws a paused node and applies faults decided while it was frozen.
func (c *Cluster) Resume(ctx context.Context, id int32) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	n.mu.Lock()
	err = c.cli.ContainerUnpause(ctx, n.containerID)
	if err == nil {
		n.userPaused = false
	}
	n.mu.Unlock()
	if err != nil {
		return fmt.Errorf("resume node %d: %w", id, err)
	}
	return c.reapply(ctx, n)
}

// Status inspects the container.
func (c *Cluster) Status(ctx context.Context, id int32) (runtime.NodeState, error) {
	n, err := c.node(id)
	if err != nil {
		return runtime.StateUnknown, err
	}
	ins, err := c.cli.ContainerInspect(ctx, n.containerID)
	if err != nil {
		return runtime.StateUnknown, fmt.Errorf("status of node %d: %w", id, err)
	}
	switch {
	case ins.State == nil:
		return runtime.StateUnknown, nil
	case ins.State.Paused:
		return runtime.StatePaused, nil
	case ins.State.Running:
		return runtime.StateRunning, nil
	}
	return runtime.StateStopped, nil
}

// Logs returns the node's stdout and stderr so far, across restarts.
func (c *Cluster) Logs(ctx context.Context, id int32) (io.ReadCloser, error) {
	n, err := c.node(id)
	if err != nil {
		return nil, err
	}
	rc, err := c.cli.ContainerLogs(ctx, n.containerID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return nil, fmt.Errorf("logs of node %d: %w", id, err)
	}
	// Without a TTY the engine multiplexes both streams; merge them.
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, pw, rc)
		rc.Close()
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// Close stops the freezers and removes the containers and network of this
// run (by label, so that a container whose creation raced a cancellation is
// found too). It is idempotent.
func (c *Cluster) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	for _, n := range c.nodes {
		c.stopFreezer(n)
	}
	_, err := removeLabelled(ctx, c.cli, Filter{Run: c.runID})
	// Close only drops idle connections; the client stays usable for a
	// repeated Close.
	c.cli.Close()
	if err != nil {
		// The reaper stays armed: it tries again when this process exits.
		return err
	}
	return c.reaper.Release(ctx)
}
