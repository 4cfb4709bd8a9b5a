package docker

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
)

// execTimeout bounds one `gregor nsfault` run inside a container.
const execTimeout = 15 * time.Second

// maxExecOutput bounds what is kept of an exec's output.
const maxExecOutput = 64 << 10

// execNsfault runs `/gregor nsfault args...` in the container and returns
// its stdout; a non-zero exit is an error carrying stderr.
func execNsfault(ctx context.Context, cli *client.Client, containerID string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, execTimeout)
	defer cancel()
	cmd := append([]string{binPath, "nsfault"}, args...)
	ex, err := cli.ContainerExecCreate(ctx, containerID, container.ExecOptions{
		Cmd: cmd, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return "", fmt.Errorf("exec %s: %w", strings.Join(cmd, " "), err)
	}
	att, err := cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return "", fmt.Errorf("exec %s: attach: %w", strings.Join(cmd, " "), err)
	}
	defer att.Close()
	var stdout, stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(&limited{&stdout, maxExecOutput}, &limited{&stderr, maxExecOutput}, att.Reader)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return "", fmt.Errorf("exec %s: read output: %w", strings.Join(cmd, " "), err)
		}
	case <-ctx.Done():
		return "", fmt.Errorf("exec %s: %w", strings.Join(cmd, " "), ctx.Err())
	}
	// The output can close a moment before the engine records the exit.
	var ins container.ExecInspect
	for i := 0; ; i++ {
		ins, err = cli.ContainerExecInspect(ctx, ex.ID)
		if err != nil {
			return "", fmt.Errorf("exec %s: inspect: %w", strings.Join(cmd, " "), err)
		}
		if !ins.Running {
			break
		}
		if i >= 100 {
			return "", fmt.Errorf("exec %s: still running after its output closed", strings.Join(cmd, " "))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ins.ExitCode != 0 {
		return stdout.String(), fmt.Errorf("%s exited %d: %s", strings.Join(cmd, " "), ins.ExitCode, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// limited keeps at most n bytes and discards the rest without failing the copy.
type limited struct {
	b *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		if len(p) > room {
			l.b.Write(p[:room])
		} else {
			l.b.Write(p)
		}
	}
	return len(p), nil
}
