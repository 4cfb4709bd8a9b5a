package meta

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConfigMaxMessageBytes is the topic's largest record batch
// (max.message.bytes; the broker default is message.max.bytes).
const ConfigMaxMessageBytes = "max.message.bytes"

// TopicConfig is one topic-level config Kafka knows (TopicConfig.java /
// LogConfig.java of Kafka 3.9): its name, Kafka's default, the broker config
// that supplies a cluster-wide default (its synonym, "" when none), and
// whether this cluster acts on it. Configs it does not act on are still
// accepted and described, as Kafka would, so that a client's CreateTopics
// with, say, cleanup.policy=delete works; Kafka refuses only unknown names.
type TopicConfig struct {
	Name, Default, BrokerName string
	kind                      configKind
	// Enforced: the cluster acts on the value (the others are stored and
	// described only).
	Enforced bool
}

type configKind int

const (
	kindString configKind = iota
	kindInt               // a 32-bit whole number >= 0
	kindLong              // a 64-bit whole number >= -1
	kindBool
	kindPositiveInt // a 32-bit whole number >= 1
)

// topicConfigs is the one table of topic configs: CreateTopics, AlterConfigs,
// DescribeConfigs and the broker all read it.
var topicConfigs = []TopicConfig{
	{Name: "cleanup.policy", Default: "delete", BrokerName: "log.cleanup.policy"},
	{Name: "compression.type", Default: "producer", BrokerName: "compression.type"},
	{Name: "compression.gzip.level", Default: "-1", BrokerName: "compression.gzip.level", kind: kindString},
	{Name: "compression.lz4.level", Default: "9", BrokerName: "compression.lz4.level", kind: kindString},
	{Name: "compression.zstd.level", Default: "3", BrokerName: "compression.zstd.level", kind: kindString},
	{Name: "delete.retention.ms", Default: "86400000", BrokerName: "log.cleaner.delete.retention.ms", kind: kindLong},
	{Name: "file.delete.delay.ms", Default: "60000", BrokerName: "log.segment.delete.delay.ms", kind: kindLong},
	{Name: "flush.messages", Default: "9223372036854775807", BrokerName: "log.flush.interval.messages", kind: kindLong},
	{Name: "flush.ms", Default: "9223372036854775807", BrokerName: "log.flush.interval.ms", kind: kindLong},
	{Name: "follower.replication.throttled.replicas", Default: ""},
	{Name: "index.interval.bytes", Default: "4096", BrokerName: "log.index.interval.bytes", kind: kindInt},
	{Name: "leader.replication.throttled.replicas", Default: ""},
	{Name: "local.retention.bytes", Default: "-2", BrokerName: "log.local.retention.bytes", kind: kindString},
	{Name: "local.retention.ms", Default: "-2", BrokerName: "log.local.retention.ms", kind: kindString},
	{Name: "max.compaction.lag.ms", Default: "9223372036854775807", BrokerName: "log.cleaner.max.compaction.lag.ms", kind: kindLong},
	{Name: ConfigMaxMessageBytes, Default: "1048588", BrokerName: "message.max.bytes", kind: kindInt, Enforced: true},
	{Name: "message.downconversion.enable", Default: "true", BrokerName: "log.message.downconversion.enable", kind: kindBool},
	{Name: "message.format.version", Default: "3.0-IV1", BrokerName: "log.message.format.version"},
	{Name: "message.timestamp.after.max.ms", Default: "9223372036854775807", BrokerName: "log.message.timestamp.after.max.ms", kind: kindLong},
	{Name: "message.timestamp.before.max.ms", Default: "9223372036854775807", BrokerName: "log.message.timestamp.before.max.ms", kind: kindLong},
	{Name: "message.timestamp.difference.max.ms", Default: "9223372036854775807", BrokerName: "log.message.timestamp.difference.max.ms", kind: kindLong},
	{Name: "message.timestamp.type", Default: "CreateTime", BrokerName: "log.message.timestamp.type"},
	{Name: "min.cleanable.dirty.ratio", Default: "0.5", BrokerName: "log.cleaner.min.cleanable.ratio"},
	{Name: "min.compaction.lag.ms", Default: "0", BrokerName: "log.cleaner.min.compaction.lag.ms", kind: kindLong},
	{Name: ConfigMinISR, Default: "1", BrokerName: ConfigMinISR, kind: kindPositiveInt, Enforced: true},
	{Name: "preallocate", Default: "false", BrokerName: "log.preallocate", kind: kindBool},
	{Name: "remote.log.copy.disable", Default: "false", kind: kindBool},
	{Name: "remote.log.delete.on.disable", Default: "false", kind: kindBool},
	{Name: "remote.storage.enable", Default: "false", kind: kindBool},
	{Name: ConfigRetentionSize, Default: "-1", BrokerName: "log.retention.bytes", kind: kindLong, Enforced: true},
	{Name: ConfigRetentionMs, Default: "604800000", BrokerName: "log.retention.ms", kind: kindLong, Enforced: true},
	{Name: ConfigSegmentBytes, Default: "1073741824", BrokerName: "log.segment.bytes", kind: kindPositiveInt, Enforced: true},
	{Name: "segment.index.bytes", Default: "10485760", BrokerName: "log.index.size.max.bytes", kind: kindPositiveInt},
	{Name: "segment.jitter.ms", Default: "0", BrokerName: "log.roll.jitter.ms", kind: kindLong},
	{Name: "segment.ms", Default: "604800000", BrokerName: "log.roll.ms", kind: kindLong},
	{Name: ConfigUnclean, Default: "false", BrokerName: ConfigUnclean, kind: kindBool, Enforced: true},
}

