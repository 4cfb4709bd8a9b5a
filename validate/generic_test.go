package validate

import (
	"slices"
	"strings"
	"testing"

	"gregor/checker"
	"gregor/internal/stats"
	"gregor/matrix"
	"gregor/reports"
)

// --generic plants each bug into the default matrix's safe rows only (the
// rows where a lost acknowledged write is forbidden), under every one of its
// nemeses and seeds with the matrix's own settings, plus a control without a
// bug.
func TestGenericCells(t *testing.T) {
	spec, err := matrix.Load("../matrix/default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bugs := []string{"ack-before-isr", "skip-min-isr"}
	// The theory's answer is cmd/gregor's (TestGenericSkipsCellsThatAllowLoss);
	// here one nemesis stands for the cells where it allows a loss.
	allowsLoss := spec.Nemeses[0].Name
	forbidsLoss := func(c matrix.Cell) (bool, error) { return c.Nemesis.Name != allowsLoss, nil }
	cells, dropped, err := GenericCells(spec, bugs, forbidsLoss)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dropped, []string{allowsLoss}) {
		t.Fatalf("dropped %v, want [%s]", dropped, allowsLoss)
	}
	want := (len(bugs) + 1) * (len(spec.Nemeses) - 1) * spec.SeedsPerCell()
	if len(cells) != want {
		t.Fatalf("%d cells, want %d (bugs and a control x nemeses but one x seeds of the one safe row)", len(cells), want)
	}
	perBug := map[string]map[string]int{}
	for _, c := range cells {
		args := strings.Join(c.Args, " ")
		if !strings.Contains(args, "--acks all") || !strings.Contains(args, "--min-isr 2") || !strings.Contains(args, "--unclean=false") {
			t.Fatalf("generic cell outside the safe rows: %s", args)
		}
		bug := "none"
		if i := strings.Index(args, "--bug "); i >= 0 {
			bug = strings.Fields(args[i+len("--bug "):])[0]
			if strings.Count(args, "--bug ") != 1 {
				t.Fatalf("more than one bug: %s", args)
			}
		}
		if perBug[bug] == nil {
			perBug[bug] = map[string]int{}
		}
		perBug[bug][c.Nemesis.Name]++
	}
	for _, b := range append(bugs, "none") {
		for _, n := range spec.Nemeses {
			if n.Name == allowsLoss {
				if perBug[b][n.Name] != 0 {
					t.Errorf("bug %s under %s, where the theory allows a loss: %d runs", b, n.Name, perBug[b][n.Name])
				}
				continue
			}
			if perBug[b][n.Name] != spec.SeedsPerCell() {
				t.Errorf("bug %s under %s: %d runs, want %d (one per seed)", b, n.Name, perBug[b][n.Name], spec.SeedsPerCell())
			}
		}
	}
	if _, _, err := GenericCells(spec, []string{"no-such-bug"}, forbidsLoss); err == nil {
		t.Fatal("an unknown bug was accepted")
	}
	unsafe := &matrix.Spec{Name: "u", Configs: []matrix.Settings{{Acks: "1"}}, Nemeses: spec.Nemeses, Seeds: []int64{1}}
	if _, _, err := GenericCells(unsafe, bugs, forbidsLoss); err == nil || !strings.Contains(err.Error(), "no safe configuration") {
		t.Fatalf("a matrix without a safe row: %v", err)
	}
}

// The table: a bug is caught when any run of any nemesis failed; a bug no
// run caught, or a control run that failed or crashed, fails the target.
func TestSummarizeGeneric(t *testing.T) {
	row := "acks=all minisr=2 rf=3 unclean=false idem=true"
	cell := func(bug, nem, valid string) reports.Cell {
		c := reports.Cell{Config: row, Nemesis: nem, Valid: valid}
		if bug != "" {
			c.Config += " bugs=" + bug
		}
		if valid == "false" {
			c.Forbidden = []string{checker.LostWrite}
		}
		return c
	}
	cells := []reports.Cell{
		cell("", "kill-leader", "true"), cell("", "pause-leader", "true"),
		cell("ack-before-isr", "kill-leader", "true"), cell("ack-before-isr", "pause-leader", "false"),
		cell("skip-min-isr", "kill-leader", "true"), cell("skip-min-isr", "pause-leader", "true"),
	}
	s := SummarizeGeneric("default", cells)
	if len(s.Rows) != 3 || s.Rows[0].Bug != NoBug || s.Rows[1].Bug != "ack-before-isr" {
		t.Fatalf("rows %+v", s.Rows)
	}
	a := s.Rows[1]
	if !a.Caught || a.Any.K != 1 || a.Any.N != 2 || a.ByNemesis["pause-leader"].K != 1 || a.ByNemesis["kill-leader"].K != 0 {
		t.Fatalf("ack-before-isr row %+v", a)
	}
	if s.Rows[2].Caught || s.Pass {
		t.Fatalf("skip-min-isr was never caught, yet %+v pass=%v", s.Rows[2], s.Pass)
	}
	var sb strings.Builder
	s.WriteTable(&sb)
	for _, w := range []string{"MISSED", "no false alarm", "1/2 = 50% (95% CI 9.5%-91%)"} {
		if !strings.Contains(sb.String(), w) {
			t.Fatalf("table lacks %q:\n%s", w, sb.String())
		}
	}
	cells[5] = cell("skip-min-isr", "pause-leader", "false")
	if s := SummarizeGeneric("default", cells); !s.Pass {
		t.Fatalf("every bug caught and a clean control, yet below target: %+v", s.Rows)
	}
	cells[0] = cell("", "kill-leader", "crashed")
	if s := SummarizeGeneric("default", cells); s.Pass || s.Rows[0].Crashed != 1 {
		t.Fatalf("a crashed control run passed: %+v", s.Rows[0])
	}
}

