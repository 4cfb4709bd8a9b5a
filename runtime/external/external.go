// Package external is the runtime that boots nothing: it points the
// harness at a Kafka-protocol cluster that already runs (--bootstrap), and
// makes every fault by running the command a fault file (--faults) gives for
// that node and verb: `docker kill kafka-1`, `ssh node1 sudo systemctl kill
// kafka`, `gregor node kill 1 --cluster demo`. Each command runs with a
// timeout; its exit status and output go into the history with the nemesis
// operation that ran it (runtime.CommandRecorder), and a command that fails
// makes that operation an error.
package external

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/history"
	"gregor/runtime"

	"gregor/internal/dialer"
)

// Options configure the runtime.
type Options struct {
	// Bootstrap are the cluster's Kafka listeners (host:port).
	Bootstrap []string
	// Faults say how to make each fault on each node; nil: no faults
	// (--nemesis none).
	Faults *FaultFile
	// Wait bounds the wait for the bootstrap servers to answer (default
	// DefaultWait).
	Wait time.Duration
}

// DefaultWait bounds the first contact with the cluster.
const DefaultWait = 15 * time.Second

// MaxOutput bounds the output of one command kept in the history.
const MaxOutput = 4096

// Runtime is the external runtime. It implements runtime.Attached.
type Runtime struct {
	opts Options

	mu      sync.Mutex
	brokers []runtime.NodeInfo
}

var _ runtime.Attached = (*Runtime)(nil)

// New checks the options (a bootstrap is needed) and returns the runtime;
// it does not contact the cluster yet.
func New(o Options) (*Runtime, error) {
	if len(o.Bootstrap) == 0 {
		return nil, errors.New("--runtime external needs --bootstrap HOST:PORT[,HOST:PORT...]: the cluster's Kafka listeners")
	}
	for _, b := range o.Bootstrap {
		if _, _, err := net.SplitHostPort(b); err != nil {
			return nil, fmt.Errorf("--bootstrap %q: give HOST:PORT (%v)", b, err)
		}
	}
	if o.Wait <= 0 {
		o.Wait = DefaultWait
	}
	if o.Faults == nil {
		o.Faults = &FaultFile{Path: NoFaultFile, Timeout: DefaultTimeout}
	}
	return &Runtime{opts: o}, nil
}

// Name implements runtime.Runtime.
func (*Runtime) Name() string { return "external" }

// ForeignBrokers implements runtime.ForeignBrokers: the settings are the
// cluster's.
func (*Runtime) ForeignBrokers() bool { return true }

// Available implements runtime.Runtime: a bootstrap server answers.
func (r *Runtime) Available(ctx context.Context) error {
	_, err := r.Probe(ctx)
	return err
}

// Probe implements runtime.Attached: it waits, at most Options.Wait, for a
// bootstrap server to answer Metadata, and checks the fault file's nodes
// against the brokers it lists.
func (r *Runtime) Probe(ctx context.Context) ([]runtime.NodeInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.brokers != nil {
		return r.brokers, nil
	}
	brokers, err := askBrokers(ctx, r.opts.Bootstrap, r.opts.Wait)
	if err != nil {
		return nil, err
	}
	ids := make([]int32, len(brokers))
	for i, b := range brokers {
		ids[i] = b.ID
	}
	if err := r.opts.Faults.CheckNodes(ids); err != nil {
		return nil, err
	}
	r.brokers = brokers
	return brokers, nil
}

// CheckFaults implements runtime.Attached. It needs Probe first (the
// brokers it must cover).
func (r *Runtime) CheckFaults(kinds []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]int32, len(r.brokers))
	for i, b := range r.brokers {
		ids[i] = b.ID
	}
	return r.opts.Faults.CheckKinds(kinds, ids)
}

