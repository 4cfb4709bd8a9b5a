package reports

import (
	"encoding/json"
	"encoding/xml"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gregor/internal/stats"
)

func sampleCells() []Cell {
	return []Cell{
		{Config: "acks=1 minisr=1 rf=3 unclean=false idem=false", Nemesis: "kill-leader", Seed: 1, Valid: "true",
			Counts: map[string]int{"lost-write": 9, "inconsistent-offsets": 3, "unseen": 3}, LostAcks: 12, Allowed: []string{"lost-write", "unseen"}, WriteAvailability: 0.9, Report: "runs/a/report.html"},
		{Config: "acks=all minisr=2 rf=3 unclean=false idem=true", Nemesis: "kill-leader", Seed: 1, Valid: "true",
			Counts: map[string]int{}, WriteAvailability: 0.8, Report: "runs/b/report.html"},
		{Config: "acks=all minisr=2 rf=3 unclean=false idem=true", Nemesis: "partition", Seed: 1, Valid: "false",
			Counts: map[string]int{"lost-write": 1}, LostAcks: 1, Forbidden: []string{"lost-write"}, WriteAvailability: 0.7, Report: "runs/c/report.html"},
		{Config: "acks=all minisr=2 rf=3 unclean=false idem=true <b>x</b>", Nemesis: "pause", Seed: 2, Valid: "crashed", Log: "boom <script>"},
	}
}

// TestMatrixReportInBrowser renders index.html and checks one row per
// configuration, one column per nemesis, the colours, and escaping.
func TestMatrixReportInBrowser(t *testing.T) {
	dir := t.TempDir()
	if err := WriteMatrix(dir, "matrix", sampleCells()); err != nil {
		t.Fatal(err)
	}
	dom, shot := render(t, filepath.Join(dir, "index.html"))
	if got := count(dom, `<tr><th><code>`); got != 3 {
		t.Fatalf("%d configuration rows, want 3", got)
	}
	if got := count(dom, `<td class="cell `); got != 3*3 {
		t.Fatalf("%d cells, want 9 (3 rows x 3 nemeses)", got)
	}
	for _, cls := range []string{`class="cell finding"`, `class="cell pass"`, `class="cell fail"`, `class="cell crashed"`} {
		if !strings.Contains(dom, cls) {
			t.Fatalf("no %s cell", cls)
		}
	}
	mustContain(t, dom, "lost acks: <b>12</b>", "4 runs: 1 with forbidden anomalies, 1 crashed, 1 demonstrating", "&lt;b&gt;x&lt;/b&gt;",
		// Every finished run is a control of its row's theory: 1 of the 3
		// finished runs failed, in the min ISR 2 row's 2.
		"forbidden anomalies in <b>1 of 3</b> finished runs", `<div class="controls fail">forbidden: <b>1/2</b> runs`, `<div class="controls">forbidden: <b>0/1</b> runs`, `<b>0/0</b> runs`)
	// A forbidden anomaly is marked in its red (badge and border) on top
	// of the cell's rate colour.
	if n := colours(shot, color.RGBA{0xd7, 0x00, 0x1f, 0xff}); n < 200 {
		t.Fatalf("screenshot has %d pixels of the forbidden-anomaly red", n)
	}
}

