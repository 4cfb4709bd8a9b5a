package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gregor/checker"
)

// A group run's cell carries its committed-skips, redeliveries and
// rebalance cost into results.json and the matrix index; a queue run's
// carries none.
func TestMatrixGroupCell(t *testing.T) {
	res := &checker.Result{Counts: map[string]int{checker.CommittedSkip: 3, checker.Redelivered: 7},
		Groups: []checker.GroupFigures{{RebalanceCount: 2, TotalPause: 4e6, PeakLag: 40}}}
	c := CellFrom("workload=group", "consumer-crash", 1, res, "r.html")
	if c.Group == nil || c.Group.CommittedSkip != 3 || c.Group.Redelivered != 7 || c.Group.Rebalances != 2 || c.Group.TotalPauseMs != 4 {
		t.Fatalf("group cell %+v", c.Group)
	}
	if q := CellFrom("acks=all", "kill", 1, &checker.Result{Counts: map[string]int{}}, ""); q.Group != nil {
		t.Fatalf("queue cell with group figures: %+v", q.Group)
	}
	dir := t.TempDir()
	c2 := c
	c2.Seed = 2
	if err := WriteMatrix(dir, "groups", []Cell{c, c2}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"committed-skip: <b>6</b>", "redelivered: 14", "rebalances: 4, pause 8.0 ms"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("index lacks %q", want)
		}
	}
}
