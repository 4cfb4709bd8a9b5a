package runtime

import (
	"context"
	"fmt"

	"gregor/cluster/nodefault"
)

// NodeFaulter is a cluster of gregor's own brokers whose nodes' disk and
// clock faults (cluster/nodefault) it can arm: the process runtime writes
// the node's control file, the simulation sets the node's state directly.
type NodeFaulter interface {
	// ArmNodeFaults replaces node id's disk faults and clock skew with c's
	// and makes c's flip, once per flip ID (a zero Control: a healthy
	// node). A restarted node keeps them.
	ArmNodeFaults(ctx context.Context, id int32, c nodefault.Control) error
	// NodeFaultEvents returns every event node id recorded so far (flips,
	// log-directory failures), in order, across its lives.
	NodeFaultEvents(ctx context.Context, id int32) ([]nodefault.Event, error)
}

// CheckNodeFaults says why runtime r cannot run nemesis kind (disk-fault,
// clock-skew), or nil when it can: the faults live inside gregor's broker
// (its file-system seam and its clock), so a cluster gregor did not build
// has none, and a runtime of gregor's brokers without a channel to them
// cannot arm any.
func CheckNodeFaults(r Runtime, kind string) error {
	if IsForeign(r) {
		return fmt.Errorf("--nemesis %s with --runtime %s: the fault is made inside gregor's own broker (its file-system seam and its clock), which a cluster gregor did not build does not have; use --runtime sim or process", kind, r.Name())
	}
	if nf, ok := r.(interface{ NodeFaults() bool }); !ok || !nf.NodeFaults() {
		return fmt.Errorf("--nemesis %s with --runtime %s: this runtime has no channel to its brokers' disk and clock faults yet; use --runtime sim or process", kind, r.Name())
	}
	return nil
}
