package share

import (
	"log/slog"
	"strconv"
	"time"

	"gregor/cluster/coordinator"
	"gregor/cluster/meta"
)

// Config is the broker's share-group configuration, by Kafka 4.2's broker
// config names (GroupCoordinatorConfig, ShareGroupConfig). Zero values take
// Kafka's defaults (Defaults).
type Config struct {
	// LockDuration is group.share.record.lock.duration.ms (30 s): how long
	// an acquired record stays with its consumer before it is released.
	LockDuration time.Duration
	// MinLockDuration and MaxLockDuration bound a group's
	// share.record.lock.duration.ms (group.share.min/max.record.lock.
	// duration.ms: 15 s, 60 s).
	MinLockDuration, MaxLockDuration time.Duration
	// DeliveryLimit is group.share.delivery.count.limit (5): a record
	// delivered that many times is archived when released or expired.
	DeliveryLimit int16
	// MaxRecordLocks is group.share.partition.max.record.locks (2000): the
	// in-flight records of one share partition (its SPEO - SPSO).
	MaxRecordLocks int
	// HeartbeatInterval and SessionTimeout are group.share.heartbeat.
	// interval.ms (5 s) and group.share.session.timeout.ms (45 s).
	HeartbeatInterval, SessionTimeout time.Duration
	// StatePartitions is share.coordinator.state.topic.num.partitions
	// (Kafka: 50).
	StatePartitions int32
	// PollEvery is how often the coordinators look for leadership changes.
	PollEvery time.Duration
	// Bugs are planted bugs (DESIGN section 6); all off by default.
	Bugs   Bugs
	Clock  coordinator.Clock
	Logger *slog.Logger
}

// Bugs are the share roles' planted bugs.
type Bugs struct {
	// AckAfterLockExpiry: an acknowledgement is taken from the consumer
	// whose acquisition lock expired, as long as no other consumer has
	// acquired the record since (Kafka refuses it: INVALID_RECORD_STATE,
	// SharePartition.acknowledge checks the record is ACQUIRED by the
	// member).
	AckAfterLockExpiry bool
}

// Defaults fills in Kafka's defaults.
func (c *Config) Defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.LockDuration, 30*time.Second)
	def(&c.MinLockDuration, 15*time.Second)
	def(&c.MaxLockDuration, 60*time.Second)
	def(&c.HeartbeatInterval, 5*time.Second)
	def(&c.SessionTimeout, 45*time.Second)
	def(&c.PollEvery, 100*time.Millisecond)
	c.MinLockDuration = min(c.MinLockDuration, c.LockDuration)
	c.MaxLockDuration = max(c.MaxLockDuration, c.LockDuration)
	if c.DeliveryLimit <= 0 {
		c.DeliveryLimit = 5
	}
	if c.MaxRecordLocks <= 0 {
		c.MaxRecordLocks = 2000
	}
	if c.StatePartitions <= 0 {
		c.StatePartitions = 50
	}
	if c.Clock == nil {
		c.Clock = coordinator.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// groupSettings are one group's effective settings: its group configs over
// the broker's (ShareGroupConfigProvider).
type groupSettings struct {
	lock               time.Duration
	earliest           bool
	heartbeat, session time.Duration
}

func (c *Config) settings(gc map[string]string) groupSettings {
	s := groupSettings{lock: c.LockDuration, heartbeat: c.HeartbeatInterval, session: c.SessionTimeout}
	ms := func(name string, into *time.Duration, lo, hi time.Duration) {
		if v, err := strconv.ParseInt(gc[name], 10, 32); err == nil {
			// Kafka bounds a group's value by the broker's min and max
			// when it is set; values outside are clamped here.
			*into = min(max(time.Duration(v)*time.Millisecond, lo), hi)
		}
	}
	ms(meta.GroupShareRecordLockDuration, &s.lock, c.MinLockDuration, c.MaxLockDuration)
	ms(meta.GroupShareHeartbeatInterval, &s.heartbeat, time.Millisecond, time.Hour)
	ms(meta.GroupShareSessionTimeout, &s.session, time.Millisecond, time.Hour)
	s.earliest = gc[meta.GroupShareAutoOffsetReset] == "earliest"
	return s
}
