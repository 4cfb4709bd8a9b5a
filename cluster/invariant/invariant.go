// Package invariant is the cluster's one switch for invariant checks.
//
// Each package keeps its invariants next to the fields they bind and checks
// them in its own invariants.go (etcd-io/raft style). The cheap ones run
// always; the ones that cost more than a few comparisons (walking segments,
// members, ISRs) run only when checks are on. Tests turn them on in TestMain,
// so a broken invariant stops the test at the change that broke it, not at
// the symptom a client sees seconds later. Production brokers leave them
// off: there a check's cost would be paid on every append.
package invariant

import (
	"fmt"
	"sync/atomic"
)

var on atomic.Bool

// Enable turns the checks on for the whole process. Tests call it from
// TestMain; it is never turned off again (a check that came and went during
// a test would make its result depend on timing).
func Enable() { on.Store(true) }

// On reports whether checks run. Callers test it before computing a check,
// so that a disabled check costs one atomic load.
func On() bool { return on.Load() }

// Must panics when err (a broken invariant found by a check) is not nil.
// Continuing would corrupt what the harness is testing: the state is wrong
// already, and every later answer built on it is suspect.
func Must(where string, err error) {
	if err != nil {
		panic(fmt.Sprintf("invariant broken in %s: %v", where, err))
	}
}
