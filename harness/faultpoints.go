package harness

import (
	"fmt"
	"slices"

	"gregor/cluster/faultpoint"
	"gregor/nemesis"
	"gregor/runtime"
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
	if (len(c.FaultPoints) > 0 || len(c.PointActions) > 0) && !slices.Contains(c.Nemeses, string(nemesis.FaultPoints)) {
		return fmt.Errorf("--fault-points and --fault-point-actions shape the fault-points nemesis: add --nemesis %s", nemesis.FaultPoints)
	}
	return nil
}

// admitFaultPoints refuses the fault-points nemesis on a runtime whose
// brokers have no points or no control channel for them.
func (t *Test) admitFaultPoints() error {
	if !slices.Contains(t.Nemeses, string(nemesis.FaultPoints)) || t.Runtime == nil {
		return nil
	}
	return runtime.CheckFaultPoints(t.Runtime)
}

func pointNames(names []string) []faultpoint.Point {
	out := make([]faultpoint.Point, 0, len(names))
	for _, n := range names {
		out = append(out, faultpoint.Point(n))
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
