package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/errdefs"
	"github.com/docker/docker/pkg/stdcopy"

	"gregor/runtime"
)

// Foreign makes the runtime run nodes from an image other than gregor's own
// (runtime/image describes any Kafka-protocol image with it). Kill, stop
// and pause stay container operations; partitions and slow links are made
// by the same `gregor nsfault` helper, run from gregor's image in a one-shot
// sidecar container that joins the node's network namespace (the node's
// image need not hold gregor, nor any tool).
type Foreign struct {
	// Image is the node image. It must already be in the engine: no
	// registry is reached.
	Image string
	// Node renders a node's container from its place in the cluster.
	Node func(self runtime.NodeInfo, all []runtime.NodeInfo) (ForeignNode, error)
	// DataDir, if set, is where each node's data volume is mounted.
	DataDir string
	// ReadyLog, if set, must match a line of every node's log before the
	// cluster's readiness probe (spec.Ready) is asked.
	ReadyLog *regexp.Regexp
}

// ForeignNode is one node's container.
type ForeignNode struct {
	Entrypoint []string // nil: the image's
	Cmd        []string // nil: the image's
	Env        map[string]string
	User       string // "": the image's
}

// checkForeignImage refuses an image the engine does not hold, naming the fix.
func (c *Cluster) checkForeignImage(ctx context.Context) error {
	if _, err := c.cli.ImageInspect(ctx, c.image); err != nil {
		if errdefs.IsNotFound(err) {
			return fmt.Errorf("image %s is not in the Docker engine at %s: docker pull (or docker load) it first; gregor reaches no registry", c.image, engineHost())
		}
		return fmt.Errorf("inspect image %s: %w", c.image, err)
	}
	return nil
}

// foreignContainer fills a container request's command, environment and
// data volume for a foreign node.
func (c *Cluster) foreignContainer(n *node, all []runtime.NodeInfo) (ForeignNode, error) {
	fn, err := c.r.opts.Foreign.Node(n.info, all)
	if err != nil {
		return ForeignNode{}, fmt.Errorf("node %d: %w", n.info.ID, err)
	}
	return fn, nil
}

func envList(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// waitReadyLog waits, bounded by ctx, until every node's log matches re.
func (c *Cluster) waitReadyLog(ctx context.Context, re *regexp.Regexp) error {
	for _, n := range c.nodes {
		for {
			rc, err := c.Logs(ctx, n.info.ID)
			if err == nil {
				b, _ := io.ReadAll(io.LimitReader(rc, 64<<20))
				rc.Close()
				if re.Match(b) {
					break
				}
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("node %d: no log line matching %q (the image spec's ready_log) before %w", n.info.ID, re, ctx.Err())
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
	return nil
}

// nsfault runs `gregor nsfault args...` in node n's network namespace: by
// docker exec in gregor's own image, else in a sidecar.
func (c *Cluster) nsfault(ctx context.Context, n *node, args ...string) (string, error) {
	if c.r.opts.Foreign == nil {
		return execNsfault(ctx, c.cli, n.containerID, args...)
	}
	return c.sidecarNsfault(ctx, n, args...)
}

// sidecarNsfault runs `gregor nsfault args...` in a one-shot container of
// gregor's image that shares n's network namespace, with CAP_NET_ADMIN; it
// is labelled with the run, so Close and gregor clean find it whatever
// happens. A fresh sidecar each time: a restarted node has a new namespace.
func (c *Cluster) sidecarNsfault(ctx context.Context, n *node, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, execTimeout)
	defer cancel()
	cmd := append([]string{"nsfault"}, args...)
	what := "sidecar " + strings.Join(cmd, " ")
	labels := map[string]string{}
	for k, v := range c.labels {
		labels[k] = v
	}
	created, err := c.cli.ContainerCreate(ctx, &container.Config{Image: c.gregorImage, Cmd: cmd, Labels: labels},
		&container.HostConfig{NetworkMode: container.NetworkMode("container:" + n.containerID), CapAdd: []string{"NET_ADMIN"}},
		nil, nil, "")
	if err != nil {
		return "", fmt.Errorf("%s: create: %w", what, err)
	}
	defer func() {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		c.cli.ContainerRemove(rctx, created.ID, container.RemoveOptions{Force: true})
		rcancel()
	}()
	waitC, errC := c.cli.ContainerWait(ctx, created.ID, container.WaitConditionNextExit)
	if err := c.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return "", fmt.Errorf("%s: start: %w", what, err)
	}
	var code int64
	select {
	case w := <-waitC:
		code = w.StatusCode
	case err := <-errC:
		return "", fmt.Errorf("%s: wait: %w", what, err)
	}
	rc, err := c.cli.ContainerLogs(ctx, created.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return "", fmt.Errorf("%s: logs: %w", what, err)
	}
	defer rc.Close()
	var stdout, stderr bytes.Buffer
	stdcopy.StdCopy(&limited{&stdout, maxExecOutput}, &limited{&stderr, maxExecOutput}, rc)
	if code != 0 {
		return stdout.String(), fmt.Errorf("%s exited %d: %s", what, code, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
