// Package sim is the simulation runtime's core: every broker of an embedded
// cluster (with its controller quorum) in this process, over an in-memory
// network (faultnet.Mem) under each node's own fault layer, so that the
// whole cluster and its clients can run inside one testing/synctest bubble
// on virtual time (DESIGN.md section 7, simulation).
//
// A Cluster is made and used from inside one bubble: the network's channels
// and the brokers' goroutines belong to it.
package sim

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"gregor/cluster"
	"gregor/cluster/faultnet"
	"gregor/cluster/nodefault"
	"gregor/cluster/storage"
	"gregor/internal/fsys"
)

// Options shape a simulated cluster.
type Options struct {
	// Brokers is the number of brokers, every one a controller voter
	// (combined mode).
	Brokers int
	// FS holds every node's data (nil: a new in-memory fsys.Mem, and each
	// node's raft snapshots in memory too). fsys.OS runs on real files.
	FS fsys.FS
	// DataDir returns node id's data directory on FS; it must survive the
	// node's restarts (nil: /node-<id>).
	DataDir func(id int32) string
	// Logger for every broker (nil: discarded).
	Logger *slog.Logger
	// Configure adjusts each broker's configuration before it starts.
	Configure func(*cluster.Config)
	// Network carries every connection; nil: a new in-memory faultnet.Mem.
	// faultnet.Sockets runs the same cluster on real loopback sockets (the
	// side-by-side measure), where Hosts must be local IPs.
	Network faultnet.Network
	// Hosts names node id's host (nil: Host).
	Hosts func(id int32) string
}

// Cluster is a simulated cluster.
type Cluster struct {
	// Net is the network every node and client dials over.
	Net    faultnet.Network
	cfgs   []cluster.Config
	layers []*faultnet.Layer
	faults []*nodefault.State
	hosts  []string
	// mu guards brokers: the harness's kills and restarts and a node's own
	// halt (a log-dir failure) come from different goroutines.
	mu      chanLock
	brokers []*cluster.Broker // nil while down
}

// Host is node id's address on the simulated network.
func Host(id int32) string { return "127.0.0." + strconv.Itoa(int(id)) }

// ClientHost is the address clients dial from.
const ClientHost = "127.0.0.200"

