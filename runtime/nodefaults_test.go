package runtime

import (
	"strings"
	"testing"
)

type nodeFaultsRuntime struct {
	pointsRuntime
	nodeFaults bool
}

func (r nodeFaultsRuntime) NodeFaults() bool { return r.nodeFaults }

// Foreign brokers have no disk or clock seam; gregor's own need a channel
// to them. The refusal names the kind, the runtime and the fix.
func TestCheckNodeFaults(t *testing.T) {
	for _, name := range []string{"image", "external"} {
		err := CheckNodeFaults(nodeFaultsRuntime{pointsRuntime{name: name, foreign: true}, true}, "disk-fault")
		if err == nil || !strings.Contains(err.Error(), "did not build") || !strings.Contains(err.Error(), "--runtime "+name) || !strings.Contains(err.Error(), "use --runtime sim or process") {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if err := CheckNodeFaults(nodeFaultsRuntime{pointsRuntime{name: "docker"}, false}, "clock-skew"); err == nil || !strings.Contains(err.Error(), "clock-skew") || !strings.Contains(err.Error(), "no channel") {
		t.Fatalf("docker: %v", err)
	}
	for _, name := range []string{"sim", "process"} {
		if err := CheckNodeFaults(nodeFaultsRuntime{pointsRuntime{name: name}, true}, "disk-fault"); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
