package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	dnetwork "github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/testcontainers/testcontainers-go"

	"gregor/runtime"
)

// closeTimeout bounds the cleanup Start does itself when it fails.
const closeTimeout = 60 * time.Second

// createTimeout bounds one network or container create. A create is not
// cancelled with the run (see createNode); this bound is what a cancelled
// boot may wait for it.
const createTimeout = 60 * time.Second

// Cluster is a running docker cluster. It implements runtime.Cluster.
type Cluster struct {
	r     *Runtime
	cli   *client.Client
	name  string
	runID string
	image string // the nodes' image
	// gregorImage holds the gregor binary (nsfault): image, unless Foreign.
	gregorImage string
	network     string // network ID
	labels      map[string]string
	reaper      *runtime.Reaper // removes the run's objects if this process dies first
	nodes       []*node         // sorted by ID
	byID        map[int32]*node
	timings     Timings

	// mu guards the fault state below and closed. It is never held across a
	// Docker call that waits for a container (exec, stop), only across the
	// bookkeeping, so faults on different nodes proceed in parallel.
	mu sync.Mutex
	// drops[a][b]: a drops b's packets. Invariant: drops[a][b] == drops[b][a]
	// (Partition merges runtime.Cuts, which tests prove symmetric, and Heal
	// clears the whole map).
	drops map[int32]map[int32]bool
	// slow[id] is the Slow in force on a node, re-applied when it restarts.
	slow map[int32]slowSpec
	// disconnected: nodes cut off by the fallback (network disconnect).
	disconnected map[int32]bool
	caps         runtime.Capabilities
	probe        probeResult
	closed       bool
}

type node struct {
	info        runtime.NodeInfo
	containerID string
	ip          net.IP

	// mu serialises pause-state changes: Pause/Resume and the freezer.
	mu         sync.Mutex
	userPaused bool     // Pause was called and Resume not yet
	frozen     bool     // the freezer holds the container paused now
	freezer    *freezer // non-nil while Slow emulates delay by freezing
}

type slowSpec struct {
	delay, jitter time.Duration
	lossPct       float64
}

// Timings are how long Start's phases took, for reports and the boot budget.
type Timings struct {
	Image, Network, Containers, Probe, Ready, Total time.Duration
	ImageBuilt                                      bool
}

var _ runtime.Cluster = (*Cluster)(nil)

func newRunID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Start boots spec: image, network, containers, then waits for spec.Ready.
// On any failure, or if ctx is cancelled, it removes what it created.
func (r *Runtime) Start(ctx context.Context, spec runtime.ClusterSpec) (runtime.Cluster, error) {
	c, err := r.StartCluster(ctx, spec)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// StartCluster is Start returning the concrete type (for Timings and RunID).
func (r *Runtime) StartCluster(ctx context.Context, spec runtime.ClusterSpec) (*Cluster, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	cli, err := newClient()
	if err != nil {
		return nil, err
	}
	if err := ping(ctx, cli); err != nil {
		cli.Close()
		return nil, err
	}
	tag, built, err := r.EnsureImage(ctx, spec.Binary)
	if err != nil {
		cli.Close()
		return nil, err
	}
	c := &Cluster{
		r: r, cli: cli, name: spec.Name, runID: newRunID(), image: tag, gregorImage: tag,
		byID:         make(map[int32]*node, len(spec.Nodes)),
		drops:        make(map[int32]map[int32]bool),
		slow:         make(map[int32]slowSpec),
		disconnected: make(map[int32]bool),
	}
	c.timings.Image, c.timings.ImageBuilt = time.Since(t0), built
	if f := r.opts.Foreign; f != nil {
		c.image = f.Image
		if err := c.checkForeignImage(ctx); err != nil {
			cli.Close()
			return nil, err
		}
	}
	c.labels = map[string]string{}
	for k, v := range spec.Labels {
		c.labels[k] = v
	}
	c.labels[LabelManaged] = "true"
	c.labels[LabelCluster] = spec.Name
	c.labels[LabelRun] = c.runID
	// The reaper starts before the first object exists, so that from here on
	// a harness killed at any moment leaves nothing behind.
	if c.reaper, err = runtime.StartReaper(reaperKind, c.runID); err != nil {
		cli.Close()
		return nil, err
	}

	if err := c.boot(ctx, spec); err != nil {
		cctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if cerr := c.Close(cctx); cerr != nil {
			err = fmt.Errorf("%w (and cleanup failed: %v; run `gregor clean`)", err, cerr)
		}
		return nil, err
	}
	c.timings.Total = time.Since(t0)
	r.logf("cluster %s run %s: %d nodes ready in %v (image %v, network %v, containers %v, probe %v, ready %v)",
		c.name, c.runID, len(c.nodes), c.timings.Total.Round(time.Millisecond), c.timings.Image.Round(time.Millisecond),
		c.timings.Network.Round(time.Millisecond), c.timings.Containers.Round(time.Millisecond),
		c.timings.Probe.Round(time.Millisecond), c.timings.Ready.Round(time.Millisecond))
	return c, nil
}

func (c *Cluster) boot(ctx context.Context, spec runtime.ClusterSpec) error {
	t := time.Now()
	nw, subnet, err := c.r.createNetwork(ctx, c.runID, c.labels)
	if err != nil {
		return err
	}
	c.network = nw.ID
	c.timings.Network = time.Since(t)

	specs := append([]runtime.NodeSpec(nil), spec.Nodes...)
	sort.Slice(specs, func(i, j int) bool { return specs[i].ID < specs[j].ID })
	infos := make([]runtime.NodeInfo, len(specs))
	for i, ns := range specs {
		ip := hostIP(subnet, firstHost+i)
		infos[i] = runtime.NodeInfo{
			ID: ns.ID, Host: ip.String(), ControllerOnly: ns.ControllerOnly,
			KafkaAddr: net.JoinHostPort(ip.String(), strconv.Itoa(spec.KafkaPort)),
			RaftAddr:  net.JoinHostPort(ip.String(), strconv.Itoa(spec.RaftPort)),
		}
		n := &node{info: infos[i], ip: ip}
		c.nodes = append(c.nodes, n)
		c.byID[ns.ID] = n
	}

	t = time.Now()
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i := range specs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = c.createNode(ctx, nw.Name, c.nodes[i], specs[i], infos, spec.Files)
		}(i)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c.timings.Containers = time.Since(t)

	t = time.Now()
	if err := c.probeFaults(ctx); err != nil {
		return err
	}
	c.timings.Probe = time.Since(t)

	t = time.Now()
	if f := c.r.opts.Foreign; f != nil && f.ReadyLog != nil {
		timeout := spec.ReadyTimeout
		if timeout <= 0 {
			timeout = runtime.DefaultReadyTimeout
		}
		lctx, cancel := context.WithTimeout(ctx, timeout)
		err := c.waitReadyLog(lctx, f.ReadyLog)
		cancel()
		if err != nil {
			return err
		}
	}
	if spec.Ready != nil {
		if err := runtime.WaitReady(ctx, spec, c, ""); err != nil {
			return err
		}
	}
	c.timings.Ready = time.Since(t)
	return ctx.Err()
}

