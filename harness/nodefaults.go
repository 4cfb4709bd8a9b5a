package harness

import (
	"context"
	"errors"

	"gregor/cluster/nodefault"
	"gregor/nemesis"
	"gregor/runtime"
)

// admitNodeFaults refuses the disk-fault and clock-skew nemeses on a
// runtime whose brokers are not gregor's or that has no channel to them.
func (t *Test) admitNodeFaults() error {
	if t.Runtime == nil {
		return nil
	}
	for _, k := range t.Nemeses {
		if nemesis.IsNodeFaultKind(nemesis.Kind(k)) {
			if err := runtime.CheckNodeFaults(t.Runtime, k); err != nil {
				return err
			}
		}
	}
	return nil
}

// ArmNodeFaults passes disk and clock faults on to the wrapped cluster
// (runtime.NodeFaulter), so a standing delay does not hide them.
func (s standingDelay) ArmNodeFaults(ctx context.Context, id int32, c nodefault.Control) error {
	nf, ok := s.Cluster.(runtime.NodeFaulter)
	if !ok {
		return errNoNodeFaults
	}
	return nf.ArmNodeFaults(ctx, id, c)
}

// NodeFaultEvents passes the wrapped cluster's node events on.
func (s standingDelay) NodeFaultEvents(ctx context.Context, id int32) ([]nodefault.Event, error) {
	nf, ok := s.Cluster.(runtime.NodeFaulter)
	if !ok {
		return nil, errNoNodeFaults
	}
	return nf.NodeFaultEvents(ctx, id)
}

var errNoNodeFaults = errors.New("the cluster has no disk or clock faults: only gregor's own brokers on a runtime with a channel to them do (--runtime sim or process)")
