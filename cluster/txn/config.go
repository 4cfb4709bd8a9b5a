// Package txn is the transaction coordinator of the embedded cluster
// (KIP-98): Kafka's TransactionCoordinator, TransactionStateManager,
// TransactionMetadata and TransactionMarkerChannelManager.
//
// A broker coordinates the transactional ids that hash onto the
// __transaction_state partitions it leads (abs(javaHash(id)) % partitions).
// Every such partition is a shard: its transactions' metadata, rebuilt by
// replaying the partition when the broker becomes its leader, dropped when it
// stops leading (the shard set is cluster/coordinator's Runtime; this
// package is the shard). A transition is written to the shard's partition acks=all
// before it takes effect; markers are written only once a Prepare state is
// durable, and a new coordinator finishes every transaction it finds in a
// Prepare state.
//
// Both transaction versions: 1 as Kafka 3.x (explicit AddPartitionsToTxn,
// the epoch stays across transactions, markers at the data's epoch), 2 as
// KIP-890 (partitions join on produce, EndTxn bumps the epoch, markers carry
// the bumped epoch and must be newer, KIP-1228).
package txn

import (
	"log/slog"
	"time"

	"gregor/cluster/coordinator"
	"gregor/cluster/meta"
)

// Topic is the internal topic holding transaction metadata.
const Topic = meta.TransactionStateTopic

// Config tunes the coordinator. Zero fields take the defaults in Defaults.
type Config struct {
	// Partitions is transaction.state.log.num.partitions (Kafka: 50; a test
	// harness needs fewer).
	Partitions int32
	// Version is the cluster's transaction.version feature: 1 or 2.
	Version int16
	// MaxTimeout is transaction.max.timeout.ms (Kafka: 15 min): InitProducerId
	// asking for more gets INVALID_TRANSACTION_TIMEOUT.
	MaxTimeout time.Duration
	// AbortTimedOutEvery is transaction.abort.timed.out.transaction.cleanup.interval.ms
	// (Kafka: 10 s; here 1 s): how often open transactions past their
	// transaction.timeout.ms are aborted, fencing their producer.
	AbortTimedOutEvery time.Duration
	// PollEvery is how often leadership of the partitions is checked.
	PollEvery time.Duration
	// WriteTimeout bounds one metadata write, acks=all included (Kafka bounds
	// it by the transaction's timeout; a shorter bound answers clients sooner).
	WriteTimeout time.Duration
	// MarkerBackoff is the pause between rounds of markers still owed
	// (Kafka's retry of TransactionMarkerChannelManager).
	MarkerBackoff time.Duration
	Bugs          Bugs
	Clock         coordinator.Clock
	Logger        *slog.Logger
	// Node is this broker's id, for the fault points' attributes (a
	// simulation holds several brokers in one process).
	Node int32
}

// Bugs are planted bugs (DESIGN section 6), each off by default.
type Bugs struct {
	// MarkerBeforePrepare writes markers as soon as a Prepare state is
	// appended, before it is durable: a coordinator failover can then
	// decide the other way, and the transaction is torn.
	MarkerBeforePrepare bool
}

// Defaults fills unset fields.
func (c *Config) Defaults() {
	if c.Partitions <= 0 {
		c.Partitions = 8
	}
	if c.Version <= 0 {
		c.Version = 2
	}
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = 15 * time.Minute
	}
	if c.AbortTimedOutEvery <= 0 {
		c.AbortTimedOutEvery = time.Second
	}
	if c.PollEvery <= 0 {
		c.PollEvery = 20 * time.Millisecond
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 5 * time.Second
	}
	if c.MarkerBackoff <= 0 {
		c.MarkerBackoff = 100 * time.Millisecond
	}
	if c.Clock == nil {
		c.Clock = coordinator.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}
