// Package process is the runtime without Docker: each broker is a local
// `gregor broker` process with its own loopback IP (127.a.b.N, one /24 per
// cluster), so nodes look like separate hosts. Kill, stop and pause are real
// signals (SIGKILL, SIGTERM, SIGSTOP/SIGCONT). Partitions and slow links are
// emulated by the brokers' own fault layer (cluster/faultnet), driven through
// a control file in each node's data directory; reports say so.
package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"gregor/cluster/faultnet"
	"gregor/cluster/faultpoint"
	"gregor/cluster/nodefault"
	"gregor/runtime"
)

// Runtime starts process clusters under Dir (a temporary directory if empty).
type Runtime struct {
	Dir string
}

// Name implements runtime.Runtime.
func (Runtime) Name() string { return "process" }

// Available implements runtime.Runtime: processes always work.
func (Runtime) Available(context.Context) error { return nil }

type node struct {
	info    runtime.NodeInfo
	spec    runtime.NodeSpec
	dir     string
	logPath string
	args    []string

	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
	// dying: SIGKILL or SIGTERM was sent to cmd. A Kill whose context ended
	// returns before the exit, and a Start right after it (a fault's undo)
	// must wait for that exit, not take the dying process for a running
	// one and leave the node down.
	dying bool
	rules faultnet.Rules
	slow  faultnet.Rules
}

// Cluster is a running process cluster.
type Cluster struct {
	spec    runtime.ClusterSpec
	dir     string
	ownsDir bool
	reaper  *runtime.Reaper // removes dir if this process dies first (ownsDir)

	mu     sync.Mutex
	nodes  map[int32]*node
	order  []int32
	closed bool
}

// ipBlock picks 127.a.b.0/24 for a cluster. Loopback is 127/8 on Linux, so
// any of these is ours; a random block keeps concurrent clusters apart.
func ipBlock() string {
	return fmt.Sprintf("127.%d.%d", 1+rand.IntN(254), rand.IntN(255))
}

// Start implements runtime.Runtime.
func (r Runtime) Start(ctx context.Context, spec runtime.ClusterSpec) (runtime.Cluster, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(spec.Binary); err != nil {
		return nil, fmt.Errorf("gregor binary %s: %w (build it with `make build`)", spec.Binary, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := &Cluster{spec: spec, nodes: map[int32]*node{}}
	if r.Dir != "" {
		c.dir = filepath.Join(r.Dir, spec.Name)
	} else {
		d, err := os.MkdirTemp("", tempPrefix+spec.Name+"-")
		if err != nil {
			return nil, err
		}
		c.dir, c.ownsDir = d, true
		// Brokers die with this process (Pdeathsig, in Start); the directory
		// it made is left to a reaper, armed before anything is written.
		if c.reaper, err = runtime.StartReaper(reaperKind, d); err != nil {
			os.RemoveAll(d)
			return nil, err
		}
	}
	if err := c.boot(ctx, spec); err != nil {
		return nil, err
	}
	return c, nil
}

// boot creates the nodes' directories, starts every broker and waits for
// spec.Ready; on any failure or cancellation it closes what it started.
func (c *Cluster) boot(ctx context.Context, spec runtime.ClusterSpec) (err error) {
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
			defer cancel()
			if cerr := c.Close(cctx); cerr != nil {
				err = fmt.Errorf("%w (and clean-up failed: %v)", err, cerr)
			}
		}
	}()
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	block := ipBlock()
	var infos []runtime.NodeInfo
	for _, ns := range spec.Nodes {
		host := block + "." + strconv.Itoa(int(ns.ID))
		infos = append(infos, runtime.NodeInfo{ID: ns.ID, Host: host, ControllerOnly: ns.ControllerOnly,
			KafkaAddr: net.JoinHostPort(host, strconv.Itoa(spec.KafkaPort)),
			RaftAddr:  net.JoinHostPort(host, strconv.Itoa(spec.RaftPort))})
	}
	for i, ns := range spec.Nodes {
		dir := filepath.Join(c.dir, fmt.Sprintf("node-%d", ns.ID))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		v := runtime.VarsFor(infos[i], infos, filepath.Join(dir, "data"))
		v.Files = runtime.FilePaths(spec.Files, "") // the brokers share this host
		args, err := runtime.ExpandArgs(ns.Args, v)
		if err != nil {
			return err
		}
		c.nodes[ns.ID] = &node{info: infos[i], spec: ns, dir: dir, logPath: filepath.Join(dir, "broker.log"), args: args}
		c.order = append(c.order, ns.ID)
	}
	for _, id := range c.order {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := c.Start(ctx, id); err != nil {
			return err
		}
	}
	if spec.Ready != nil {
		if err := runtime.WaitReady(ctx, spec, c, "broker logs under "+c.dir); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// Dir is where node data and logs live.
func (c *Cluster) Dir() string { return c.dir }

// DataDir is a node's data directory.
func (c *Cluster) DataDir(id int32) string {
	return filepath.Join(c.dir, fmt.Sprintf("node-%d", id), "data")
}

func (c *Cluster) node(id int32) (*node, error) {
	n := c.nodes[id]
	if n == nil {
		return nil, fmt.Errorf("no node %d in cluster %s", id, c.spec.Name)
	}
	return n, nil
}

// Pid is node id's process id; 0 when it does not run.
func (c *Cluster) Pid(id int32) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[id]
	if n == nil || n.cmd == nil || isDone(n.exited) {
		return 0
	}
	return n.cmd.Process.Pid
}

// Name implements runtime.Cluster.
func (c *Cluster) Name() string { return c.spec.Name }

// Nodes implements runtime.Cluster.
func (c *Cluster) Nodes() []runtime.NodeInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]runtime.NodeInfo, 0, len(c.order))
	for _, id := range c.order {
		out = append(out, c.nodes[id].info)
	}
	return out
}

