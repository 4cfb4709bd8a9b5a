package matrix

import (
	"strings"
	"testing"
)

// matrix/groups.yaml runs the group workload with the commit modes, the
// incident's swallowed failures, both assignor/static pairs, and the three
// consumer nemeses, each configuration under each nemesis.
func TestGroupsMatrixCoversTheMustShows(t *testing.T) {
	s, err := Load("groups.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cells, err := s.Cells()
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 6*3*2 {
		t.Fatalf("%d cells, want 6 configurations x 3 nemeses x 2 seeds", len(cells))
	}
	joined := ""
	for _, c := range cells {
		a := strings.Join(c.Args, " ")
		if !strings.Contains(a, "--workload group") {
			t.Errorf("cell %s is not a group run: %s", c.ID, a)
		}
		joined += a + "\n"
	}
	for _, want := range []string{"--commit-mode auto --auto-commit-interval 1s", "--failure-handling swallow", "--failure-handling retry",
		"--commit-mode before", "--commit-mode on-revoked", "--assignor cooperative-sticky", "--static=true", "--assignor range", "--static=false",
		"--nemesis client-crash", "--nemesis consumer-join", "--nemesis consumer-restart", "--consumers 3"} {
		if !strings.Contains(joined, want) {
			t.Errorf("groups matrix lacks %q", want)
		}
	}
}

// Group dimensions cross like the others and switch the workload on.
func TestGroupDimensions(t *testing.T) {
	d := Dimensions{Acks: []string{"all"}, GroupDimensions: GroupDimensions{CommitMode: []string{"auto", "after"},
		Assignor: []string{"range", "cooperative-sticky"}, Static: []bool{false, true}}}
	out := d.expand()
	if len(out) != 8 {
		t.Fatalf("%d configurations, want 2x2x2", len(out))
	}
	labels := map[string]bool{}
	for _, s := range out {
		if s.Workload != "group" {
			t.Fatalf("group dimension without the group workload: %+v", s)
		}
		labels[s.Label()] = true
	}
	if len(labels) != 8 {
		t.Fatalf("labels not distinct: %v", labels)
	}
}

// Rows of groups.yaml are labelled by their group settings (the workload
// comes from the defaults), one distinct label per configuration.
func TestGroupsMatrixLabels(t *testing.T) {
	s, err := Load("groups.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cells, _ := s.Cells()
	labels := map[string]bool{}
	for _, c := range cells {
		if !strings.HasPrefix(c.Label, "workload=group commit=") {
			t.Errorf("label %q", c.Label)
		}
		labels[c.Label] = true
	}
	if len(labels) != 6 {
		t.Fatalf("%d distinct row labels, want 6: %v", len(labels), labels)
	}
}
