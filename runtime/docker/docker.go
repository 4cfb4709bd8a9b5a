// Package docker runs a gregor cluster as containers on a Docker engine: an
// image FROM scratch holding the static gregor binary (built locally, no
// registry reached), a private bridge network with one fixed IP per node, and
// one container per node created with testcontainers-go. Kill, stop, pause and
// logs go through the Docker API; partitions and slow links are applied inside
// each container's network namespace by `gregor nsfault` run with docker exec.
//
// Everything it creates carries the labels below, so `gregor clean` (Clean)
// can remove what a crashed run left behind. testcontainers' Ryuk reaper is
// disabled: its image cannot be pulled here, and cleanup is by label instead.
package docker

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/docker/docker/client"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"gregor/runtime"
)

// Labels on every container, network and image the runtime creates.
const (
	LabelManaged = "gregor.managed" // always "true"
	LabelCluster = "gregor.cluster" // ClusterSpec.Name
	LabelRun     = "gregor.run"     // one id per Start
	LabelNode    = "gregor.node"    // node id, on containers
)

// DataDir is the node's data directory inside the container; it lives in the
// container's writable layer, so kill + start keeps it.
const DataDir = "/data"

// FilesDir is where each container holds ClusterSpec.Files (its writable
// layer: kill + start keeps them; outside DataDir, which is the broker's).
const FilesDir = "/gregor-files"

// binPath is where the image holds the gregor binary.
const binPath = "/gregor"

// pingTimeout bounds Available: an engine that takes longer is not answering.
const pingTimeout = 5 * time.Second

func init() {
	// Ryuk's image cannot be pulled here; without this testcontainers tries.
	// It must be set before testcontainers reads its config (once, lazily).
	os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
}

// Options tune the runtime. The zero value is ready to use.
type Options struct {
	// Log receives progress lines (image build, boot timings); nil discards.
	Log io.Writer
	// ForceDisconnectPartitions makes Partition use `docker network
	// disconnect` even where nftables works (to exercise the fallback).
	ForceDisconnectPartitions bool
	// Foreign, if set, runs another image than gregor's own (foreign.go).
	Foreign *Foreign
}

// Runtime is the docker runtime. It implements runtime.Runtime.
type Runtime struct {
	opts Options
	// logMu serialises writes to opts.Log: nodes boot in parallel.
	logMu sync.Mutex
}

var _ runtime.Runtime = (*Runtime)(nil)

// New returns a docker runtime; it does not contact the engine yet.
func New(opts Options) *Runtime {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	return &Runtime{opts: opts}
}

func (r *Runtime) Name() string { return "docker" }

func (r *Runtime) logf(format string, args ...any) {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	fmt.Fprintf(r.opts.Log, "docker: "+format+"\n", args...)
}

// tcLogger routes testcontainers' chatter to Options.Log.
type tcLogger struct{ r *Runtime }

func (l tcLogger) Printf(format string, args ...any) { l.r.logf("testcontainers: "+format, args...) }

var _ tclog.Logger = tcLogger{}

// newClient talks to the engine named by DOCKER_HOST (default: the local socket).
func newClient() (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	return cli, nil
}

// engineHost is what the error messages name as the engine's address.
func engineHost() string {
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return h
	}
	return client.DefaultDockerHost
}

// Available returns nil if a Docker engine answers, else an error naming the fix.
func (r *Runtime) Available(ctx context.Context) error {
	cli, err := newClient()
	if err != nil {
		return fmt.Errorf("no Docker engine answers at %s (%v): start dockerd, or set DOCKER_HOST, or use --runtime process", engineHost(), err)
	}
	defer cli.Close()
	return ping(ctx, cli)
}

func ping(ctx context.Context, cli *client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		return fmt.Errorf("no Docker engine answers at %s (%v): start dockerd, or set DOCKER_HOST, or use --runtime process", engineHost(), err)
	}
	return nil
}