// --controls runs every row of a matrix, seeds overridden, and refuses a
// row with a planted bug; its summary counts forbidden anomalies per
// configuration and fails on any, or on a crashed or unknown run.
func TestControls(t *testing.T) {
	spec, err := matrix.Load("../matrix/default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cells, err := ControlCells(spec, 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(spec.Configs) * len(spec.Nemeses) * 5 * max(1, len(spec.Runtimes)); len(cells) != want {
		t.Fatalf("%d control cells, want %d (every row x nemesis x 5 seeds, on each runtime)", len(cells), want)
	}
	// A part of a long set of controls: seeds 6..8, each cell once per seed.
	part, err := ControlCells(spec, 6, 3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]int{}
	for _, c := range part {
		seen[c.Seed]++
	}
	if per := len(part) / 3; len(seen) != 3 || seen[6] != per || seen[7] != per || seen[8] != per {
		t.Fatalf("seeds of the part 6..8: %v of %d cells", seen, len(part))
	}
	bugged := *spec
	bugged.Configs = append(slices.Clone(spec.Configs), matrix.Settings{Acks: "all", Bugs: []string{"ack-before-isr"}})
	if _, err := ControlCells(&bugged, 1, 1); err == nil || !strings.Contains(err.Error(), "--generic") {
		t.Fatalf("a row planting a bug: %v", err)
	}
	run := func(cfg, nem, valid string, forbidden ...string) reports.Cell {
		return reports.Cell{Config: cfg, Nemesis: nem, Valid: valid, Forbidden: forbidden}
	}
	sum := SummarizeControls("m", []reports.Cell{run("a", "kill", "true"), run("a", "kill", "true"), run("b", "kill", "true"), run("b", "pause", "true")})
	if !sum.Pass || sum.Total != (stats.Rate{K: 0, N: 4}) || len(sum.Rows) != 2 || sum.Rows[0].Bug != "a" {
		t.Fatalf("clean controls: %+v", sum)
	}
	for name, cells := range map[string][]reports.Cell{
		"a false alarm": {run("a", "kill", "true"), run("b", "kill", "false", "duplicate")},
		"a crash":       {run("a", "kill", "crashed")},
		"an unknown":    {run("a", "kill", "unknown")},
	} {
		if s := SummarizeControls("m", cells); s.Pass {
			t.Errorf("%s: controls pass", name)
		}
	}
	s := SummarizeControls("m", []reports.Cell{run("b", "kill", "false", "duplicate"), run("b", "kill", "true")})
	var out strings.Builder
	s.WriteTable(&out)
	for _, want := range []string{"1/2", "duplicate", "false alarms: 1/2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	// A run without a verdict (crashed, unknown, or never run: an
	// interrupted matrix records its cells crashed) looked at nothing: it
	// is counted apart, never in a rate's n, so the interval is not
	// narrowed by runs nobody checked. An interrupted nightly controls
	// printed 0/170 for a row none of whose runs had run.
	s = SummarizeControls("m", []reports.Cell{run("a", "kill", "true"), run("a", "kill", "crashed"), run("a", "kill", "crashed"), run("a", "pause", "unknown")})
	if s.Total != (stats.Rate{K: 0, N: 1}) || s.Rows[0].ByNemesis["kill"] != (stats.Rate{K: 0, N: 1}) || s.Rows[0].ByNemesis["pause"].N != 0 ||
		s.Crashed != 2 || s.Unknown != 1 || s.Pass {
		t.Fatalf("runs without a verdict: %+v", s)
	}
	out.Reset()
	s.WriteTable(&out)
	if !strings.Contains(out.String(), "false alarms: 0/1") || !strings.Contains(out.String(), "2 crashed or not run, 1 unknown") {
		t.Errorf("headline:\n%s", out.String())
	}
}
