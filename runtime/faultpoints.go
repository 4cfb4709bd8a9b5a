package runtime

import (
	"context"
	"fmt"

	"gregor/cluster/faultpoint"
)

// FaultPointer is a cluster whose brokers are gregor's own, built with the
// fault points of cluster/faultpoint, and which can reach a node's control
// channel (the process runtime: a control file in the node's data
// directory, polled by the broker).
type FaultPointer interface {
	// ArmFaultPoints replaces the points armed on node id with arms (none:
	// disarm). A restarted node keeps them (the file survives it).
	ArmFaultPoints(ctx context.Context, id int32, arms []faultpoint.Arm) error
	// FaultPointFirings returns every firing node id recorded so far, in
	// order (including those of its earlier lives).
	FaultPointFirings(ctx context.Context, id int32) ([]faultpoint.Firing, error)
}

// CheckFaultPoints says why runtime r cannot run the fault-points nemesis,
// or nil when it can: a runtime whose brokers are not gregor's (an image,
// an external cluster) has no points, and a runtime of gregor's brokers
// without a control channel for them cannot arm any.
func CheckFaultPoints(r Runtime) error {
	if IsForeign(r) {
		return fmt.Errorf("--nemesis fault-points with --runtime %s: a cluster gregor did not build has no fault points; use --runtime process or sim", r.Name())
	}
	if why, ok := r.(interface{ FaultPointsRefusal() string }); ok {
		return fmt.Errorf("--nemesis fault-points with --runtime %s: %s; use --runtime process or sim", r.Name(), why.FaultPointsRefusal())
	}
	if fp, ok := r.(interface{ FaultPoints() bool }); !ok || !fp.FaultPoints() {
		return fmt.Errorf("--nemesis fault-points with --runtime %s: this runtime has no control channel for the brokers' fault points yet; use --runtime process or sim", r.Name())
	}
	return nil
}

// PointActions are the fault-point actions runtime r carries out, nil for
// every one (faultpoint.Actions). A runtime that holds brokers in its own
// process (the sim) may carry out only those that do not block at the
// point.
func PointActions(r Runtime) []faultpoint.Action {
	if pa, ok := r.(interface{ PointActions() []faultpoint.Action }); ok {
		return pa.PointActions()
	}
	return nil
}

// PointAims are the aims runtime r carries out: AimAbout needs every
// node's points in one registry (the simulation holds every broker in its
// process); a runtime of broker processes sees in each only that broker's
// hits, so it carries out AimHit alone.
func PointAims(r Runtime) []faultpoint.Aim {
	if pa, ok := r.(interface{ PointAims() []faultpoint.Aim }); ok {
		return pa.PointAims()
	}
	return []faultpoint.Aim{faultpoint.AimHit}
}
