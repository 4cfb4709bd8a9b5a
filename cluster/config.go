// Package cluster is the system under test: one broker of the embedded
// Kafka-protocol replicated log. It composes the wire front (cluster/wire),
// partition replicas (cluster/replica) on the segmented log (cluster/storage),
// and the metadata the brokers agree on.
package cluster

import (
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"gregor/cluster/faultnet"
	"gregor/cluster/group"
	"gregor/cluster/meta"
	"gregor/cluster/nodefault"
	"gregor/cluster/replica"
	"gregor/cluster/share"
	"gregor/cluster/storage"
	"gregor/cluster/txn"
	"gregor/internal/fsys"
)

// Config is one broker's configuration. Names follow Kafka's where one exists.
type Config struct {
	NodeID int32
	// Listen is the Kafka listener address; Advertise the host:port clients
	// are told to use (defaults to Listen).
	Listen    string
	Advertise string
	DataDir   string
	ClusterID string

	AutoCreateTopics  bool  // auto.create.topics.enable
	DefaultPartitions int32 // num.partitions
	DefaultRF         int16 // default.replication.factor
	// MinISR is min.insync.replicas, the broker default (a topic's own
	// config overrides it); 0 takes Kafka's default, 1. Validate refuses
	// anything below by the config table's rule (meta.CheckTopicConfig):
	// past Validate it is at least 1, and the replicas assert it
	// (replica.Partition.Update).
	MinISR  int
	Unclean bool // unclean.leader.election.enable (broker default)

	Storage storage.Options

	ReplicaLagMax       time.Duration // replica.lag.time.max.ms
	HWCheckpointEvery   time.Duration // replica.high.watermark.checkpoint.interval.ms
	RetentionCheckEvery time.Duration // log.retention.check.interval.ms

	Bugs replica.Bugs
	// ElectOutsideISR plants the controller bug: elect a leader outside the
	// ISR although unclean election is off.
	ElectOutsideISR bool
	// KeepDeletedACLs plants the authorizer bug: the broker's ACL cache
	// takes every binding the metadata log adds and never drops one it
	// removes, so a revoked ACL keeps allowing (BugKeepDeletedACLs).
	KeepDeletedACLs bool

	// Peers, when set, make this broker one node of a multi-broker cluster
	// whose controller quorum (raft, combined mode) runs on every node.
	// Without peers the broker is a cluster of one with local metadata.
	Peers []Peer
	// ControllerOnly makes this node a controller quorum voter that is not
	// a broker (KRaft's process.roles=controller): the quorum can then
	// outlive the loss of most brokers, as in seed 003's experiment.
	ControllerOnly bool
	// Quorum, when set, lists the only nodes that vote in the controller
	// quorum (dedicated controllers); the other peers follow the metadata
	// log as raft non-voters and can never be the active controller. Empty:
	// every peer votes (combined mode).
	Quorum            []int32
	RaftTimeout       time.Duration // raft heartbeat/election timeout
	SessionTimeout    time.Duration // broker.session.timeout.ms
	HeartbeatInterval time.Duration // broker.heartbeat.interval.ms
	// ShutdownTimeout bounds a controlled shutdown (moving leadership away).
	ShutdownTimeout time.Duration

	// Groups configures the group coordinator (__consumer_offsets partitions,
	// initial rebalance delay, session timeout bounds); zero values take
	// group.Config's defaults.
	Groups group.Config

	// TransactionVersion is the cluster's transaction.version feature: 1,
	// transactions as Kafka 3.x runs them, or 2, KIP-890's (the default, as
	// for a new Kafka 4 cluster). Every broker of a cluster must have the same.
	TransactionVersion int16
	// Txn configures the transaction coordinator (__transaction_state
	// partitions, timeout checks); zero values take txn.Config's defaults.
	Txn txn.Config
	// Share configures KIP-932's share groups (lock duration, delivery
	// count limit, __share_group_state partitions); zero values take
	// share.Config's defaults (Kafka's).
	Share share.Config

	// Net, when set, is the fault layer every connection of the broker goes
	// through, and through it the network (faultnet.NewOn over the
	// simulation's in-memory faultnet.Mem); its owner sets its rules, and
	// <data>/netfaults.json is not read. Nil: the host's sockets under a
	// layer driven by that file (the process runtime's).
	Net *faultnet.Layer

	// FS holds the broker's data directory (nil: the host's files; the
	// simulation's is fsys.Mem). RaftSnapshots, when set, keeps the
	// controller's raft snapshots instead of files in the data directory
	// (the simulation keeps them in memory across the node's restarts).
	FS            fsys.FS
	RaftSnapshots raft.SnapshotStore

	// NodeFaults, when set, is the node's disk and clock (cluster/nodefault),
	// armed by its owner (the simulation); <data>/nodefaults.json is not
	// read. Nil: a healthy disk over FS and the host's clock, armed through
	// that file (the process runtime's).
	NodeFaults *nodefault.State
	// Halt ends the broker at once when its log directory fails (Kafka's
	// LogManager with every log dir offline: Exit.halt(1)). Nil: the
	// process exits with LogDirFailureExitCode.
	Halt func()

	// MetricsListen serves GET /metrics (Prometheus text) when set.
	MetricsListen string

	// Security is the listener's protocol and the broker's own
	// credentials (security.go). Zero: PLAINTEXT.
	Security Security

	MaxRequestBytes int
	Logger          *slog.Logger
}

