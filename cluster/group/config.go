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
	"fmt"
	"log/slog"
	"strings"
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
	// ConsumerSessionTimeout and ConsumerHeartbeatInterval are
	// group.consumer.session.timeout.ms and
	// group.consumer.heartbeat.interval.ms of KIP-848 consumer groups, set
	// by the broker, not the client (Kafka's 45 s and 5 s unless set;
	// `gregor broker --consumer-session-timeout/--consumer-heartbeat-interval`
	// shorten them for runs that should see a crashed member's partitions
	// move within their time).
	ConsumerSessionTimeout    time.Duration
	ConsumerHeartbeatInterval time.Duration
	// ConsumerProtocol is whether group.coordinator.rebalance.protocols
	// holds "consumer" (KafkaApis.isConsumerGroupProtocolEnabled): off,
	// the broker does not advertise ConsumerGroupHeartbeat/Describe nor
	// group.version, and answers them UNSUPPORTED_VERSION, so clients stay
	// on the classic protocol. On in `gregor broker`'s default, as in
	// Kafka 4 (DefaultRebalanceProtocols).
	ConsumerProtocol bool
	// ShareProtocol: "share" is in the list too, so the broker runs and
	// advertises KIP-932's share groups (wire.ShareBackend); on by default
	// (DefaultRebalanceProtocols).
	ShareProtocol bool
	Clock         coordinator.Clock
	Logger        *slog.Logger
	Bugs          Bugs
	// Node is this broker's id, for the fault points' attributes (a
	// simulation holds several brokers in one process).
	Node int32
}

// Bugs are planted bugs (DESIGN section 6), each off by default.
type Bugs struct {
	// TxnOffsetsEarly makes a transaction's offset commit visible to the
	// group at once, before (and whether or not) the transaction commits.
	TxnOffsetsEarly bool
	// AssignBeforeRevoke gives a KIP-848 member a partition of its target
	// at once, while the partition's previous owner has not yet
	// acknowledged revoking it (CurrentAssignmentBuilder's unreleased
	// partitions check skipped): two members consume it at once.
	AssignBeforeRevoke bool
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
	if c.ConsumerSessionTimeout <= 0 {
		c.ConsumerSessionTimeout = 45 * time.Second
	}
	if c.ConsumerHeartbeatInterval <= 0 {
		c.ConsumerHeartbeatInterval = 5 * time.Second
	}
	if c.Clock == nil {
		c.Clock = coordinator.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Rebalance protocols (group.coordinator.rebalance.protocols).
const (
	RebalanceClassic  = "classic"
	RebalanceConsumer = "consumer"
	// RebalanceShare turns on KIP-932's share groups. Kafka 4.0 took
	// "share" in this list (early access); from 4.1 the share.version
	// feature does, and 4.2, where share groups are generally available
	// (KAFKA-19757), has it on in a new cluster; gregor keeps the list as
	// the one switch.
	RebalanceShare = "share"
)

// DefaultRebalanceProtocols is `gregor broker --group-protocols`' default,
// Kafka 4.2's: classic and consumer (GroupCoordinatorConfig's
// GROUP_COORDINATOR_REBALANCE_PROTOCOLS_DEFAULT since 4.0; its "streams"
// gregor does not run) and share groups (see RebalanceShare).
func DefaultRebalanceProtocols() []string {
	return []string{RebalanceClassic, RebalanceConsumer, RebalanceShare}
}

// ParseRebalanceProtocols reads group.coordinator.rebalance.protocols and
// says whether it turns on the consumer protocol (ConsumerProtocol). As
// KafkaConfig does, it refuses a list without "classic"; Kafka's "share"
// and "streams" groups gregor does not run.
func ParseRebalanceProtocols(list []string) (consumer, share bool, err error) {
	classic := false
	for _, p := range list {
		switch p {
		case RebalanceClassic:
			classic = true
		case RebalanceConsumer:
			consumer = true
		case RebalanceShare:
			share = true
		default:
			return false, false, fmt.Errorf("--group-protocols %q: give classic, plus consumer (KIP-848) and/or share (KIP-932)", strings.Join(list, ","))
		}
	}
	if !classic {
		return false, false, fmt.Errorf("--group-protocols %q: disabling the classic protocol is not supported (as in Kafka); give classic, plus consumer and/or share", strings.Join(list, ","))
	}
	return consumer, share, nil
}
