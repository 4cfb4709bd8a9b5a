// Package group is the group coordinator of the embedded cluster: Kafka's
// classic consumer-group protocol (JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup), static membership (KIP-345), and committed offsets stored in
// the replicated __consumer_offsets topic.
//
// A broker coordinates the groups that hash onto the __consumer_offsets
// partitions it leads. Every partition it leads is a shard: the groups of
// that partition, rebuilt by replaying the partition when the broker becomes
// its leader and dropped when it stops leading (the shard set is
// cluster/coordinator's Runtime; this package is the shard). Offset commits
// and group metadata are records appended to the shard's partition and
// acknowledged only once committed (acks=all).
package group

import (
	"log/slog"
	"time"

	"gregor/cluster/coordinator"
	"gregor/cluster/meta"
)

// Topic is the internal topic holding group metadata and committed offsets.
const Topic = meta.OffsetsTopic

// Config tunes the coordinator. Zero fields take the defaults in Defaults.
type Config struct {
	// OffsetsPartitions is offsets.topic.num.partitions (Kafka: 50; a test
	// harness needs fewer).
	OffsetsPartitions int32
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms: how long a
	// rebalance of an empty group waits for more members (Kafka: 3 s; here
	// 100 ms unless set; negative for none).
	InitialRebalanceDelay time.Duration
	// MinSessionTimeout / MaxSessionTimeout bound a member's
	// session.timeout.ms (Kafka: group.min/max.session.timeout.ms, 6 s / 30 min).
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// PollEvery is how often the coordinator looks for leadership changes of
	// the __consumer_offsets partitions.
	PollEvery time.Duration
	// WriteTimeout bounds one append to __consumer_offsets, waiting for
	// acks=all included (Kafka: offsets.commit.timeout.ms, 5 s).
	WriteTimeout time.Duration
	Clock        coordinator.Clock
	Logger       *slog.Logger
	Bugs         Bugs
	// Node is this broker's id, for the fault points' attributes (a
	// simulation holds several brokers in one process).
	Node int32
}

// Bugs are planted bugs (DESIGN section 6), each off by default.
type Bugs struct {
	// TxnOffsetsEarly makes a transaction's offset commit visible to the
	// group at once, before (and whether or not) the transaction commits.
	TxnOffsetsEarly bool
}

// Defaults fills unset fields.
func (c *Config) Defaults() {
	if c.OffsetsPartitions <= 0 {
		c.OffsetsPartitions = 8
	}
	switch {
	case c.InitialRebalanceDelay == 0:
		c.InitialRebalanceDelay = 100 * time.Millisecond
	case c.InitialRebalanceDelay < 0:
		c.InitialRebalanceDelay = 0
	}
	if c.MinSessionTimeout <= 0 {
		c.MinSessionTimeout = 100 * time.Millisecond // Kafka: 6 s; tests use short sessions
	}
	if c.MaxSessionTimeout <= 0 {
		c.MaxSessionTimeout = 30 * time.Minute
	}
	if c.PollEvery <= 0 {
		c.PollEvery = 20 * time.Millisecond
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 5 * time.Second
	}
	if c.Clock == nil {
		c.Clock = coordinator.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}
