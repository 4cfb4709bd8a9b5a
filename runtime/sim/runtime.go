package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"gregor/cluster"
	"gregor/cluster/faultnet"
	"gregor/cluster/faultpoint"
	"gregor/cluster/nodefault"
	"gregor/internal/dialer"
	"gregor/runtime"
)

// Runtime is `--runtime sim`: each node of a spec an in-process broker on
// the in-memory network and disk. It must be used from inside one
// testing/synctest bubble (bin/gregor-sim runs the whole run in one), and
// while a cluster is up every client of the harness dials over its network
// (internal/dialer).
type Runtime struct {
	// Config builds a node's broker configuration from its expanded
	// arguments (gregor broker's own flag parser, so that the sim boots
	// exactly what the process runtime's brokers would be told).
	Config func(args []string) (cluster.Config, error)
	// LogLevel is the brokers' log level (their logs go to logs/node-N.log).
	LogLevel slog.Level
}

// Name is "sim".
func (Runtime) Name() string { return "sim" }

// Available: the sim needs nothing from the host.
func (Runtime) Available(context.Context) error { return nil }

// Start boots the spec's nodes and waits for spec.Ready.
func (r Runtime) Start(ctx context.Context, spec runtime.ClusterSpec) (runtime.Cluster, error) {
	if r.Config == nil {
		return nil, errors.New("sim runtime: no broker config builder")
	}
	var infos []runtime.NodeInfo
	for _, n := range spec.Nodes {
		h := Host(n.ID)
		infos = append(infos, runtime.NodeInfo{ID: n.ID, Host: h,
			KafkaAddr: net.JoinHostPort(h, strconv.Itoa(spec.KafkaPort)), RaftAddr: net.JoinHostPort(h, strconv.Itoa(spec.RaftPort)),
			ControllerOnly: n.ControllerOnly})
	}
	cfgs := map[int32]cluster.Config{}
	logs := map[int32]*logBuf{}
	for i, n := range spec.Nodes {
		v := runtime.VarsFor(infos[i], infos, "/node-"+strconv.Itoa(int(n.ID)))
		v.Files = runtime.FilePaths(spec.Files, "") // the brokers run in this process
		args, err := runtime.ExpandArgs(n.Args, v)
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", n.ID, err)
		}
		cfg, err := r.Config(args)
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", n.ID, err)
		}
		cfgs[n.ID] = cfg
		logs[n.ID] = &logBuf{}
	}
	c, err := Start(Options{Brokers: len(spec.Nodes), Configure: func(base *cluster.Config) {
		cfg := cfgs[base.NodeID]
		// The sim's own: the network, the disk, the snapshots, the log.
		cfg.Net, cfg.FS, cfg.DataDir, cfg.RaftSnapshots = base.Net, base.FS, base.DataDir, base.RaftSnapshots
		cfg.NodeFaults, cfg.Halt = base.NodeFaults, base.Halt
		level := r.LogLevel
		if cfg.Logger != nil && cfg.Logger.Enabled(context.Background(), slog.LevelDebug) {
			level = min(level, slog.LevelDebug) // the node's --log-level debug (--broker-arg)
		}
		cfg.Logger = slog.New(slog.NewTextHandler(logs[base.NodeID], &slog.HandlerOptions{Level: level}))
		cfg.MetricsListen = "" // a real socket: not in the bubble
		*base = cfg
	}})
	if err != nil {
		return nil, err
	}
	sc := &simCluster{name: spec.Name, c: c, infos: infos, logs: logs, installed: map[int32]*cluster.Broker{},
		pts:       points{arms: map[int32][]faultpoint.Arm{}, firings: map[int32][]faultpoint.Firing{}},
		clockDone: make(chan struct{})}
	go publishClock(sc.clockDone) // for WatchClock, outside the bubble
	sc.mu.Lock()
	for _, n := range spec.Nodes {
		sc.installPoints(n.ID, c.Broker(n.ID))
	}
	sc.mu.Unlock()
	dialer.Set(c.Dial)
	if spec.Ready != nil {
		timeout := spec.ReadyTimeout
		if timeout <= 0 {
			timeout = runtime.DefaultReadyTimeout
		}
		rctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var err error
		for {
			if err = spec.Ready(rctx, sc); err == nil {
				break
			}
			select {
			case <-rctx.Done():
				sc.Close(context.WithoutCancel(ctx))
				return nil, fmt.Errorf("not ready within %v: %w", timeout, err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return sc, nil
}

// logBuf is a node's log: writes are short and never wait.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// simCluster is a running simulated cluster (runtime.Cluster). Its methods
// are called from the bubble's goroutines; mu orders the node operations
// and is never held across a wait on another goroutine of the bubble
// except the node's own start and stop, which only take virtual time.
type simCluster struct {
	name   string
	c      *Cluster
	infos  []runtime.NodeInfo
	logs   map[int32]*logBuf
	mu     chanLock
	closed bool
	// pts is the fault points' control channel; installed the broker whose
	// handlers are installed, per node (guarded by pts.mu).
	pts       points
	installed map[int32]*cluster.Broker
	// clockDone ends the cluster's publishClock.
	clockDone chan struct{}
}

// chanLock is a mutex a bubble can wait on durably.
type chanLock struct {
	once sync.Once
	ch   chan struct{}
}

func (l *chanLock) Lock() {
	l.once.Do(func() { l.ch = make(chan struct{}, 1) })
	l.ch <- struct{}{}
}
func (l *chanLock) Unlock() { <-l.ch }

func (s *simCluster) Name() string              { return s.name }
func (s *simCluster) Nodes() []runtime.NodeInfo { return append([]runtime.NodeInfo(nil), s.infos...) }

func (s *simCluster) Bootstrap() []string {
	var out []string
	for _, n := range s.infos {
		if !n.ControllerOnly {
			out = append(out, n.KafkaAddr)
		}
	}
	return out
}

// nodeOK checks id names a node, for calls that do not take s.mu.
func (s *simCluster) nodeOK(id int32) error {
	if id < 1 || int(id) > len(s.infos) {
		return fmt.Errorf("no node %d", id)
	}
	return nil
}

func (s *simCluster) node(id int32) error {
	if id < 1 || int(id) > len(s.infos) {
		return fmt.Errorf("no node %d", id)
	}
	if s.closed {
		return errors.New("cluster closed")
	}
	return nil
}

// Kill is SIGKILL: the node's connections close at once, its goroutines
// end, and on --lazyfs what it had not synced is gone (a power cut).
func (s *simCluster) Kill(_ context.Context, id int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.node(id); err != nil {
		return err
	}
	s.uninstallPoints(id)
	return s.c.Kill(id)
}

// Stop is SIGTERM: a controlled shutdown (bounded by the broker's own
// shutdown timeout, not by grace).
func (s *simCluster) Stop(_ context.Context, id int32, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.node(id); err != nil {
		return err
	}
	// The broker's shutdown is bounded by its own ShutdownTimeout, in
	// virtual time; then the process is gone, its sockets with it.
	s.uninstallPoints(id)
	err := s.c.Stop(id)
	if m, ok := s.c.Net.(*faultnet.Mem); ok {
		m.CloseHost(s.c.hosts[id-1])
	}
	return err
}

// Start restarts a killed or stopped node on its disk and fault layer.
func (s *simCluster) Start(_ context.Context, id int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.node(id); err != nil {
		return err
	}
	if s.c.Broker(id) != nil {
		return nil
	}
	if err := s.c.Restart(id); err != nil {
		return err
	}
	s.installPoints(id, s.c.Broker(id))
	return nil
}

// Pause is SIGSTOP (Cluster.Pause): the node answers nothing until Resume.
func (s *simCluster) Pause(_ context.Context, id int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.node(id); err != nil {
		return err
	}
	return s.c.Pause(id)
}

// Resume is SIGCONT: what fell due during the pause happens at once.
func (s *simCluster) Resume(_ context.Context, id int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.node(id); err != nil {
		return err
	}
	s.c.Resume(id)
	return nil
}

// Partition adds drop rules both ways between the nodes the groups cut.
func (s *simCluster) Partition(_ context.Context, groups [][]int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for a, peers := range runtime.Cuts(groups) {
		if err := s.node(a); err != nil {
			return err
		}
		l := s.c.Faults(a)
		r := l.Rules()
		for b := range peers {
			r.Drop = append(r.Drop, Host(b))
		}
		l.Set(r)
	}
	return nil
}

// Heal lifts every node's drops and slow links.
func (s *simCluster) Heal(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.infos {
		s.c.Faults(int32(i + 1)).Set(faultnet.Rules{})
	}
	return nil
}

// Slow delays (and loses) every write of the node's links.
func (s *simCluster) Slow(_ context.Context, id int32, delay, jitter time.Duration, lossPct float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.node(id); err != nil {
		return err
	}
	l := s.c.Faults(id)
	r := l.Rules()
	r.DelayMs, r.JitterMs, r.LossPct = int(delay/time.Millisecond), int(jitter/time.Millisecond), lossPct
	l.Set(r)
	return nil
}

func (s *simCluster) Unslow(_ context.Context, id int32) error {
	return s.Slow(context.Background(), id, 0, 0, 0)
}

func (s *simCluster) Logs(_ context.Context, id int32) (io.ReadCloser, error) {
	l := s.logs[id]
	if l == nil {
		return nil, fmt.Errorf("no node %d", id)
	}
	return io.NopCloser(bytes.NewReader(l.bytes())), nil
}

func (s *simCluster) Status(_ context.Context, id int32) (runtime.NodeState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.node(id); err != nil {
		return runtime.StateUnknown, err
	}
	if s.c.Broker(id) == nil {
		return runtime.StateStopped, nil
	}
	if s.c.Paused(id) {
		return runtime.StatePaused, nil
	}
	return runtime.StateRunning, nil
}

// Capabilities: every fault is the sim's model of it.
func (s *simCluster) Capabilities() runtime.Capabilities {
	return runtime.Capabilities{
		runtime.FaultKill:      {Support: runtime.Emulated, How: "simulated: the node's connections close and its goroutines end; with --lazyfs its unsynced writes are lost"},
		runtime.FaultStop:      {Support: runtime.Emulated, How: "simulated: controlled shutdown of the in-process broker"},
		runtime.FaultPause:     {Support: runtime.Emulated, How: "simulated: nothing the node does reaches its network or returns to it until resume (its timers fire on time, their effects wait); peers' dials and writes are buffered, unanswered"},
		runtime.FaultPartition: {Support: runtime.Emulated, How: "simulated: the in-memory network stalls the cut links both ways, as TCP does"},
		runtime.FaultDelay:     {Support: runtime.Emulated, How: "simulated: each write on the node's links waits the delay (+- jitter) in virtual time"},
		runtime.FaultLoss:      {Support: runtime.Emulated, How: "simulated: a lost write costs a 200 ms retransmission delay"},
	}
}

// Close kills every node; the harness's clients dial the host again.
func (s *simCluster) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for _, n := range s.infos {
		s.uninstallPoints(n.ID)
	}
	s.c.Close()
	dialer.Set(nil)
	close(s.clockDone)
	return nil
}

// NodeFaults says the sim arms disk and clock faults
// (runtime.CheckNodeFaults).
func (Runtime) NodeFaults() bool { return true }

// ArmNodeFaults implements runtime.NodeFaulter: node id's state directly;
// a flip is made by the running broker at once (a node that is down
// records it failed).
func (s *simCluster) ArmNodeFaults(_ context.Context, id int32, nc nodefault.Control) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.node(id); err != nil {
		return err
	}
	nf := s.c.NodeFaults(id)
	if err := nf.Apply(nc); err != nil {
		return err
	}
	if nc.Flip == nil || flipDone(nf.Events(), nc.Flip.ID) {
		return nil
	}
	if b := s.c.Broker(id); b != nil {
		b.FlipBit(*nc.Flip)
	} else {
		nf.Record(nodefault.Event{Time: time.Now().UnixNano(), Kind: nodefault.EventFlipFailed, ID: nc.Flip.ID,
			Node: id, Partition: -1, Error: "node down"})
	}
	return nil
}

func flipDone(es []nodefault.Event, id string) bool {
	for _, e := range es {
		if e.ID == id && (e.Kind == nodefault.EventFlip || e.Kind == nodefault.EventFlipFailed) {
			return true
		}
	}
	return false
}

// NodeFaultEvents implements runtime.NodeFaulter.
func (s *simCluster) NodeFaultEvents(_ context.Context, id int32) ([]nodefault.Event, error) {
	if id < 1 || int(id) > len(s.infos) {
		return nil, fmt.Errorf("no node %d", id)
	}
	return s.c.NodeFaults(id).Events(), nil
}
