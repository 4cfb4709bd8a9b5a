package cluster

import (
	"fmt"
	"slices"
	"strings"

	"gregor/cluster/replica"
)

// bugSwitches names the planted bugs (DESIGN section 6) the broker carries.
// Each is off by default; `gregor broker --bug NAME` plants one.
var bugSwitches = map[string]func(*Config){
	"ack-before-isr":      func(c *Config) { c.Bugs.AckBeforeISR = true },
	"hw-past-lagging-isr": func(c *Config) { c.Bugs.HWPastLaggingISR = true },
	"truncate-to-hw":      func(c *Config) { c.Bugs.TruncateToHW = true },
	"skip-min-isr":        func(c *Config) { c.Bugs.SkipMinISR = true },
	BugElectOutsideISR:    func(c *Config) { c.ElectOutsideISR = true },
	// Transactions.
	"lso-past-open-txn":     func(c *Config) { c.Bugs.LSOPastOpenTxn = true },
	"no-zombie-fencing":     func(c *Config) { c.Bugs.NoZombieFencing = true },
	"marker-before-prepare": func(c *Config) { c.Txn.Bugs.MarkerBeforePrepare = true },
	"txn-offsets-early":     func(c *Config) { c.Groups.Bugs.TxnOffsetsEarly = true },
	// KIP-848 consumer groups.
	"assign-before-revoke": func(c *Config) { c.Groups.Bugs.AssignBeforeRevoke = true },
	// Share groups (KIP-932).
	BugShareAckAfterLockExpiry: func(c *Config) { c.Share.Bugs.AckAfterLockExpiry = true },
	// The authorizer (issue 31).
	BugKeepDeletedACLs: func(c *Config) { c.KeepDeletedACLs = true },
}

// BugKeepDeletedACLs is the authorizer's planted bug: a broker keeps in
// its ACL cache the bindings DeleteAcls removed (Config.KeepDeletedACLs).
const BugKeepDeletedACLs = "keep-deleted-acls"

// BugShareAckAfterLockExpiry is the share-partition leader's planted bug:
// an acknowledgement is taken from the consumer whose acquisition lock
// expired (share.Bugs.AckAfterLockExpiry).
const BugShareAckAfterLockExpiry = "share-ack-after-lock-expiry"

// BugElectOutsideISR is the controller's planted bug: elect a leader
// outside the ISR although unclean election is off.
const BugElectOutsideISR = "elect-outside-isr"

// BugNames lists the planted bug switches.
func BugNames() []string {
	names := make([]string, 0, len(bugSwitches))
	for n := range bugSwitches {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// PlantBugs switches on the named planted bugs in cfg.
func PlantBugs(cfg *Config, names []string) error {
	for _, n := range names {
		set, ok := bugSwitches[n]
		if !ok {
			return fmt.Errorf("unknown planted bug %q: choose from %s", n, strings.Join(BugNames(), ", "))
		}
		set(cfg)
	}
	return nil
}

// ParseBugs turns switch names into replica.Bugs; it refuses bugs planted
// elsewhere than in partition replicas (use PlantBugs for those).
func ParseBugs(names []string) (replica.Bugs, error) {
	var c Config
	if err := PlantBugs(&c, names); err != nil {
		return replica.Bugs{}, err
	}
	var plain Config
	plain.Bugs = c.Bugs
	if c.ElectOutsideISR || c.KeepDeletedACLs || c.Txn.Bugs != plain.Txn.Bugs || c.Groups.Bugs != plain.Groups.Bugs || c.Share.Bugs != plain.Share.Bugs {
		return c.Bugs, fmt.Errorf("planted bugs %v are not all partition-replica bugs: plant them with PlantBugs", names)
	}
	return c.Bugs, nil
}
