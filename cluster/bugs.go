package cluster

import (
	"fmt"
	"sort"
	"strings"

	"gregor/cluster/replica"
)

// bugSwitches names the planted bugs (DESIGN section 6) the broker carries.
// Each is off by default; `gregor broker --bug NAME` plants one.
var bugSwitches = map[string]func(*replica.Bugs){
	"ack-before-isr":      func(b *replica.Bugs) { b.AckBeforeISR = true },
	"hw-past-lagging-isr": func(b *replica.Bugs) { b.HWPastLaggingISR = true },
	"truncate-to-hw":      func(b *replica.Bugs) { b.TruncateToHW = true },
	"skip-min-isr":        func(b *replica.Bugs) { b.SkipMinISR = true },
}

// BugElectOutsideISR is the controller's planted bug: elect a leader
// outside the ISR although unclean election is off.
const BugElectOutsideISR = "elect-outside-isr"

// BugNames lists the planted bug switches.
func BugNames() []string {
	names := make([]string, 0, len(bugSwitches)+1)
	for n := range bugSwitches {
		names = append(names, n)
	}
	names = append(names, BugElectOutsideISR)
	sort.Strings(names)
	return names
}

// ParseAllBugs is ParseBugs plus the controller's switch.
func ParseAllBugs(names []string) (replica.Bugs, bool, error) {
	var rest []string
	elect := false
	for _, n := range names {
		if n == BugElectOutsideISR {
			elect = true
			continue
		}
		rest = append(rest, n)
	}
	b, err := ParseBugs(rest)
	return b, elect, err
}

// ParseBugs turns switch names into replica.Bugs.
func ParseBugs(names []string) (replica.Bugs, error) {
	var b replica.Bugs
	for _, n := range names {
		set, ok := bugSwitches[n]
		if !ok {
			return b, fmt.Errorf("unknown planted bug %q: choose from %s", n, strings.Join(BugNames(), ", "))
		}
		set(&b)
	}
	return b, nil
}