// askBrokers asks the bootstrap servers for the brokers until one answers
// or wait passes.
func askBrokers(ctx context.Context, bootstrap []string, wait time.Duration) ([]runtime.NodeInfo, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...), dialer.Opt(time.Second), dialer.Auth(),
		kgo.RequestTimeoutOverhead(time.Second), kgo.RetryTimeout(time.Second))
	if err != nil {
		return nil, fmt.Errorf("--bootstrap %s: %w", strings.Join(bootstrap, ","), err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var last error
	for {
		rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(rctx, cl)
		rcancel()
		if err == nil && len(resp.Brokers) > 0 {
			var out []runtime.NodeInfo
			for _, b := range resp.Brokers {
				host := b.Host
				out = append(out, runtime.NodeInfo{ID: b.NodeID, Host: host,
					KafkaAddr: net.JoinHostPort(host, strconv.Itoa(int(b.Port)))})
			}
			slices.SortFunc(out, func(a, b runtime.NodeInfo) int { return int(a.ID - b.ID) })
			return out, nil
		}
		if err == nil {
			err = errors.New("Metadata listed no broker")
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("--bootstrap %s: no broker answered Metadata within %v (last: %v): check the addresses and that the cluster is up",
				strings.Join(bootstrap, ","), wait, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Start implements runtime.Runtime: nothing boots; the cluster is probed and
// spec.Ready (the harness's readiness check) awaited, bounded as for any
// runtime. The spec's nodes and arguments are not used.
func (r *Runtime) Start(ctx context.Context, spec runtime.ClusterSpec) (runtime.Cluster, error) {
	brokers, err := r.Probe(ctx)
	if err != nil {
		return nil, err
	}
	c := newCluster(spec.Name, r.opts.Bootstrap, r.opts.Faults, brokers)
	if spec.Ready != nil {
		if err := runtime.WaitReady(ctx, spec, c, "the cluster at --bootstrap "+strings.Join(r.opts.Bootstrap, ",")); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Cluster is a cluster gregor did not boot.
type Cluster struct {
	name      string
	bootstrap []string
	faults    *FaultFile
	nodes     []runtime.NodeInfo

	mu       sync.Mutex
	state    map[int32]runtime.NodeState // as the commands run left it
	logs     map[int32]*bytes.Buffer     // every command run, per node
	isolated map[int32]bool
	slowed   map[int32]bool
	pending  []history.NemesisCommand
}

func newCluster(name string, bootstrap []string, faults *FaultFile, brokers []runtime.NodeInfo) *Cluster {
	c := &Cluster{name: name, bootstrap: bootstrap, faults: faults,
		nodes: brokers, state: map[int32]runtime.NodeState{}, logs: map[int32]*bytes.Buffer{},
		isolated: map[int32]bool{}, slowed: map[int32]bool{}}
	for _, n := range brokers {
		c.state[n.ID] = runtime.StateRunning
		c.logs[n.ID] = &bytes.Buffer{}
	}
	return c
}

var (
	_ runtime.Cluster         = (*Cluster)(nil)
	_ runtime.CommandRecorder = (*Cluster)(nil)
)

// Name implements runtime.Cluster.
func (c *Cluster) Name() string { return c.name }

// Nodes implements runtime.Cluster: the brokers Metadata listed.
func (c *Cluster) Nodes() []runtime.NodeInfo { return append([]runtime.NodeInfo(nil), c.nodes...) }

// Bootstrap implements runtime.Cluster: the brokers' listeners.
func (c *Cluster) Bootstrap() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.KafkaAddr)
	}
	return out
}

func (c *Cluster) node(id int32) (runtime.NodeInfo, error) {
	for _, n := range c.nodes {
		if n.ID == id {
			return n, nil
		}
	}
	return runtime.NodeInfo{}, fmt.Errorf("no broker %d in the cluster at %s", id, strings.Join(c.bootstrap, ","))
}

// run renders and runs node id's command for verb, records it, and on
// success sets the node's state.
func (c *Cluster) run(ctx context.Context, id int32, v Verb, vars Vars, after runtime.NodeState) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	t := c.faults.Command(id, v)
	if t == "" {
		return fmt.Errorf("--faults %s gives no %q command for node %d", c.faults.Path, v, id)
	}
	vars.NodeID, vars.Host, vars.KafkaAddr = id, n.Host, n.KafkaAddr
	line, err := render(t, vars)
	if err != nil {
		return fmt.Errorf("--faults %s: node %d %s: %w", c.faults.Path, id, v, err)
	}
	res := runCommand(ctx, line, c.faults.Timeout)
	res.Node, res.Verb = id, string(v)
	c.mu.Lock()
	c.pending = append(c.pending, res)
	fmt.Fprintf(c.logs[id], "%s %s: %s\nexit %d after %s%s\n%s\n", time.Now().UTC().Format(time.RFC3339Nano), v, line,
		res.Exit, res.Duration, errSuffix(res.Error), res.Output)
	if res.Error == "" && after != runtime.StateUnknown {
		c.state[id] = after
	}
	c.mu.Unlock()
	if res.Error != "" {
		return fmt.Errorf("%s command %q: %s", v, line, res.Error)
	}
	return nil
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return " (" + e + ")"
}

// running are the process groups of the fault commands running now.
var running = &groups{pgids: map[int]bool{}}

type groups struct {
	mu     sync.Mutex
	pgids  map[int]bool
	killed bool
}

// start starts cmd and records its process group, unless KillCommands
// ran: a process on its way out starts no command.
func (g *groups) start(cmd *exec.Cmd) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.killed {
		return errors.New("not started: gregor is exiting")
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	g.pgids[cmd.Process.Pid] = true
	return nil
}

func (g *groups) remove(pgid int) {
	g.mu.Lock()
	delete(g.pgids, pgid)
	g.mu.Unlock()
}

// KillCommands SIGKILLs the process group of every fault command running
// now: a process exiting at once (a second SIGTERM) calls it, since its
// contexts, which kill them otherwise, end with it unseen.
func KillCommands() {
	running.mu.Lock()
	defer running.mu.Unlock()
	running.killed = true
	for pgid := range running.pgids {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// runCommand runs line with sh -c, bounded by timeout; the whole process
// group is killed when the bound passes.
func runCommand(ctx context.Context, line string, timeout time.Duration) history.NemesisCommand {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := running.start(cmd)
	if err == nil {
		err = cmd.Wait()
		running.remove(cmd.Process.Pid)
	}
	res := history.NemesisCommand{Command: line, Duration: time.Since(start).Round(time.Millisecond).String()}
	o := out.Bytes()
	if len(o) > MaxOutput {
		o = append(o[:MaxOutput:MaxOutput], "...(cut)"...)
	}
	res.Output = strings.TrimRight(string(o), "\n")
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		res.Exit = -1
		res.Error = fmt.Sprintf("timed out after %v (the fault file's timeout)", timeout)
	case err != nil:
		res.Exit = -1
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			res.Exit = ee.ExitCode()
		}
		res.Error = err.Error()
	}
	return res
}

// TakeCommands implements runtime.CommandRecorder.
func (c *Cluster) TakeCommands() []history.NemesisCommand {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.pending
	c.pending = nil
	return out
}

// Kill implements runtime.Cluster: the node's kill command.
func (c *Cluster) Kill(ctx context.Context, id int32) error {
	return c.run(ctx, id, VerbKill, Vars{}, runtime.StateStopped)
}

// Stop implements runtime.Cluster: the node's stop command ({{.GraceSeconds}}).
func (c *Cluster) Stop(ctx context.Context, id int32, grace time.Duration) error {
	return c.run(ctx, id, VerbStop, Vars{GraceSeconds: int(grace.Seconds())}, runtime.StateStopped)
}

// Start implements runtime.Cluster: the node's start command.
func (c *Cluster) Start(ctx context.Context, id int32) error {
	return c.run(ctx, id, VerbStart, Vars{}, runtime.StateRunning)
}

// Pause implements runtime.Cluster.
func (c *Cluster) Pause(ctx context.Context, id int32) error {
	return c.run(ctx, id, VerbPause, Vars{}, runtime.StatePaused)
}

// Resume implements runtime.Cluster.
func (c *Cluster) Resume(ctx context.Context, id int32) error {
	return c.run(ctx, id, VerbResume, Vars{}, runtime.StateRunning)
}

// Partition implements runtime.Cluster: every listed node's isolate command
// runs with {{.Peers}} the listed nodes no group shares with it.
func (c *Cluster) Partition(ctx context.Context, groups [][]int32) error {
	var listed []int32
	for _, g := range groups {
		for _, id := range g {
			if _, err := c.node(id); err != nil {
				return err
			}
			if !slices.Contains(listed, id) {
				listed = append(listed, id)
			}
		}
	}
	slices.Sort(listed)
	var errs []error
	for _, a := range listed {
		var peers []int32
		for _, b := range listed {
			if b != a && !together(groups, a, b) {
				peers = append(peers, b)
			}
		}
		if len(peers) == 0 {
			continue
		}
		var hosts []string
		for _, p := range peers {
			n, _ := c.node(p)
			hosts = append(hosts, n.Host)
		}
		c.mu.Lock()
		c.isolated[a] = true
		c.mu.Unlock()
		if err := c.run(ctx, a, VerbIsolate, Vars{Peers: idList(peers), PeerHosts: strings.Join(hosts, ",")}, runtime.StateUnknown); err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", a, err))
		}
	}
	return errors.Join(errs...)
}

func together(groups [][]int32, a, b int32) bool {
	for _, g := range groups {
		if slices.Contains(g, a) && slices.Contains(g, b) {
			return true
		}
	}
	return false
}

// Heal implements runtime.Cluster: the heal command of every node an
// isolate ran on, and unslow of every slowed node.
func (c *Cluster) Heal(ctx context.Context) error {
	c.mu.Lock()
	var iso, slow []int32
	for id := range c.isolated {
		iso = append(iso, id)
	}
	for id := range c.slowed {
		slow = append(slow, id)
	}
	c.mu.Unlock()
	slices.Sort(iso)
	slices.Sort(slow)
	var errs []error
	for _, id := range iso {
		if err := c.run(ctx, id, VerbHeal, Vars{}, runtime.StateUnknown); err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", id, err))
			continue
		}
		c.mu.Lock()
		delete(c.isolated, id)
		c.mu.Unlock()
	}
	for _, id := range slow {
		if err := c.Unslow(ctx, id); err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// Slow implements runtime.Cluster: the node's slow command with
// {{.DelayMs}}, {{.JitterMs}} and {{.LossPct}}.
func (c *Cluster) Slow(ctx context.Context, id int32, delay, jitter time.Duration, lossPct float64) error {
	c.mu.Lock()
	c.slowed[id] = true
	c.mu.Unlock()
	return c.run(ctx, id, VerbSlow, Vars{DelayMs: int(delay / time.Millisecond), JitterMs: int(jitter / time.Millisecond), LossPct: lossPct}, runtime.StateUnknown)
}

// Unslow implements runtime.Cluster.
func (c *Cluster) Unslow(ctx context.Context, id int32) error {
	err := c.run(ctx, id, VerbUnslow, Vars{}, runtime.StateUnknown)
	if err == nil {
		c.mu.Lock()
		delete(c.slowed, id)
		c.mu.Unlock()
	}
	return err
}

// Logs implements runtime.Cluster: the fault commands run on the node, with
// their exit status and output (the brokers' own logs are the cluster's).
func (c *Cluster) Logs(ctx context.Context, id int32) (io.ReadCloser, error) {
	if _, err := c.node(id); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return io.NopCloser(bytes.NewReader(append([]byte(nil), c.logs[id].Bytes()...))), nil
}

// Status implements runtime.Cluster: the state the fault commands left the
// node in (running until a kill, stop or pause succeeded).
func (c *Cluster) Status(ctx context.Context, id int32) (runtime.NodeState, error) {
	if _, err := c.node(id); err != nil {
		return runtime.StateUnknown, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state[id], nil
}

// Capabilities implements runtime.Cluster: a fault with a command for every
// broker is real (the user's command makes it), else unsupported.
func (c *Cluster) Capabilities() runtime.Capabilities {
	caps := runtime.Capabilities{}
	set := func(f runtime.Fault, v Verb) {
		for _, n := range c.nodes {
			if c.faults.Command(n.ID, v) == "" {
				return
			}
		}
		caps[f] = runtime.Capability{Support: runtime.Real, How: fmt.Sprintf("fault file %s: %s command, e.g. %q", c.faults.Path, v, c.faults.Command(c.nodes[0].ID, v))}
	}
	set(runtime.FaultKill, VerbKill)
	set(runtime.FaultStop, VerbStop)
	set(runtime.FaultPause, VerbPause)
	set(runtime.FaultPartition, VerbIsolate)
	set(runtime.FaultDelay, VerbSlow)
	set(runtime.FaultLoss, VerbSlow)
	return caps
}

// Close implements runtime.Cluster: nothing was created, nothing is removed.
func (c *Cluster) Close(ctx context.Context) error { return nil }
