package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"gregor/internal/fsys"
)

// DialFunc opens a connection; the runtime injects one that simulates
// network partitions.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Voter is one member of the static controller quorum.
type Voter struct {
	ID       int32
	RaftAddr string
	// NonVoter nodes replicate the metadata log but never vote or lead:
	// brokers beside dedicated controllers (KRaft's process.roles=broker
	// next to process.roles=controller nodes). Invariant (checked by
	// Config.validate): at least one listed node votes.
	NonVoter bool
}

// Bugs are planted bugs (DESIGN section 6), all off by default.
type Bugs struct {
	// ElectOutsideISR: when electing, prefer a live replica that is NOT in
	// the ISR (its ISR becomes just it), even with unclean election off.
	ElectOutsideISR bool
}

// Config configures one controller node.
type Config struct {
	// NodeID is this node's id: its broker id and raft server id.
	NodeID int32
	// Voters is the static voter set, identical on every node. With no
	// existing raft state a node bootstraps from it.
	Voters []Voter
	// DataDir holds the raft log, stable store and snapshots.
	DataDir string

	// Listener accepts raft connections (accept hook); New owns it from
	// then on, and closes it on failure or Close. If nil, the node listens
	// on its own Voters RaftAddr.
	Listener net.Listener
	// Dial opens raft connections (dial hook). If nil, net.Dialer.
	Dial DialFunc
	// FS holds the raft log and stable store (nil: the host's files; the
	// simulation's is fsys.Mem).
	FS fsys.FS
	// Snapshots, when set, replaces the snapshot files in DataDir (the
	// simulation keeps a node's snapshots in memory across its restarts).
	Snapshots raft.SnapshotStore

	// Raft timing. Zero values take the defaults noted.
	HeartbeatTimeout   time.Duration // 1s
	ElectionTimeout    time.Duration // 1s
	LeaderLeaseTimeout time.Duration // HeartbeatTimeout/2
	CommitTimeout      time.Duration // 50ms
	// RaftIOTimeout bounds one raft RPC on the wire; default 2s.
	RaftIOTimeout time.Duration
	// ApplyTimeout bounds one proposal; default 5s.
	ApplyTimeout time.Duration
	// SnapshotThreshold / TrailingLogs / SnapshotInterval: see raft.Config;
	// defaults 1024, 1024, 2m.
	SnapshotThreshold uint64
	TrailingLogs      uint64
	SnapshotInterval  time.Duration

	// SessionTimeout is broker.session.timeout.ms: a broker without a
	// heartbeat for this long is fenced. Default 9s.
	SessionTimeout time.Duration
	// ClusterID, if set, must match BrokerRegistration's ClusterID.
	ClusterID string
	// UncleanElectionDefault is unclean.leader.election.enable for topics
	// that do not set it. It is copied into every record the active
	// controller proposes, so only the active controller's value counts.
	UncleanElectionDefault bool
	// DefaultPartitions / DefaultReplicationFactor answer CreateTopics
	// asking for -1 (num.partitions, default.replication.factor); default 1.
	DefaultPartitions        int32
	DefaultReplicationFactor int16

	// StrictInvariants panics when an apply breaks an image invariant
	// (tests; also on whenever the process turned invariant checks on);
	// otherwise the violation is logged and counted.
	StrictInvariants bool
	Bugs             Bugs

	// Logger for raft and the controller; default: hclog to LogOutput
	// (os.Stderr if nil) at warn level.
	Logger    hclog.Logger
	LogOutput io.Writer
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.HeartbeatTimeout, time.Second)
	def(&c.ElectionTimeout, time.Second)
	def(&c.LeaderLeaseTimeout, c.HeartbeatTimeout/2)
	def(&c.CommitTimeout, 50*time.Millisecond)
	def(&c.RaftIOTimeout, 2*time.Second)
	def(&c.ApplyTimeout, 5*time.Second)
	def(&c.SessionTimeout, 9*time.Second)
	def(&c.SnapshotInterval, 2*time.Minute)
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 1024
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 1024
	}
	if c.DefaultPartitions <= 0 {
		c.DefaultPartitions = 1
	}
	if c.DefaultReplicationFactor <= 0 {
		c.DefaultReplicationFactor = 1
	}
	if c.Logger == nil {
		c.Logger = hclog.New(&hclog.LoggerOptions{
			Name: fmt.Sprintf("controller-%d", c.NodeID), Output: c.LogOutput, Level: hclog.Warn})
	}
	return c
}

func (c Config) validate() error {
	if c.DataDir == "" {
		return errors.New("controller: DataDir is required")
	}
	seen := map[int32]bool{}
	self, voting := false, false
	for _, v := range c.Voters {
		voting = voting || !v.NonVoter
		if seen[v.ID] {
			return fmt.Errorf("controller: voter %d listed twice", v.ID)
		}
		seen[v.ID] = true
		self = self || v.ID == c.NodeID
	}
	if !self {
		return fmt.Errorf("controller: node %d is not in the voter set", c.NodeID)
	}
	if !voting {
		return errors.New("controller: every node is a non-voter: the quorum needs at least one voter")
	}
	if c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		return errors.New("controller: LeaderLeaseTimeout exceeds HeartbeatTimeout")
	}
	return nil
}

func (c Config) raftAddr(id int32) string {
	for _, v := range c.Voters {
		if v.ID == id {
			return v.RaftAddr
		}
	}
	return ""
}

func (c Config) policy() electPolicy {
	return electPolicy{UncleanDefault: c.UncleanElectionDefault, ElectOutsideISR: c.Bugs.ElectOutsideISR}
}
