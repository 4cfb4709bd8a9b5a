// Package txn is the txn workload (DESIGN.md section 4), in the shape of
// Jepsen's Kafka txn workload: each operation is one Kafka transaction of
// micro-ops ["send", key, v] and ["poll"] by a transactional franz-go
// producer (kgo.TransactionalID), committed or, at AbortRate, aborted on
// purpose; read_committed consumers poll every key, and one read_uncommitted
// control process polls beside them (history f "poll-uncommitted"), so a
// run shows that aborted records were there to be read.
//
// Each transactional producer owns its keys (partition p belongs to
// producer p mod Producers): a key's offset order is then one producer's
// transaction order, and a write cycle (G0, G1c) means a write landed
// outside its transaction's place — the late-request flaw of transaction
// version 1 — rather than two open transactions interleaving appends, which
// Kafka allows (its transactions take no locks).
package txn

import (
	"context"
	"fmt"
	"net"
	"time"

	"gregor/workloads/kit"
)

// Config is the txn workload's configuration.
type Config struct {
	// Bootstrap are the brokers the clients seed from (New needs them,
	// Validate does not).
	Bootstrap  []string
	Topic      string
	Partitions int
	// Producers are the transactional producers (gregor run --concurrency),
	// Consumers the read_committed consumer processes (--consumers); one
	// read_uncommitted control process polls beside them unless
	// NoControl.
	Producers, Consumers int
	NoControl            bool
	// AbortRate is the share of transactions aborted on purpose
	// (--abort-rate, 0..1).
	AbortRate float64
	// MaxMops bounds the micro-ops of one transaction (1..MaxMops drawn).
	MaxMops int
	// Think is a pause after each micro-op, inside the transaction
	// (--txn-think): an application's processing between sends, which
	// keeps a producer's transaction open most of the time.
	Think time.Duration
	// Rate is transactions per second over all producers; 0: unlimited.
	Rate float64
	// TxnTimeout is transaction.timeout.ms, RequestTimeout bounds one
	// produce, poll or EndTxn of a transaction.
	TxnTimeout, RequestTimeout time.Duration
	// PollTimeout bounds one poll.
	PollTimeout time.Duration
	Seed        int64
	// Dial, when set, gives a transactional producer process its dialer
	// (runtime/clientlink's, so the client-link faults act on it);
	// consumers dial directly.
	Dial func(proc int) func(ctx context.Context, network, host string) (net.Conn, error)
}

// MaxAbortRate keeps some transactions committed: a run of aborts only
// tests nothing a reader can see.
const MaxAbortRate = 0.9

// DefaultTxnTimeout is transaction.timeout.ms: short, so a transaction a
// fault left open is aborted by the coordinator within a test (Kafka's
// default is 60 s).
const DefaultTxnTimeout = 10 * time.Second

// Validate checks c and fills defaults; each error names the flag to fix.
func (c *Config) Validate() error {
	if c.Topic == "" {
		c.Topic = "txn"
	}
	if c.Producers < 1 || c.Consumers < 0 || c.Producers+c.Consumers > kit.MaxClients {
		return fmt.Errorf("--concurrency %d and --consumers %d: give at least one transactional producer and at most %d clients", c.Producers, c.Consumers, kit.MaxClients)
	}
	if c.Partitions < c.Producers {
		return fmt.Errorf("--partitions %d with --concurrency %d: the txn workload gives each transactional producer its own partitions (so a key's offset order is one producer's transaction order); raise --partitions to at least %d or lower --concurrency", c.Partitions, c.Producers, c.Producers)
	}
	if c.AbortRate < 0 || c.AbortRate > MaxAbortRate {
		return fmt.Errorf("--abort-rate %v: give 0 to %v", c.AbortRate, MaxAbortRate)
	}
	if c.Rate < 0 || c.Rate > kit.MaxRate {
		return fmt.Errorf("--rate %v: give 0 (unlimited) to %d", c.Rate, kit.MaxRate)
	}
	if c.Think < 0 || c.Think > time.Second {
		return fmt.Errorf("--txn-think %v: give 0 to 1s", c.Think)
	}
	if c.MaxMops <= 0 {
		c.MaxMops = 4
	}
	if c.TxnTimeout <= 0 {
		c.TxnTimeout = DefaultTxnTimeout
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 5 * time.Second
	}
	if c.PollTimeout <= 0 {
		c.PollTimeout = 300 * time.Millisecond
	}
	return nil
}

// owned lists the partitions producer i writes.
func (c *Config) owned(i int) []int32 {
	var ps []int32
	for p := i; p < c.Partitions; p += c.Producers {
		ps = append(ps, int32(p))
	}
	return ps
}
