package runtime

import (
	"context"
	"strings"
	"testing"
)

type pointsRuntime struct {
	name             string
	foreign, channel bool
}

func (r pointsRuntime) Name() string                                      { return r.name }
func (pointsRuntime) Available(context.Context) error                     { return nil }
func (pointsRuntime) Start(context.Context, ClusterSpec) (Cluster, error) { return nil, nil }
func (r pointsRuntime) ForeignBrokers() bool                              { return r.foreign }
func (r pointsRuntime) FaultPoints() bool                                 { return r.channel }

// Foreign brokers have no fault points; gregor's own need a control channel.
func TestCheckFaultPoints(t *testing.T) {
	if err := CheckFaultPoints(pointsRuntime{name: "image", foreign: true, channel: true}); err == nil || !strings.Contains(err.Error(), "did not build") {
		t.Fatalf("foreign: %v", err)
	}
	if err := CheckFaultPoints(pointsRuntime{name: "docker"}); err == nil || !strings.Contains(err.Error(), "control channel") {
		t.Fatalf("no channel: %v", err)
	}
	if err := CheckFaultPoints(pointsRuntime{name: "process", channel: true}); err != nil {
		t.Fatal(err)
	}
}

// A runtime of gregor's brokers that cannot arm them says why.
type refusingRuntime struct{ pointsRuntime }

func (refusingRuntime) FaultPointsRefusal() string { return "the control file is out of reach" }

func TestCheckFaultPointsNamesTheRuntimesReason(t *testing.T) {
	err := CheckFaultPoints(refusingRuntime{})
	if err == nil || !strings.Contains(err.Error(), "the control file is out of reach") {
		t.Fatalf("got %v, want the runtime's reason", err)
	}
}
