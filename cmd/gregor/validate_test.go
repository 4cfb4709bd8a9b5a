package main

import (
	"slices"
	"testing"

	"gregor/matrix"
	"gregor/validate"
)

// --generic plants bugs only where the theory forbids a lost acknowledged
// write: on default.yaml's safe row, a whole-cluster power loss without
// fsync loses acknowledged writes on a correct cluster (every replica's
// page cache goes at once), so a planted bug cannot show there by a loss;
// with fsync it cannot lose, and the cell stays, as every other nemesis.
func TestGenericSkipsCellsThatAllowLoss(t *testing.T) {
	spec, err := matrix.Load("../../matrix/default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cells, dropped, err := validate.GenericCells(spec, []string{"ack-before-isr"}, cellForbidsLoss)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dropped, []string{"power-loss-all"}) {
		t.Fatalf("dropped %v, want [power-loss-all] (fsync never); every other column forbids a loss on the safe row", dropped)
	}
	kept := map[string]bool{}
	for _, c := range cells {
		kept[c.Nemesis.Name] = true
	}
	for _, n := range spec.Nemeses {
		if n.Name != "power-loss-all" && !kept[n.Name] {
			t.Errorf("nemesis %s dropped, though the safe row forbids a loss under it", n.Name)
		}
	}
}

// The mapping reads run's own defaults: acks=1 allows a loss under a
// leader kill, acks=all with min ISR 2 does not; a flag run does not know
// is an error naming it, not a guess.
func TestPlannedRecord(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		allow bool
	}{
		{[]string{"--acks", "1", "--nemesis", "kill", "--nemesis-target", "leader"}, true},
		{[]string{"--acks", "all", "--min-isr", "2", "--nemesis", "kill", "--nemesis-target", "leader"}, false},
	} {
		keep, err := cellForbidsLoss(matrix.Cell{Args: tc.args})
		if err != nil {
			t.Fatal(err)
		}
		if keep == tc.allow {
			t.Errorf("%v: forbids loss %v, want %v", tc.args, keep, !tc.allow)
		}
	}
	if _, err := plannedRecord([]string{"--no-such-flag"}); err == nil {
		t.Fatal("an unknown flag was accepted")
	}
}