// createNode creates and starts one node's container.
//
// The create is detached from ctx's cancellation (bounded by createTimeout):
// a create request that reached the engine finishes there even when the
// client stops waiting, and a container whose create had not answered when
// the clean-up listed the run's objects would outlive it. Waiting out the
// create makes its container known before boot returns, so Close finds it;
// ctx is honoured right after.
func (c *Cluster) createNode(ctx context.Context, networkName string, n *node, ns runtime.NodeSpec, all []runtime.NodeInfo, files []runtime.File) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("node %d: %w", ns.ID, err)
	}
	v := runtime.VarsFor(n.info, all, DataDir)
	v.Files = runtime.FilePaths(files, FilesDir)
	args, err := runtime.ExpandArgs(ns.Args, v)
	if err != nil {
		return fmt.Errorf("node %d: %w", ns.ID, err)
	}
	labels := map[string]string{LabelNode: strconv.Itoa(int(ns.ID))}
	for k, v := range c.labels {
		labels[k] = v
	}
	ip := n.ip.String()
	cmd, env := append([]string{"broker"}, args...), ns.Env
	var fn ForeignNode
	if c.r.opts.Foreign != nil {
		if fn, err = c.foreignContainer(n, all); err != nil {
			return err
		}
		cmd, env = fn.Cmd, fn.Env
	}
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:    c.image,
			Name:     fmt.Sprintf("gregor-%s-%s-n%d", c.name, c.runID, ns.ID),
			Cmd:      cmd,
			Env:      env,
			Labels:   labels,
			Networks: []string{networkName},
			ConfigModifier: func(cfg *container.Config) {
				cfg.Hostname = fmt.Sprintf("n%d", ns.ID)
				if f := c.r.opts.Foreign; f != nil {
					if fn.Entrypoint != nil {
						cfg.Entrypoint = fn.Entrypoint
					}
					if fn.User != "" {
						cfg.User = fn.User
					}
					if f.DataDir != "" {
						// An anonymous volume: removed with the container.
						cfg.Volumes = map[string]struct{}{f.DataDir: {}}
					}
				}
			},
			HostConfigModifier: func(hc *container.HostConfig) {
				// nsfault needs CAP_NET_ADMIN for nftables and qdiscs.
				hc.CapAdd = append(hc.CapAdd, "NET_ADMIN")
			},
			EndpointSettingsModifier: func(eps map[string]*dnetwork.EndpointSettings) {
				if ep, ok := eps[networkName]; ok {
					ep.IPAMConfig = &dnetwork.EndpointIPAMConfig{IPv4Address: ip}
				}
			},
		},
		Logger: tcLogger{c.r},
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	ctr, err := testcontainers.GenericContainer(cctx, req)
	cancel()
	if ctr != nil {
		n.containerID = ctr.GetContainerID()
	}
	if err != nil {
		return fmt.Errorf("node %d: %w", ns.ID, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("node %d: %w", ns.ID, err)
	}
	// Before the node starts: its broker reads them at boot.
	if err := c.putNodeFiles(ctx, n, files); err != nil {
		return err
	}
	if err := ctr.Start(ctx); err != nil {
		return fmt.Errorf("node %d: start: %w", ns.ID, err)
	}
	return nil
}

// RunID is the id in every object's gregor.run label.
func (c *Cluster) RunID() string { return c.runID }

// Image is the image tag the nodes run.
func (c *Cluster) Image() string { return c.image }

// Timings says how long Start took, by phase.
func (c *Cluster) Timings() Timings { return c.timings }

func (c *Cluster) Name() string { return c.name }

func (c *Cluster) Nodes() []runtime.NodeInfo {
	out := make([]runtime.NodeInfo, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.info
	}
	return out
}

// Bootstrap is every node's Kafka listener; a foreign image's
// controller-only nodes have none and are left out.
func (c *Cluster) Bootstrap() []string {
	var out []string
	for _, n := range c.nodes {
		if c.r.opts.Foreign != nil && n.info.ControllerOnly {
			continue
		}
		out = append(out, n.info.KafkaAddr)
	}
	return out
}

func (c *Cluster) node(id int32) (*node, error) {
	n, ok := c.byID[id]
	if !ok {
		return nil, fmt.Errorf("cluster %s has no node %d", c.name, id)
	}
	return n, nil
}
