// Package kit is what every workload shares, and the descriptor through
// which a workload tells the layers above it what it is (DESIGN.md section
// 1): its flags, their validation, what it records in test.json, how it is
// built, which nemesis targets it offers. The harness, the matrix, validate
// and the command ask a Registry of descriptors (workloads/all) and never
// name a workload.
package kit

import (
	"context"
	"net"
	"time"

	"github.com/spf13/pflag"

	"gregor/history"
)

// Shared are the run's settings every workload reads: harness.Config's
// fields of the same names. A descriptor's Validate may canonicalise them
// in place (a transactional workload's producers are idempotent), and the
// run records what it left.
type Shared struct {
	Topic           string
	Partitions, RF  int
	MinISR          int
	Acks            string
	Idempotence     bool
	Retries         int
	MaxInFlight     int
	DeliveryTimeout time.Duration
	Rate            float64
	// Producers is --concurrency, Consumers --consumers (each workload
	// says what its consumers are).
	Producers, Consumers int
	Seed                 int64
	// LinkFaults: a nemesis of the run acts on the clients' links, so a
	// client must give up on a silent connection within a fault's hold.
	LinkFaults bool
	// SessionTimeout is the brokers' broker.session.timeout.ms (0: not
	// known, Kafka's default): how long a broker cut off from the
	// controller keeps its leaderships.
	SessionTimeout time.Duration
}

// Dialer is a client process's dialer.
type Dialer = func(ctx context.Context, network, host string) (net.Conn, error)

// Env is where a built workload runs: the brokers, the client-link network
// every client dials through (so link faults act on it), the history and
// its epoch.
type Env struct {
	Bootstrap []string
	Dial      func(process int) Dialer
	History   *history.Writer
	Epoch     time.Time
}

// Workload is what a run drives: clients that write the history while the
// nemesis runs, then a final read of every key.
type Workload interface {
	// Run drives the clients until ctx ends, then waits for the operations
	// in flight.
	Run(ctx context.Context) error
	// FinalRead reads every key from offset 0 to its high watermark.
	FinalRead(ctx context.Context) error
	// Ops counts completed operations, for the progress line.
	Ops() int64
	// Crash is the client-crash nemesis's hook (nemesis.Runner.Crash).
	Crash() (process int, tearDown func(), ok bool)
}

// Hooks are what a built workload hands the nemesis beyond Crash: the
// consumer group and transactional ids whose coordinators the coordinator
// target and kill-txn-coordinator hit, and the client steps only it can
// take. A zero field: the workload offers none.
type Hooks struct {
	// Group is the consumer group whose coordinator --nemesis-target
	// coordinator hits (it goes first); TxnID the transactional id's
	// otherwise.
	Group, TxnID string
	// ShareGroup is the share group whose share coordinators
	// --nemesis-target share-coordinator hits.
	ShareGroup string
	// TransactionalIDs are the ids kill-txn-coordinator draws from.
	TransactionalIDs []string
	// PauseProducer is the pause-producer nemesis's hook
	// (nemesis.Runner.PauseProducer).
	PauseProducer func(hold time.Duration) (process int, used time.Duration, resumed <-chan struct{}, ok bool)
	// Clients runs a consumer step, a nemesis kind by its history name
	// (consumer-restart, consumer-join; pause-share-consumer), on the
	// workload's clients.
	Clients func(ctx context.Context, kind string) (processes []int, err error)
}

// Descriptor is one workload as the layers above it see it: registered
// once (workloads/all), asked by name. cfg is the run's one configuration
// (*harness.Config); a workload with settings of its own declares the
// interface it reads them through and asserts it, so those settings stay
// fields of that one configuration (and of run.json).
type Descriptor interface {
	// Name is --workload's value and test.json's workload.
	Name() string
	// Usage is the workload's line in --workload's help.
	Usage() string
	// Flags binds the workload's own flags to cfg, with def's values as
	// their defaults.
	Flags(fl *pflag.FlagSet, cfg, def any)
	// OwnFlags are the flags that mean nothing without this workload: a
	// run of another refuses them (the command knows which were given).
	OwnFlags() []string
	// Offers tells whether a nemesis kind that needs a workload of its
	// kind (a group or transaction fault, history.NemesisClasses) acts on
	// this one.
	Offers(kind string) bool
	// Coordinator: the workload has a coordinator for --nemesis-target
	// coordinator to hit (a consumer group's or a transactional id's).
	Coordinator() bool
	// Pipelines: its producers keep --max-in-flight records in flight.
	Pipelines() bool
	// SafeBrokersSuffice: on safe brokers (acks=all, min ISR at least 2,
	// no unclean election) the workload forbids every lost acknowledged
	// write whatever its own settings, so a planted bug's probe fits it;
	// false where its own settings allow some (a group's commit modes).
	SafeBrokersSuffice() bool
	// Authorizes: the workload's clients are principals of the brokers'
	// authorizer, so the brokers run it behind a SASL listener (a cluster
	// gregor boots gets one, with a super user of its own, when the run
	// gives no SASL settings).
	Authorizes() bool
	// Validate refuses what this workload cannot run with s and cfg,
	// canonicalising them in place; each error names the flag that fixes it.
	Validate(s *Shared, cfg any) error
	// Unused refuses this workload's own settings in a run of another.
	Unused(cfg any) error
	// Record writes the workload's own fields of test.json; cfg is
	// validated.
	Record(cfg any, r *history.Config)
	// New builds the workload for a validated s and cfg.
	New(s Shared, cfg any, env Env) (Workload, Hooks, error)
}

// Base is a Descriptor's defaults: no own flags, no group or transaction
// faults, no coordinator, no pipelining, safe on safe brokers, nothing of
// its own to validate or record. A descriptor embeds it and says only what is its own.
type Base struct{}

func (Base) Flags(*pflag.FlagSet, any, any) {}
func (Base) OwnFlags() []string             { return nil }
func (Base) Offers(string) bool             { return false }
func (Base) Coordinator() bool              { return false }
func (Base) Pipelines() bool                { return false }
func (Base) SafeBrokersSuffice() bool       { return true }
func (Base) Authorizes() bool               { return false }
func (Base) Validate(*Shared, any) error    { return nil }
func (Base) Unused(any) error               { return nil }
func (Base) Record(any, *history.Config)    {}