// TestJUnit: a forbidden anomaly is a failure, a crash an error, an allowed
// anomaly a pass with the finding in system-out.
func TestJUnit(t *testing.T) {
	dir := t.TempDir()
	if err := WriteMatrix(dir, "matrix", sampleCells()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	var s junitSuite
	if err := xml.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Tests != 4 || s.Failures != 1 || s.Errors != 1 {
		t.Fatalf("junit tests=%d failures=%d errors=%d", s.Tests, s.Failures, s.Errors)
	}
	found := false
	for _, c := range s.Cases {
		if strings.Contains(c.SystemOut, "unsafe configuration demonstrated: lost-write") && c.Failure == nil {
			found = true
		}
	}
	if !found {
		t.Fatal("the allowed lost-write cell is not a pass with its finding in system-out")
	}
}

// TestShardsMergeToUnsharded: results of two shards, merged, render the
// same index as the unsharded results.
func TestShardsMergeToUnsharded(t *testing.T) {
	cells := sampleCells()
	whole, s1, s2, merged := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	if err := WriteMatrix(whole, "m", append([]Cell(nil), cells...)); err != nil {
		t.Fatal(err)
	}
	if err := WriteMatrix(s1, "m", []Cell{cells[3], cells[0]}); err != nil {
		t.Fatal(err)
	}
	if err := WriteMatrix(s2, "m", []Cell{cells[2], cells[1]}); err != nil {
		t.Fatal(err)
	}
	all, err := ReadResults(filepath.Join(s1, "results.json"), filepath.Join(s2, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteMatrix(merged, "m", all); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"index.html", "results.json", "junit.xml"} {
		a, _ := os.ReadFile(filepath.Join(whole, f))
		b, _ := os.ReadFile(filepath.Join(merged, f))
		if string(a) != string(b) {
			t.Fatalf("merged %s differs from the unsharded one", f)
		}
	}
}

// TestValidationSectionInBrowser: gregor validate's section renders one row
// per bug and per safe nemesis, the verdict, the choices, and escapes text.
func TestValidationSectionInBrowser(t *testing.T) {
	dir := t.TempDir()
	val := &Validation{Pass: false, SafeRuns: 20, Alarms: 0, AlarmRate: "0/20 = 0% (95% CI 0%-16%)", TargetRate: "90%", Target: "0 false alarms",
		Choices: []string{"--concurrency 16 <i>why</i>"},
		Rows: []ValidationRow{
			{Name: "ack-before-isr", Nemesis: "isolate-leader", Result: "detected 10/10 (100%)", Median: "3.2s", Pass: true, Reports: []string{"runs/a/report.html"}},
			{Name: "truncate-to-hw", Nemesis: "kip101", Result: "detected 8/10 (80%)", Runs: 11, Crashed: 1, Unknown: 7, Median: "9s", Why: "<script>alert(1)</script>"},
			{Name: "safe (no bug)", Nemesis: "kill-leader", Result: "0/2 false alarms", Pass: true},
		}}
	if err := WriteMatrixValidation(dir, "gregor validate", sampleCells(), val); err != nil {
		t.Fatal(err)
	}
	dom, shot := render(t, filepath.Join(dir, "index.html"))
	if got := count(dom, `<tr class="vrow">`); got != 3 {
		t.Fatalf("%d validation rows, want 3", got)
	}
	// The sample size, the crashed and unknown runs, and the false-alarm
	// rate with its interval are shown.
	mustContain(t, dom, "<td>11</td><td>1</td><td>7</td>", `<b id="validation-alarms">0/20 = 0% (95% CI 0%-16%)</b>`)
	mustContain(t, dom, "BELOW TARGET", "detected 8/10 (80%)", "kip101", "&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;i&gt;why&lt;/i&gt;")
	if strings.Contains(dom, "<script>alert(1)") {
		t.Fatal("cluster text rendered as markup")
	}
	// The matrix of every run still follows.
	if got := count(dom, `<tr><th><code>`); got != 3 {
		t.Fatalf("%d matrix rows under the validation, want 3", got)
	}
	if n := colours(shot, color.RGBA{0xf7, 0xc9, 0xc9, 0xff}); n < 50 {
		t.Fatalf("a bug below target is not shown in the failure colour (%d pixels)", n)
	}
}

// TestMatrixSeedsSpreadInBrowser: a cell run with several seeds shows its
// lost acks as min / median / max and the share of runs that lost any with
// its Wilson interval, in index.html and in results.json; a crashed run is
// counted, not averaged in.
func TestMatrixSeedsSpreadInBrowser(t *testing.T) {
	dir := t.TempDir()
	cfg := "acks=1 minisr=1 rf=3 unclean=false idem=false"
	var cells []Cell
	for i, lost := range []int{12, 0, 7} {
		cells = append(cells, Cell{Config: cfg, Nemesis: "kill-leader", Seed: int64(i + 1), Valid: "true", LostAcks: lost,
			Counts: map[string]int{}, Report: "runs/x/report.html"})
	}
	cells = append(cells, Cell{Config: cfg, Nemesis: "kill-leader", Seed: 4, Valid: "crashed"},
		Cell{Config: cfg, Nemesis: "pause", Seed: 1, Valid: "true", LostAcks: 5, Counts: map[string]int{}})
	if err := WriteMatrix(dir, "matrix", cells); err != nil {
		t.Fatal(err)
	}
	dom, _ := render(t, filepath.Join(dir, "index.html"))
	mustContain(t, dom, "lost acks min / median / max: <b>0 / 7 / 12</b> (n=3)",
		"runs that lost any: <b>2/3 = 67% (95% CI 21%-94%)</b>", "crashed: 1", "lost acks: <b>5</b>")
	if got := count(dom, `class="spread"`); got != 1 {
		t.Fatalf("%d cells with a spread, want 1 (the one-run cell shows its count)", got)
	}
	var res MatrixResultsFile
	if err := json.Unmarshal(mustReadFile(t, filepath.Join(dir, "results.json")), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 5 || len(res.Cells) != 2 {
		t.Fatalf("results.json: %d runs, %d cells; want 5 and 2", len(res.Runs), len(res.Cells))
	}
	c := res.Cells[0]
	if c.LostAcks != (stats.Spread{Min: 0, Median: 7, Max: 12, N: 3}) || c.LostAny != (stats.Rate{K: 2, N: 3}) || c.Crashed != 1 || len(c.Seeds) != 4 {
		t.Fatalf("cell summary %+v", c)
	}
	if c.LostAnyLow < 0.2 || c.LostAnyHigh > 0.95 {
		t.Fatalf("interval [%v, %v]", c.LostAnyLow, c.LostAnyHigh)
	}
	// A results.json of the older form (a bare list of runs) still merges.
	legacy := filepath.Join(dir, "legacy.json")
	b, _ := json.Marshal(cells)
	if err := os.WriteFile(legacy, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadResults(legacy, filepath.Join(dir, "results.json")); err != nil || len(got) != 10 {
		t.Fatalf("ReadResults of a legacy list and a new file: %d runs, %v", len(got), err)
	}
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A crashed run gives no lost-acks figure and stays out of the rate's n;
// an undecided one (a check out of time) keeps its counted lost acks.
func TestSummariesLeaveCrashedRunsOutOfRates(t *testing.T) {
	runs := []Cell{
		{Config: "c", Nemesis: "n", Seed: 1, Valid: "true", LostAcks: 3},
		{Config: "c", Nemesis: "n", Seed: 2, Valid: "unknown"},
		{Config: "c", Nemesis: "n", Seed: 3, Valid: "crashed"},
	}
	s := Summaries(runs)
	if len(s) != 1 {
		t.Fatalf("%d cells", len(s))
	}
	if c := s[0]; c.LostAny != (stats.Rate{K: 1, N: 2}) || c.Unknown != 1 || c.Crashed != 1 || len(c.Seeds) != 3 {
		t.Fatalf("summary %+v: want the crashed run apart, the undecided one in the rate", c)
	}
}
