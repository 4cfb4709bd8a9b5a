package meta

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Group configs (KIP-848 and KIP-932's GroupConfig.java): dynamic configs of
// one group, set by IncrementalAlterConfigs on a GROUP resource (type 32)
// and replicated in the metadata log as Kafka's ConfigRecord does. A
// coordinator reads them for the group; an unset one takes the broker's
// value.

// Share-group configs this cluster acts on (GroupConfig.java of Kafka 4.2).
const (
	GroupShareAutoOffsetReset    = "share.auto.offset.reset"
	GroupShareRecordLockDuration = "share.record.lock.duration.ms"
	GroupShareIsolationLevel     = "share.isolation.level"
	GroupShareHeartbeatInterval  = "share.heartbeat.interval.ms"
	GroupShareSessionTimeout     = "share.session.timeout.ms"
)

// groupConfigChecks validates each group config's value, as GroupConfig's
// ConfigDef does; bounds against the broker's min/max (Kafka's
// group.share.min.record.lock.duration.ms and so on) are the coordinator's.
var groupConfigChecks = map[string]func(string) error{
	GroupShareAutoOffsetReset: func(v string) error {
		// by_duration:<ISO-8601> is Kafka's third policy (KIP-1106); it is
		// not implemented here, so it is refused rather than ignored.
		if v != "earliest" && v != "latest" {
			return fmt.Errorf("Invalid value %s for configuration %s: String must be one of: latest, earliest (by_duration is not implemented by this cluster)", v, GroupShareAutoOffsetReset)
		}
		return nil
	},
	GroupShareIsolationLevel: func(v string) error {
		if v != "read_uncommitted" {
			return fmt.Errorf("Invalid value %s for configuration %s: this cluster's share groups read uncommitted only", v, GroupShareIsolationLevel)
		}
		return nil
	},
	GroupShareRecordLockDuration: positiveInt(GroupShareRecordLockDuration),
	GroupShareHeartbeatInterval:  positiveInt(GroupShareHeartbeatInterval),
	GroupShareSessionTimeout:     positiveInt(GroupShareSessionTimeout),
}

func positiveInt(name string) func(string) error {
	return func(v string) error {
		if n, err := strconv.ParseInt(v, 10, 32); err != nil || n < 1 {
			return fmt.Errorf("Invalid value %s for configuration %s: Value must be at least 1", v, name)
		}
		return nil
	}
}

// GroupConfigNames lists the group configs, sorted.
func GroupConfigNames() []string {
	names := make([]string, 0, len(groupConfigChecks))
	for n := range groupConfigChecks {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ValidateGroupConfigs checks a change of one group's configs: known names
// and valid values (Kafka's GroupConfig.validate; INVALID_CONFIG otherwise).
func ValidateGroupConfigs(set map[string]string, del []string) (*kerr.Error, string) {
	for _, k := range del {
		if _, ok := groupConfigChecks[k]; !ok {
			return kerr.InvalidConfig, "Unknown group config name: " + k
		}
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range set {
			if !yield(k) {
				return
			}
		}
	}) {
		check, ok := groupConfigChecks[k]
		if !ok {
			return kerr.InvalidConfig, "Unknown group config name: " + k
		}
		if err := check(set[k]); err != nil {
			return kerr.InvalidConfig, err.Error()
		}
	}
	return nil, ""
}