// Start boots the cluster and returns once every broker listens (not once
// the cluster is ready: callers wait for what they need).
func Start(opts Options) (*Cluster, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Network == nil {
		opts.Network = faultnet.NewMem()
	}
	if opts.Hosts == nil {
		opts.Hosts = Host
	}
	mem := opts.FS == nil
	if mem {
		opts.FS = fsys.NewMem()
	}
	if opts.DataDir == nil {
		opts.DataDir = func(id int32) string { return "/node-" + strconv.Itoa(int(id)) }
	}
	c := &Cluster{Net: opts.Network}
	var peers []cluster.Peer
	for i := 1; i <= opts.Brokers; i++ {
		h := opts.Hosts(int32(i))
		peers = append(peers, cluster.Peer{ID: int32(i), RaftAddr: net.JoinHostPort(h, "9093"), KafkaAddr: net.JoinHostPort(h, "9092")})
	}
	for _, p := range peers {
		// A node's layer outlives its restarts, as the process runtime's
		// control file does: faults in force apply to a restarted node.
		layer := faultnet.NewOn(opts.Hosts(p.ID), c.Net)
		// So do its disk and clock (cluster/nodefault).
		nf := nodefault.New(opts.FS, storage.IsSegmentFile)
		id := p.ID
		cfg := cluster.Config{NodeID: p.ID, Listen: p.KafkaAddr, DataDir: opts.DataDir(p.ID), Peers: peers,
			Logger: opts.Logger, Net: layer, FS: opts.FS, NodeFaults: nf,
			Halt: func() { go c.halt(id) }}
		if mem {
			// The node's "disk" for snapshots: kept across its restarts.
			cfg.RaftSnapshots = raft.NewInmemSnapshotStore()
		}
		if opts.Configure != nil {
			opts.Configure(&cfg)
		}
		c.cfgs = append(c.cfgs, cfg)
		c.layers = append(c.layers, layer)
		c.faults = append(c.faults, nf)
		c.hosts = append(c.hosts, opts.Hosts(p.ID))
		c.brokers = append(c.brokers, nil)
	}
	for _, cfg := range c.cfgs {
		if err := c.Restart(cfg.NodeID); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// Broker is node id's running broker, or nil while it is down.
func (c *Cluster) Broker(id int32) *cluster.Broker {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.brokers[id-1]
}

// Restart starts node id (down after a kill).
func (c *Cluster) Restart(id int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.brokers[id-1] != nil {
		return fmt.Errorf("node %d is up", id)
	}
	b, err := cluster.Start(c.cfgs[id-1])
	if err != nil {
		return fmt.Errorf("start node %d: %w", id, err)
	}
	c.brokers[id-1] = b
	return nil
}

// Kill ends node id as SIGKILL would: its goroutines end without a
// controlled shutdown, and with lazyfs storage what was not yet durable is
// lost (a power cut). A SIGKILLed process writes nothing more: no clean-shutdown marker, no
// HW checkpoint, so the node's next start recovers its logs (a bit flipped
// at rest is found there); without lazyfs every write already reached the
// disk (the page cache survives a process crash), so nothing else is lost.
func (c *Cluster) Kill(id int32) error { return c.kill(id) }

func (c *Cluster) kill(id int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.brokers[id-1]
	if b == nil {
		return nil
	}
	c.brokers[id-1] = nil
	if m, ok := c.Net.(*faultnet.Mem); ok {
		// The process is gone at once: its connections close first, as
		// the kernel closes a killed process's sockets.
		m.CloseHost(c.hosts[id-1])
	}
	// SIGKILL ends a stopped process too: its calls held by the pause
	// now fail on the closed sockets, and its goroutines end.
	c.layers[id-1].Thaw()
	return b.PowerCut()
}

// Pause freezes node id as SIGSTOP does: nothing it does reaches the
// network until Resume, while its peers' connections to it still take
// bytes and dials (faultnet.Layer.Freeze). Its goroutines are not stopped
// (Go cannot stop a set of goroutines): each one that would act outside
// the node waits at the node's layer, and its timers fire on time, so on
// Resume what fell due during the pause is acted on at once.
func (c *Cluster) Pause(id int32) error {
	if c.brokers[id-1] == nil {
		return fmt.Errorf("node %d is down", id)
	}
	c.layers[id-1].Freeze()
	return nil
}

// Resume continues a paused node (SIGCONT).
func (c *Cluster) Resume(id int32) { c.layers[id-1].Thaw() }

// Paused says whether node id is paused.
func (c *Cluster) Paused(id int32) bool { return c.layers[id-1].Frozen() }

// halt ends node id as its log-directory failure does (Kafka's
// Exit.halt): nothing more is written, no clean-shutdown marker either, so
// its next start recovers the directory; on a goroutine of its own, since
// the broker's own goroutine asks for it.
func (c *Cluster) halt(id int32) { _ = c.kill(id) }

// NodeFaults is node id's disk and clock, kept across its restarts.
func (c *Cluster) NodeFaults(id int32) *nodefault.State { return c.faults[id-1] }

// Isolate cuts node id off from every other node, both ways (the clients
// still reach it: client-link faults are the harness's).
func (c *Cluster) Isolate(id int32) {
	var others []string
	for i, h := range c.hosts {
		if int32(i+1) == id {
			continue
		}
		others = append(others, h)
		r := c.layers[i].Rules()
		r.Drop = append(r.Drop, c.hosts[id-1])
		c.layers[i].Set(r)
	}
	r := c.layers[id-1].Rules()
	r.Drop = append(r.Drop, others...)
	c.layers[id-1].Set(r)
}

// Heal lifts every node's drop rules (slow links stay).
func (c *Cluster) Heal() {
	for _, l := range c.layers {
		r := l.Rules()
		r.Drop = nil
		l.Set(r)
	}
}

// FS is the file system holding the nodes' data.
func (c *Cluster) FS() fsys.FS { return c.cfgs[0].FS }

// DataDir is node id's data directory on FS.
func (c *Cluster) DataDir(id int32) string { return c.cfgs[id-1].DataDir }

// Stop is SIGTERM: a controlled shutdown (leadership moves away first).
// A paused node is continued first, as the process runtime does: a
// stopped process cannot act on SIGTERM.
func (c *Cluster) Stop(id int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.brokers[id-1]
	if b == nil {
		return nil
	}
	c.Resume(id)
	c.brokers[id-1] = nil
	return b.Close()
}

// Faults is node id's fault layer: drop rules and slow links for it.
func (c *Cluster) Faults(id int32) *faultnet.Layer { return c.layers[id-1] }

// Bootstrap lists the brokers' Kafka addresses.
func (c *Cluster) Bootstrap() []string {
	var out []string
	for _, cfg := range c.cfgs {
		out = append(out, cfg.Listen)
	}
	return out
}

// Dial is what clients dial brokers with (kgo.Dialer).
func (c *Cluster) Dial(ctx context.Context, _, addr string) (net.Conn, error) {
	from := ClientHost
	if _, ok := c.Net.(faultnet.Sockets); ok {
		from = ""
	}
	return c.Net.Dial(ctx, from, addr)
}

// Close kills every node still up, then waits for the bytes their links
// still delay (faultnet.Layer.Delivered): as a killed process's sockets
// drain in the kernel, a delay line delivers or fails what was queued, and
// that is the cluster's last act, not a goroutine outliving it.
func (c *Cluster) Close() {
	for i := range c.brokers {
		c.Kill(int32(i + 1))
	}
	for _, l := range c.layers {
		l.Delivered()
	}
}

// WaitFor polls cond every 25 ms (virtual time in a bubble) until it
// returns nil or limit passes, and returns its last error.
func WaitFor(limit time.Duration, cond func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(25 * time.Millisecond)
	}
}
