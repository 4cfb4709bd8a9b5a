package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gregor/cluster/faultpoint"
	"gregor/history"
	"gregor/nemesis"
	"gregor/runtime"
	"gregor/workloads/all"
)

// validatePoints checks --fault-points and --fault-point-actions.
func (c *Config) validatePoints() error {
	if _, err := nemesis.ParsePoints(c.FaultPoints); err != nil {
		return fmt.Errorf("--fault-points: %w", err)
	}
	for _, a := range c.PointActions {
		if !slices.Contains(faultpoint.Actions, faultpoint.Action(a)) {
			return fmt.Errorf("--fault-point-actions: unknown action %q: choose from %v", a, faultpoint.Actions)
		}
	}
	if c.PointTarget != "" {
		if _, err := nemesis.ParseTarget(c.PointTarget); err != nil {
			return fmt.Errorf("--fault-point-target: %w", err)
		}
	}
	if c.PointSpan != "" && !slices.Contains(nemesis.PointSpans, nemesis.PointSpan(c.PointSpan)) {
		return fmt.Errorf("--fault-point-span %q: choose from %v", c.PointSpan, nemesis.PointSpans)
	}
	for _, a := range c.PointAims {
		if !slices.Contains(faultpoint.Aims, faultpoint.Aim(a)) {
			return fmt.Errorf("--fault-point-aim: unknown aim %q: choose from %v", a, faultpoint.Aims)
		}
	}
	if c.PointAfter < 0 || c.PointAfter > time.Minute {
		return fmt.Errorf("--fault-point-after %v: give 0 to 1m", c.PointAfter)
	}
	if (c.PointAfter != 0 || c.PointTarget != "" || c.PointSpan != "" || len(c.FaultPoints) > 0 || len(c.PointActions) > 0 || len(c.PointAims) > 0) &&
		!slices.Contains(c.Nemeses, string(nemesis.FaultPoints)) {
		return fmt.Errorf("--fault-points, --fault-point-actions, --fault-point-target, --fault-point-span and --fault-point-aim shape the fault-points nemesis: add --nemesis %s", nemesis.FaultPoints)
	}
	return nil
}

// admitFaultPoints refuses the fault-points nemesis on a runtime whose
// brokers have no points or no control channel for them, and an action the
// runtime does not carry out; with no --fault-point-actions the steps draw
// from the runtime's actions (the sim's: crash and cut).
func (t *Test) admitFaultPoints() error {
	if !slices.Contains(t.Nemeses, string(nemesis.FaultPoints)) || t.Runtime == nil {
		return nil
	}
	if err := runtime.CheckFaultPoints(t.Runtime); err != nil {
		return err
	}
	aims := runtime.PointAims(t.Runtime)
	for _, a := range t.PointAims {
		if !slices.Contains(aims, faultpoint.Aim(a)) {
			return fmt.Errorf("--fault-point-aim %s with --runtime %s: it carries out only %v (a broker process sees only its own hits, so it cannot act at a hit about it made by another); use --runtime sim", a, t.Runtime.Name(), aims)
		}
	}
	can := runtime.PointActions(t.Runtime)
	if can == nil {
		return nil
	}
	if len(t.PointActions) == 0 {
		for _, a := range nemesis.DefaultPointActions {
			if slices.Contains(can, a) {
				t.PointActions = append(t.PointActions, string(a))
			}
		}
		return nil
	}
	for _, a := range t.PointActions {
		if !slices.Contains(can, faultpoint.Action(a)) {
			return fmt.Errorf("--fault-point-actions %s with --runtime %s: it carries out only %v", a, t.Runtime.Name(), can)
		}
	}
	return nil
}

// drawnPoints are the points a fault-points step draws from: --fault-points,
// or else the points the run's workload reaches (issue 29: a point never
// reached arms a step that fires nothing). Every workload writes records
// (replication) and restarts brokers (controller); one with a consumer
// group reaches the group coordinator, one with transactions the
// transaction coordinator; segment-rolled only by --fault-points (a short
// run's log stays in its first segment). The draw knows the workload, never
// the bug.
func (c *Config) drawnPoints() []faultpoint.Point {
	if len(c.FaultPoints) > 0 {
		return pointNames(c.FaultPoints)
	}
	in := []faultpoint.Scope{faultpoint.Replication, faultpoint.Controller}
	d, ok := all.Workloads.Lookup(c.Workload)
	groups := ok && d.Offers(history.NemesisConsumerRestart)
	txns := ok && d.Offers(history.NemesisKillTxnCoordinator)
	if groups || txns {
		in = append(in, faultpoint.Coordinators, faultpoint.Groups)
	}
	if txns {
		in = append(in, faultpoint.Transactions)
	}
	return faultpoint.PointsIn(in...)
}

func pointNames(names []string) []faultpoint.Point {
	out := make([]faultpoint.Point, 0, len(names))
	for _, n := range names {
		out = append(out, faultpoint.Point(n))
	}
	return out
}

func aimNames(names []string) []faultpoint.Aim {
	out := make([]faultpoint.Aim, 0, len(names))
	for _, n := range names {
		out = append(out, faultpoint.Aim(n))
	}
	return out
}

func actionNames(names []string) []faultpoint.Action {
	out := make([]faultpoint.Action, 0, len(names))
	for _, n := range names {
		out = append(out, faultpoint.Action(n))
	}
	return out
}

// ArmFaultPoints passes fault points on to the wrapped cluster
// (runtime.FaultPointer), so a standing delay does not hide them.
func (s standingDelay) ArmFaultPoints(ctx context.Context, id int32, arms []faultpoint.Arm) error {
	fp, ok := s.Cluster.(runtime.FaultPointer)
	if !ok {
		return errNoPoints
	}
	return fp.ArmFaultPoints(ctx, id, arms)
}

// FaultPointFirings passes the wrapped cluster's firings on.
func (s standingDelay) FaultPointFirings(ctx context.Context, id int32) ([]faultpoint.Firing, error) {
	fp, ok := s.Cluster.(runtime.FaultPointer)
	if !ok {
		return nil, errNoPoints
	}
	return fp.FaultPointFirings(ctx, id)
}

var errNoPoints = errors.New("the cluster has no fault points: only gregor's own brokers on a runtime with their control channel do (--runtime process)")
