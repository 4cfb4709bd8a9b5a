// Package nsfault injects network faults from inside a node's network
// namespace: packet drops to and from a list of IPv4 addresses (nftables, in a
// table owned by gregor) and netem delay, jitter and loss on the links
// (tc qdisc through netlink). Both speak netlink directly, so it works in a
// FROM-scratch image with no nft or tc binary: the docker runtime runs it as
// `gregor nsfault ...` by docker exec in a container with CAP_NET_ADMIN.
//
// Every operation replaces the whole state it owns in one netlink batch, so a
// repeated command is idempotent and a half-applied fault cannot be left.
package nsfault

import "errors"

const (
	// DropTable holds the partition rules: chains "input" and "output".
	DropTable = "gregor"
	// LossTable holds the nftables loss rule used when netem is unavailable.
	LossTable = "gregor_slow"
	// probeTable is created and deleted by Probe.
	probeTable = "gregor_probe"
)

// MaxIPs bounds a drop list: one rule per address per chain.
const MaxIPs = 256

// ErrNetemUnavailable is returned when the kernel has no netem qdisc
// (CONFIG_NET_SCH_NETEM unset) or refuses it.
var ErrNetemUnavailable = errors.New("netem qdisc unavailable in this kernel")
