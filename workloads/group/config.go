// Package group is the group workload (issue 8, seeds 000 and 002): the
// queue workload's producers, and franz-go consumers in one consumer group
// (subscribe) that "process" every record they poll for a configurable
// time, fail with a configurable probability, handle failures by
// swallowing or retrying them, and commit offsets in one of four modes. It
// writes, besides polls, the history events the checker's committed-skip
// and redelivered analyses and group figures read: process (a record the
// application finished, or failed), commit (offsets the coordinator
// accepted) and rebalance (join, assigned, revoked, lost, leave, with the
// group generation).
package group

import (
	"fmt"
	"time"

	"gregor/history"
)

// Commit modes (Config.CommitMode).
const (
	// CommitAuto is enable.auto.commit=true as Apache Kafka's Java consumer
	// does it (ConsumerCoordinator.maybeAutoCommitOffsetsAsync, run inside
	// poll(); AsyncKafkaConsumer the same): once AutoCommitInterval has
	// passed, the next poll commits the positions of the records the
	// previous polls returned, which the application has processed by then
	// since it polled again; and on revoke. A crash mid-batch re-delivers
	// that batch; records are skipped only when processing failures are
	// swallowed (or processing is handed off asynchronously). Modelled by
	// franz-go's autocommit without GreedyAutoCommit, which commits only
	// records polled before the latest poll.
	CommitAuto = "auto"
	// CommitAutoGreedy is auto-commit as seed 002 describes it: every
	// AutoCommitInterval the client commits the position after the last
	// record poll() returned, whether or not the application has processed
	// it ("提交的是「当前位点」... 先于应用处理"), and on revoke: a crash
	// mid-batch skips the rest of the batch. franz-go's GreedyAutoCommit;
	// clients that commit on a timer from another thread behave so.
	CommitAutoGreedy = "auto-greedy"
	// CommitBefore commits the batch's end right after poll, then processes
	// (at-most-once).
	CommitBefore = "before"
	// CommitAfter processes the whole batch, then commits its end
	// (at-least-once).
	CommitAfter = "after"
	// CommitOnRevoked commits the processed positions only in
	// onPartitionsRevoked (seed 000 §8) and at a clean close.
	CommitOnRevoked = "on-revoked"
)

// Failure handling (Config.FailureHandling).
const (
	Swallow = "swallow" // catch the error, log it, go on (the incident)
	Retry   = "retry"   // process the record again, up to MaxAttempts
)

// Group protocols (Config.GroupProtocol): Kafka's group.protocol.
const (
	// ProtocolClassic is the classic protocol: JoinGroup/SyncGroup, the
	// client's assignor (the default, as in Kafka 4).
	ProtocolClassic = "classic"
	// ProtocolConsumer is KIP-848's: ConsumerGroupHeartbeat, the broker's
	// assignor (range, or uniform for --assignor sticky), franz-go's
	// ServerSideBalancer opt-in.
	ProtocolConsumer = "consumer"
)

// Assignors (Config.Assignor).
const (
	Range              = "range"
	Sticky             = "sticky"
	CooperativeSticky  = "cooperative-sticky"
	DefaultGroup       = "gregor-group"
	MaxConsumers       = 64
	MaxAttemptsDefault = 50
	// MaxIncarnations bounds the consumers one slot starts (restarts,
	// crash replacements, poll-interval expiries).
	MaxIncarnations = 1000
)

// Config is a group workload's settings; the producers and the cluster the
// consumers read from are the queue.Config New is given beside it.
type Config struct {
	// Group is the group.id.
	Group string
	// Consumers is how many consumers start in the group (experiment B adds
	// more with Join).
	Consumers int
	// ProcessingTime is how long processing one record takes.
	ProcessingTime time.Duration
	// FailureRate is the probability that one processing attempt fails.
	FailureRate float64
	// FailureHandling is Swallow or Retry.
	FailureHandling string
	// MaxAttempts bounds Retry's attempts per record; a record that fails
	// them all is given up (recorded as failed, like a swallowed one).
	MaxAttempts int
	// CommitMode is CommitAuto, CommitAutoGreedy, CommitBefore, CommitAfter
	// or CommitOnRevoked.
	CommitMode string
	// AutoCommitInterval is auto.commit.interval.ms (Kafka: 5s).
	AutoCommitInterval time.Duration
	// GroupProtocol is ProtocolClassic or ProtocolConsumer.
	GroupProtocol string
	// Assignor is Range, Sticky or CooperativeSticky; with the consumer
	// protocol Range or Sticky, which name the broker's range and uniform
	// assignors.
	Assignor string
	// Static gives each consumer slot a group.instance.id (KIP-345) that
	// its restarts and crash replacements keep.
	Static bool
	// MaxPollRecords bounds one poll's batch (max.poll.records).
	MaxPollRecords int
	// MaxPollInterval is max.poll.interval.ms: the rebalance timeout the
	// consumer joins with, and, as the Java consumer does, a consumer whose
	// batch took longer leaves the group without committing that batch and
	// rejoins as a new member (a new process of the same slot).
	MaxPollInterval time.Duration
	// SessionTimeout is the consumers' session.timeout.ms.
	SessionTimeout time.Duration
	// CrashWait bounds how long a requested crash waits for a batch to
	// crash in the middle of; after it the consumer crashes between polls.
	CrashWait time.Duration
	// RestartSettle bounds, in a rolling restart, the wait for a restarted
	// consumer to be assigned before the next one restarts; 0 is twice the
	// session timeout plus 5 s.
	RestartSettle time.Duration
}