// Defaults fills unset fields with Kafka's defaults (shortened where a test
// harness needs faster reactions, as noted).
func (c *Config) Defaults() {
	if c.Advertise == "" {
		c.Advertise = c.Listen
	}
	if c.ClusterID == "" {
		c.ClusterID = "gregor"
	}
	if c.DefaultPartitions <= 0 {
		c.DefaultPartitions = 1
	}
	if c.DefaultRF <= 0 {
		c.DefaultRF = 1
	}
	if c.MinISR == 0 {
		c.MinISR = 1 // Kafka's default
	}
	if c.ReplicaLagMax <= 0 {
		c.ReplicaLagMax = 30 * time.Second
	}
	if c.HWCheckpointEvery <= 0 {
		c.HWCheckpointEvery = 5 * time.Second
	}
	if c.RetentionCheckEvery <= 0 {
		c.RetentionCheckEvery = 30 * time.Second
	}
	if c.RaftTimeout <= 0 {
		c.RaftTimeout = time.Second
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 9 * time.Second // Kafka's default
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = min(2*time.Second, c.SessionTimeout/4) // Kafka: 2s
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = 10 * time.Second
	}
	if c.TransactionVersion == 0 {
		c.TransactionVersion = DefaultTransactionVersion
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.Security.defaults()
}

// DefaultTransactionVersion is a new Kafka 4 cluster's transaction.version.
const DefaultTransactionVersion = 2

// CheckTransactionVersion refuses a transaction.version the brokers do not
// run; gregor's cluster settings check theirs with it too.
func CheckTransactionVersion(v int16) error {
	if v != 1 && v != 2 {
		return fmt.Errorf("--transaction-version %d: give 1 (Kafka 3.x transactions) or 2 (KIP-890)", v)
	}
	return nil
}

// Validate refuses impossible configurations with the fix in the message.
func (c *Config) Validate() error {
	if c.NodeID < 0 {
		return fmt.Errorf("node id %d: give a non-negative --node-id", c.NodeID)
	}
	if c.Listen == "" {
		return fmt.Errorf("no listen address: give --listen host:port")
	}
	if c.DataDir == "" {
		return fmt.Errorf("no data directory: give --data DIR")
	}
	if err := CheckTransactionVersion(c.TransactionVersion); err != nil {
		return err
	}
	if err := c.Security.validate(); err != nil {
		return err
	}
	if c.HeartbeatInterval >= c.SessionTimeout {
		return fmt.Errorf("heartbeat interval %v >= session timeout %v: every broker would be fenced; lower --heartbeat-interval", c.HeartbeatInterval, c.SessionTimeout)
	}
	// The broker default passes the rule of meta's config table, the one a
	// topic's value (CreateTopics, AlterConfigs) and a dynamic default pass.
	if err := meta.CheckTopicConfig(meta.ConfigMinISR, strconv.Itoa(c.MinISR)); err != nil {
		return fmt.Errorf("--min-isr %d: %w", c.MinISR, err)
	}
	if c.MinISR > int(c.DefaultRF) && c.DefaultRF > 0 && c.AutoCreateTopics {
		return fmt.Errorf("min.insync.replicas %d > default replication factor %d: auto-created topics could never take acks=all writes; lower --min-isr or raise --default-rf", c.MinISR, c.DefaultRF)
	}
	return nil
}