// TopicConfigs lists every topic config, sorted by name.
func TopicConfigs() []TopicConfig { return topicConfigs }

// LookupTopicConfig finds a topic config by name.
func LookupTopicConfig(name string) (TopicConfig, bool) {
	i, ok := slices.BinarySearchFunc(topicConfigs, name, func(c TopicConfig, n string) int {
		switch {
		case c.Name < n:
			return -1
		case c.Name > n:
			return 1
		}
		return 0
	})
	if !ok {
		return TopicConfig{}, false
	}
	return topicConfigs[i], true
}

// LookupBrokerConfig finds the topic config whose cluster-wide default the
// broker config name sets (message.max.bytes -> max.message.bytes).
func LookupBrokerConfig(name string) (TopicConfig, bool) {
	for _, c := range topicConfigs {
		if c.BrokerName == name && c.BrokerName != "" {
			return c, true
		}
	}
	return TopicConfig{}, false
}

// DynamicBrokerConfigs are the broker configs AlterConfigs may change at
// runtime (a subset of Kafka's dynamic broker configs: the cluster-wide
// defaults of the topic configs this cluster acts on).
func DynamicBrokerConfigs() []string {
	var out []string
	for _, c := range topicConfigs {
		if c.Enforced && c.BrokerName != "" {
			out = append(out, c.BrokerName)
		}
	}
	return out
}

// Check validates one value of this config.
func (c TopicConfig) Check(v string) error {
	switch c.kind {
	case kindInt:
		if n, err := strconv.ParseInt(v, 10, 32); err != nil || n < 0 {
			return fmt.Errorf("Invalid value %s for configuration %s: give a whole number >= 0", v, c.Name)
		}
	case kindPositiveInt:
		if n, err := strconv.ParseInt(v, 10, 32); err != nil || n < 1 {
			return fmt.Errorf("Invalid value %s for configuration %s: give a whole number >= 1", v, c.Name)
		}
	case kindLong:
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < -1 {
			return fmt.Errorf("Invalid value %s for configuration %s: give a whole number >= -1", v, c.Name)
		}
	case kindBool:
		if v != "true" && v != "false" {
			return fmt.Errorf("Invalid value %s for configuration %s: Expected value to be either true or false", v, c.Name)
		}
	}
	return nil
}

// CheckTopicConfig validates value v of the topic config name by the
// table's rule (a broker's static default of it passes the same rule).
func CheckTopicConfig(name, v string) error {
	c, ok := LookupTopicConfig(name)
	if !ok {
		return fmt.Errorf("Unknown topic config name: %s", name)
	}
	return c.Check(v)
}

// ValidateTopicConfigs checks a topic's explicit configs for a topic of
// replication factor rf, as Kafka's LogConfig.validate does: an unknown name
// is INVALID_CONFIG "Unknown topic config name: X", a bad value
// INVALID_CONFIG naming the value. One rule beyond Kafka's: min.insync.replicas
// above the replication factor is refused (Kafka accepts it, and every
// acks=all write then fails; the harness would only ever measure that).
func ValidateTopicConfigs(configs map[string]string, rf int) (*kerr.Error, string) {
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		if err := CheckTopicConfig(name, configs[name]); err != nil {
			return kerr.InvalidConfig, err.Error()
		}
	}
	if v, ok := configs[ConfigMinISR]; ok && rf > 0 {
		if n, _ := strconv.Atoi(v); n > rf {
			return kerr.InvalidConfig, fmt.Sprintf("min.insync.replicas %d > replication factor %d: acks=all writes could never succeed; lower min.insync.replicas or raise the replication factor", n, rf)
		}
	}
	return nil, ""
}

// ConfigLayers are the places a topic config's value may come from, most
// specific first, as Kafka resolves them (DescribeConfigs' sources).
type ConfigLayers struct {
	Topic        map[string]string // DYNAMIC_TOPIC_CONFIG, by topic config name
	Broker       map[string]string // DYNAMIC_BROKER_CONFIG, by broker config name
	ClusterDyn   map[string]string // DYNAMIC_DEFAULT_BROKER_CONFIG, by broker config name
	StaticBroker map[string]string // STATIC_BROKER_CONFIG, by broker config name
}

// Resolve returns the effective value of topic config name and its source.
func (l ConfigLayers) Resolve(c TopicConfig) (string, kmsg.ConfigSource) {
	if v, ok := l.Topic[c.Name]; ok {
		return v, kmsg.ConfigSourceDynamicTopicConfig
	}
	if c.BrokerName != "" {
		if v, ok := l.Broker[c.BrokerName]; ok {
			return v, kmsg.ConfigSourceDynamicBrokerConfig
		}
		if v, ok := l.ClusterDyn[c.BrokerName]; ok {
			return v, kmsg.ConfigSourceDynamicDefaultBrokerConfig
		}
		if v, ok := l.StaticBroker[c.BrokerName]; ok && v != c.Default {
			return v, kmsg.ConfigSourceStaticBrokerConfig
		}
	}
	return c.Default, kmsg.ConfigSourceDefaultConfig
}

// Int resolves a whole-number config; a value that does not parse (cannot
// pass validation) falls back to Kafka's default.
func (l ConfigLayers) Int(name string) int64 {
	c, ok := LookupTopicConfig(name)
	if !ok {
		panic("meta: unknown topic config " + name)
	}
	v, _ := l.Resolve(c)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		n, _ = strconv.ParseInt(c.Default, 10, 64)
	}
	return n
}

// Bool resolves a boolean config.
func (l ConfigLayers) Bool(name string) bool {
	c, ok := LookupTopicConfig(name)
	if !ok {
		panic("meta: unknown topic config " + name)
	}
	v, _ := l.Resolve(c)
	return v == "true"
}