// DefaultConfig is the one source of the group settings' defaults: gregor
// run's flags start from it and Validate fills unset fields from it. Where
// Kafka has a default (auto.commit.interval.ms, max.poll.interval.ms), it
// is Kafka's; max.poll.records is seed 002's post-incident 50, and the
// session timeout Kafka's group.min.session.timeout.ms. Consumers is left
// to the caller.
func DefaultConfig() Config {
	return Config{Group: DefaultGroup, ProcessingTime: 2 * time.Millisecond, FailureHandling: Swallow,
		MaxAttempts: MaxAttemptsDefault, CommitMode: CommitAuto, AutoCommitInterval: 5 * time.Second,
		GroupProtocol: ProtocolClassic, Assignor: Range, MaxPollRecords: 50, MaxPollInterval: 30 * time.Second, SessionTimeout: 6 * time.Second,
		CrashWait: 2 * time.Second}
}

// Validate checks c and fills unset fields from DefaultConfig (zero
// ProcessingTime and FailureRate are values, not unset); each error names
// the fix.
func (c *Config) Validate() error {
	d := DefaultConfig()
	if c.Group == "" {
		c.Group = d.Group
	}
	if c.Consumers < 1 || c.Consumers > MaxConsumers {
		return fmt.Errorf("--consumers %d: the group workload needs at least 1 consumer and takes at most %d (give 1..%d)", c.Consumers, MaxConsumers, MaxConsumers)
	}
	if c.ProcessingTime < 0 || c.ProcessingTime > time.Minute {
		return fmt.Errorf("--processing-time %v: give 0..1m per record", c.ProcessingTime)
	}
	if c.FailureRate < 0 || c.FailureRate >= 1 {
		return fmt.Errorf("--failure-rate %v: give a probability in [0, 1)", c.FailureRate)
	}
	switch c.FailureHandling {
	case "":
		c.FailureHandling = d.FailureHandling
	case Swallow, Retry:
	default:
		return fmt.Errorf("--failure-handling %q: give swallow or retry", c.FailureHandling)
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = d.MaxAttempts
	}
	switch c.CommitMode {
	case "":
		c.CommitMode = d.CommitMode
	case CommitAuto, CommitAutoGreedy, CommitBefore, CommitAfter, CommitOnRevoked:
	default:
		return fmt.Errorf("--commit-mode %q: give auto, auto-greedy, before, after or on-revoked", c.CommitMode)
	}
	if c.AutoCommitInterval <= 0 {
		c.AutoCommitInterval = d.AutoCommitInterval
	}
	switch c.Assignor {
	case "":
		c.Assignor = d.Assignor
	case Range, Sticky, CooperativeSticky:
	default:
		return fmt.Errorf("--assignor %q: give range, sticky or cooperative-sticky", c.Assignor)
	}
	switch c.GroupProtocol {
	case "":
		c.GroupProtocol = d.GroupProtocol
	case ProtocolClassic:
	case ProtocolConsumer:
		if c.Assignor == CooperativeSticky {
			return fmt.Errorf("--assignor cooperative-sticky with --group-protocol consumer: the broker assigns (KIP-848); give --assignor range or sticky (the broker's uniform assignor)")
		}
	default:
		return fmt.Errorf("--group-protocol %q: give classic or consumer", c.GroupProtocol)
	}
	if c.MaxPollRecords <= 0 {
		c.MaxPollRecords = d.MaxPollRecords
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = d.SessionTimeout
	}
	if c.MaxPollInterval <= 0 {
		c.MaxPollInterval = d.MaxPollInterval
	}
	if c.CrashWait <= 0 {
		c.CrashWait = d.CrashWait
	}
	if c.RestartSettle <= 0 {
		c.RestartSettle = 2*c.SessionTimeout + 5*time.Second
	}
	return nil
}

// HistoryMode maps CommitMode to history.Config's AutoCommit and
// CommitMode, which the checker's theory reads.
func (c *Config) HistoryMode() (autoCommit bool, commitMode string) {
	switch c.CommitMode {
	case CommitAuto:
		return true, history.CommitAuto
	case CommitAutoGreedy:
		return true, history.CommitAutoGreedy
	case CommitBefore:
		return false, "before-processing"
	case CommitAfter:
		return false, "after-processing"
	case CommitOnRevoked:
		return false, "on-revoked"
	}
	return false, ""
}
