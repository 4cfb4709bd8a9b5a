package runtime

import (
	"fmt"
	"sort"
	"strings"
)

// Fault names a kind of fault a runtime can inject.
type Fault string

const (
	FaultKill      Fault = "kill"
	FaultStop      Fault = "stop"
	FaultPause     Fault = "pause"
	FaultPartition Fault = "partition"
	FaultDelay     Fault = "slow-delay"
	FaultLoss      Fault = "slow-loss"
)

// AllFaults lists every fault kind, in report order.
var AllFaults = []Fault{FaultKill, FaultStop, FaultPause, FaultPartition, FaultDelay, FaultLoss}

// Support says how faithfully a runtime injects a fault.
type Support int

const (
	Unsupported Support = iota
	// Emulated: the effect is approximated (e.g. delay by freezing the node,
	// partitions by disconnecting it); How says by what.
	Emulated
	// Real: the fault happens as it would in production (a signal, a packet
	// dropped by the kernel).
	Real
)

func (s Support) String() string {
	switch s {
	case Real:
		return "real"
	case Emulated:
		return "emulated"
	}
	return "unsupported"
}

// Capability is how one fault is injected.
type Capability struct {
	Support Support
	How     string // one line for the report, e.g. "nftables drop rules in the container's netns"
}

// Capabilities maps every fault kind to how a runtime injects it. A kind
// missing from the map is Unsupported.
type Capabilities map[Fault]Capability

// Get returns the capability for f, Unsupported if absent.
func (c Capabilities) Get(f Fault) Capability { return c[f] }

// String is one line per fault, sorted, for reports and logs.
func (c Capabilities) String() string {
	lines := make([]string, 0, len(c))
	for f, cp := range c {
		lines = append(lines, fmt.Sprintf("%s: %s (%s)", f, cp.Support, cp.How))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
