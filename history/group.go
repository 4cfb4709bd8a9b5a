package history

import (
	"encoding/json"
	"fmt"
)

// FRebalance is a group consumer's membership event: a standalone line (no
// invoke) whose value is a Rebalance. A group workload writes one when a
// consumer starts ("join"), is assigned or revoked partitions by the group
// protocol ("assigned", "revoked", "lost"), and leaves cleanly ("leave"); a
// crash is the usual "crash" line.
const FRebalance = "rebalance"

// Rebalance events (Rebalance.Event).
const (
	RebalanceJoin     = "join"     // a consumer (a new process) starts and joins the group
	RebalanceAssigned = "assigned" // the protocol gave it Keys (only the new ones when cooperative)
	RebalanceRevoked  = "revoked"  // it gave up Keys (eager: every key it had)
	RebalanceLost     = "lost"     // it lost Keys without a clean revoke (fenced, expired)
	RebalanceLeave    = "leave"    // it closes cleanly (a rolling restart); no later op
)

// Rebalance is the value of a "rebalance" line. Invariant (checked by
// ParseRebalance): Event is one of the Rebalance* constants. Keys lists the
// keys of assigned, revoked and lost; it may be empty (a consumer assigned
// nothing), and then decodes as nil (omitempty), so nil is not an error.
type Rebalance struct {
	Event string   `json:"event"`
	Keys  []string `json:"keys,omitempty"`
	// Generation is the group generation the consumer was in when the event
	// happened (-1 before its first join completed).
	Generation int32 `json:"generation"`
	// Instance is the consumer's group.instance.id when static.
	Instance string `json:"instance,omitempty"`
	// Slot is the consumer's place in the workload: the restarted or
	// crash-replaced consumer of a slot keeps the slot (and its instance id).
	Slot int `json:"slot"`
}

// RebalanceOp builds a rebalance line of process p in group g.
func RebalanceOp(p Process, g string, r Rebalance) Op {
	raw, _ := json.Marshal(r) // plain struct: cannot fail
	return Op{Process: p, Type: OK, F: FRebalance, Raw: raw, Group: g}
}

// ParseRebalance reads the value of a rebalance line.
func ParseRebalance(op *Op) (Rebalance, error) {
	var r Rebalance
	if op.F != FRebalance {
		return r, fmt.Errorf("op %d is %q, not %q", op.Index, op.F, FRebalance)
	}
	if err := json.Unmarshal(op.Raw, &r); err != nil {
		return r, fmt.Errorf("op %d: rebalance value: %w", op.Index, err)
	}
	switch r.Event {
	case RebalanceJoin, RebalanceLeave, RebalanceAssigned, RebalanceRevoked, RebalanceLost:
	default:
		return r, fmt.Errorf("op %d: rebalance event %q: want join, assigned, revoked, lost or leave", op.Index, r.Event)
	}
	return r, nil
}