// Bootstrap implements runtime.Cluster.
func (c *Cluster) Bootstrap() []string {
	var out []string
	for _, n := range c.Nodes() {
		out = append(out, n.KafkaAddr)
	}
	return out
}

// Start implements runtime.Cluster: (re)starts a node's process on its data,
// once a process it was asked to end has exited.
func (c *Cluster) Start(ctx context.Context, id int32) error {
	if err := c.awaitDeath(ctx, id); err != nil {
		return err
	}
	if err := c.awaitOutsideKill(ctx, id); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("cluster closed")
	}
	n, err := c.node(id)
	if err != nil {
		return err
	}
	if n.cmd != nil && !isDone(n.exited) {
		if n.dying {
			return fmt.Errorf("node %d: signalled again while starting", id)
		}
		return nil // already running
	}
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.spec.Binary, append([]string{"broker"}, n.args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = os.Environ()
	for k, v := range n.spec.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// Own process group: signals reach the broker only, and Ctrl-C at the
	// terminal does not kill brokers behind the harness's back. Pdeathsig:
	// the broker dies with the harness however the harness dies (SIGKILL
	// included), so a killed `gregor run` or `gregor up` never leaves
	// brokers listening. Linux sends it when the thread that started the
	// child exits; Go ends threads only under LockOSThread, which this
	// package never holds.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting node %d: %w", id, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(exited)
	}()
	n.cmd, n.exited, n.paused, n.dying = cmd, exited, false, false
	return nil
}

// awaitOutsideKill waits, bounded by ctx, for a node's process that is
// exiting although this runtime did not signal it: someone else's SIGKILL
// (a fault file's `kill -9 $(gregor node pid N)` against `gregor up`), seen
// before its Wait returned. Without it a start right after such a kill
// (the run's heal) took the dying process for a running node and left the
// node down for good (MEASUREMENTS 11.1).
func (c *Cluster) awaitOutsideKill(ctx context.Context, id int32) error {
	c.mu.Lock()
	n, err := c.node(id)
	if err != nil || n.cmd == nil || isDone(n.exited) || n.dying || !exiting(n.cmd.Process.Pid) {
		c.mu.Unlock()
		return err
	}
	exited := n.exited
	c.mu.Unlock()
	return waitExit(ctx, exited)
}

// exiting reports whether pid, a child not reaped yet, is on its way out:
// a zombie, a SIGKILL pending (process-wide or its main thread's), or
// PF_EXITING set (the kill taken, do_exit begun). Linux's /proc; a pid
// /proc no longer has is exiting too.
func exiting(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// "pid (comm) state ppid pgrp session tty tpgid flags ...": comm may
	// hold spaces, so fields count from its closing parenthesis.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	const pfExiting = 0x4
	if len(f) > 6 {
		flags, _ := strconv.ParseUint(f[6], 10, 64)
		if f[0] == "Z" || f[0] == "X" || flags&pfExiting != 0 {
			return true
		}
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return true
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		if k != "SigPnd" && k != "ShdPnd" {
			continue
		}
		if m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && m&(1<<(uint(syscall.SIGKILL)-1)) != 0 {
			return true
		}
	}
	return false
}

// awaitDeath waits, bounded by ctx, for a node's process that was sent
// SIGKILL or SIGTERM to exit.
func (c *Cluster) awaitDeath(ctx context.Context, id int32) error {
	c.mu.Lock()
	n, err := c.node(id)
	if err != nil || n.cmd == nil || !n.dying {
		c.mu.Unlock()
		return err
	}
	exited := n.exited
	c.mu.Unlock()
	if err := waitExit(ctx, exited); err != nil {
		return fmt.Errorf("node %d: the killed process has not exited: %w", id, err)
	}
	return nil
}

