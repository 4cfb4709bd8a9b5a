package main

import (
	"strings"
	"testing"

	"gregor/matrix"
)

// --seeds replaces a matrix's seeds with seeds per runtime; --runtime on a
// matrix with runtimes: keeps that runtime's cells (and refuses one it
// does not name); --lane takes RUNTIME=N of a known runtime.
func TestMatrixSeedsRuntimeAndLaneFlags(t *testing.T) {
	spec, err := matrix.Load("../../matrix/default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := pickSeeds(spec, "sim=4,process=2", "")
	if err != nil || rt != "" || spec.SeedsPerCell() != 6 {
		t.Fatalf("--seeds sim=4,process=2: runtime %q, %d seeds per cell, %v", rt, spec.SeedsPerCell(), err)
	}
	if rt, err = pickSeeds(spec, "", "process"); err != nil || rt != "" || spec.SeedsPerCell() != 2 {
		t.Fatalf("--runtime process: runtime %q, %d seeds per cell, %v", rt, spec.SeedsPerCell(), err)
	}
	cells, _ := spec.Cells()
	for _, c := range cells {
		if c.Runtime != "process" {
			t.Fatalf("--runtime process kept a %s cell", c.Runtime)
		}
	}
	if _, err := pickSeeds(spec, "", "docker"); err == nil || !strings.Contains(err.Error(), "runs on process") {
		t.Fatalf("--runtime docker on a process-only plan: %v", err)
	}
	lanes, err := parseLanes([]string{"sim=2", "process=4"})
	if err != nil || lanes["sim"] != 2 || lanes["process"] != 4 {
		t.Fatalf("--lane: %v, %v", lanes, err)
	}
	for _, bad := range []string{"sim", "sim=x", "=2", "simulation=2"} {
		if _, err := parseLanes([]string{bad}); err == nil || !strings.Contains(err.Error(), "--lane") {
			t.Errorf("--lane %s: %v", bad, err)
		}
	}
}