func isDone(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (c *Cluster) signal(id int32, sig syscall.Signal) (*node, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.node(id)
	if err != nil {
		return nil, err
	}
	if n.cmd == nil || isDone(n.exited) {
		return n, nil
	}
	if err := syscall.Kill(n.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return n, err
	}
	if sig == syscall.SIGKILL || sig == syscall.SIGTERM {
		n.dying = true
	}
	return n, nil
}

// Kill implements runtime.Cluster (SIGKILL; a paused process dies too).
func (c *Cluster) Kill(ctx context.Context, id int32) error {
	n, err := c.signal(id, syscall.SIGKILL)
	if err != nil || n.cmd == nil {
		return err
	}
	return waitExit(ctx, n.exited)
}

// Stop implements runtime.Cluster: SIGTERM (a controlled shutdown), then
// SIGKILL after grace.
func (c *Cluster) Stop(ctx context.Context, id int32, grace time.Duration) error {
	c.Resume(ctx, id) // a paused process cannot act on SIGTERM
	n, err := c.signal(id, syscall.SIGTERM)
	if err != nil || n.cmd == nil {
		return err
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-n.exited:
		return nil
	case <-t.C:
		return c.Kill(ctx, id)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func waitExit(ctx context.Context, exited chan struct{}) error {
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Pause implements runtime.Cluster (SIGSTOP).
func (c *Cluster) Pause(ctx context.Context, id int32) error {
	n, err := c.signal(id, syscall.SIGSTOP)
	if err == nil && n.cmd != nil {
		c.mu.Lock()
		n.paused = true
		c.mu.Unlock()
	}
	return err
}

// Resume implements runtime.Cluster (SIGCONT).
func (c *Cluster) Resume(ctx context.Context, id int32) error {
	n, err := c.signal(id, syscall.SIGCONT)
	if err == nil && n.cmd != nil {
		c.mu.Lock()
		n.paused = false
		c.mu.Unlock()
	}
	return err
}

// Partition implements runtime.Cluster: each node drops traffic with every
// node of another group, through its fault layer. Partitions accumulate.
func (c *Cluster) Partition(ctx context.Context, groups [][]int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	groupOf := map[int32]int{}
	for g, ids := range groups {
		for _, id := range ids {
			if _, err := c.node(id); err != nil {
				return err
			}
			groupOf[id] = g
		}
	}
	for a, ga := range groupOf {
		na := c.nodes[a]
		for b, gb := range groupOf {
			if ga != gb && !slices.Contains(na.rules.Drop, c.nodes[b].info.Host) {
				na.rules.Drop = append(na.rules.Drop, c.nodes[b].info.Host)
			}
		}
		if err := c.writeRules(na); err != nil {
			return err
		}
	}
	return nil
}

// writeRules publishes a node's faults. Caller holds mu.
func (c *Cluster) writeRules(n *node) error {
	r := n.rules
	r.DelayMs, r.JitterMs, r.LossPct = n.slow.DelayMs, n.slow.JitterMs, n.slow.LossPct
	dataDir := filepath.Join(n.dir, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	return faultnet.WriteRules(filepath.Join(dataDir, faultnet.FileName), r)
}

// Heal implements runtime.Cluster.
func (c *Cluster) Heal(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, n := range c.nodes {
		n.rules, n.slow = faultnet.Rules{}, faultnet.Rules{}
		errs = append(errs, c.writeRules(n))
	}
	return errors.Join(errs...)
}

// Slow implements runtime.Cluster.
func (c *Cluster) Slow(ctx context.Context, id int32, delay, jitter time.Duration, lossPct float64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.node(id)
	if err != nil {
		return err
	}
	n.slow = faultnet.Rules{DelayMs: int(delay / time.Millisecond), JitterMs: int(jitter / time.Millisecond), LossPct: lossPct}
	return c.writeRules(n)
}

// Unslow implements runtime.Cluster.
func (c *Cluster) Unslow(ctx context.Context, id int32) error {
	return c.Slow(ctx, id, 0, 0, 0)
}

// Logs implements runtime.Cluster.
func (c *Cluster) Logs(ctx context.Context, id int32) (io.ReadCloser, error) {
	c.mu.Lock()
	n, err := c.node(id)
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return os.Open(n.logPath)
}

// Status implements runtime.Cluster.
func (c *Cluster) Status(ctx context.Context, id int32) (runtime.NodeState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.node(id)
	if err != nil {
		return runtime.StateUnknown, err
	}
	switch {
	case n.cmd == nil || isDone(n.exited):
		return runtime.StateStopped, nil
	case n.paused:
		return runtime.StatePaused, nil
	}
	return runtime.StateRunning, nil
}

// Capabilities implements runtime.Cluster.
func (c *Cluster) Capabilities() runtime.Capabilities {
	return runtime.Capabilities{
		runtime.FaultKill:      {Support: runtime.Real, How: "SIGKILL to the broker process"},
		runtime.FaultStop:      {Support: runtime.Real, How: "SIGTERM (controlled shutdown), SIGKILL after the grace period"},
		runtime.FaultPause:     {Support: runtime.Real, How: "SIGSTOP / SIGCONT"},
		runtime.FaultPartition: {Support: runtime.Emulated, How: "brokers' fault layer stalls connections to blocked peers (no firewall on a shared host)"},
		runtime.FaultDelay:     {Support: runtime.Emulated, How: "brokers' fault layer delays each write"},
		runtime.FaultLoss:      {Support: runtime.Emulated, How: "brokers' fault layer adds a 200 ms retransmission delay to that share of writes"},
	}
}

// Close implements runtime.Cluster: kills every process and, when the
// cluster made its own temporary directory, removes it.
func (c *Cluster) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	var waits []chan struct{}
	for _, n := range c.nodes {
		if n.cmd != nil && !isDone(n.exited) {
			syscall.Kill(n.cmd.Process.Pid, syscall.SIGKILL)
			waits = append(waits, n.exited)
		}
	}
	c.mu.Unlock()
	for _, w := range waits {
		if err := waitExit(ctx, w); err != nil {
			return err
		}
	}
	if !c.ownsDir {
		return nil
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return err // the reaper stays armed and tries again at exit
	}
	return c.reaper.Release(ctx)
}

// tempPrefix starts the name of every directory the runtime makes itself;
// the reaper removes nothing else.
const tempPrefix = "gregor-"

// reaperKind names the process runtime's reaper (runtime.StartReaper).
const reaperKind = "process"

// closeTimeout bounds the clean-up of a boot that failed.
const closeTimeout = 30 * time.Second

// reapDir removes a cluster directory the runtime made, once the harness
// that made it died. Its brokers die with the harness (Pdeathsig); a broker
// that is still exiting may write a last line, so removal is retried.
func reapDir(ctx context.Context, dir string) error {
	if filepath.Dir(dir) != filepath.Clean(os.TempDir()) || !strings.HasPrefix(filepath.Base(dir), tempPrefix) {
		return fmt.Errorf("refusing to remove %s: not a %s* directory under %s", dir, tempPrefix, os.TempDir())
	}
	var err error
	for try := 0; try < 10; try++ {
		if err = os.RemoveAll(dir); err == nil {
			if _, serr := os.Stat(dir); errors.Is(serr, os.ErrNotExist) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return err
}

func init() { runtime.ServeReaper(reaperKind, reapDir) }

// FaultPoints says the process runtime arms fault points
// (runtime.CheckFaultPoints).
func (Runtime) FaultPoints() bool { return true }

// ArmFaultPoints implements runtime.FaultPointer: node id's control file,
// <data>/faultpoints.json, replaced whole; the broker polls it.
func (c *Cluster) ArmFaultPoints(ctx context.Context, id int32, arms []faultpoint.Arm) error {
	if _, err := c.node(id); err != nil {
		return err
	}
	dir := c.DataDir(id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return faultpoint.WriteControl(filepath.Join(dir, faultpoint.FileName), faultpoint.Control{Arms: arms})
}

// FaultPointFirings implements runtime.FaultPointer: node id's firings file.
func (c *Cluster) FaultPointFirings(ctx context.Context, id int32) ([]faultpoint.Firing, error) {
	if _, err := c.node(id); err != nil {
		return nil, err
	}
	return faultpoint.ReadFirings(filepath.Join(c.DataDir(id), faultpoint.FiringsName))
}

// NodeFaults says the process runtime arms disk and clock faults
// (runtime.CheckNodeFaults).
func (Runtime) NodeFaults() bool { return true }

// ArmNodeFaults implements runtime.NodeFaulter: node id's control file,
// <data>/nodefaults.json, replaced whole; the broker polls it.
func (c *Cluster) ArmNodeFaults(ctx context.Context, id int32, nc nodefault.Control) error {
	if _, err := c.node(id); err != nil {
		return err
	}
	dir := c.DataDir(id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return nodefault.WriteControl(filepath.Join(dir, nodefault.FileName), nc)
}

// NodeFaultEvents implements runtime.NodeFaulter: node id's events file.
func (c *Cluster) NodeFaultEvents(ctx context.Context, id int32) ([]nodefault.Event, error) {
	if _, err := c.node(id); err != nil {
		return nil, err
	}
	return nodefault.ReadEvents(filepath.Join(c.DataDir(id), nodefault.EventsName))
}
