package reports

import (
	"image/color"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gregor/checker"
	"gregor/checker/checkertest"
	"gregor/history"
)

const hostile = `<script>alert("x")</script><img src=x onerror=alert(1)>`

func writeRunReport(t *testing.T, ops []history.Op, cfg *history.Config) (string, *checker.Result) {
	t.Helper()
	res, err := checker.Check(ops, cfg, checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := WriteRun(f, RunInput{Title: "test run " + hostile, Config: cfg, Ops: ops, Result: &res, HistoryFile: "history.jsonl",
		Runtime: "kill: real (SIGKILL)\npartition: emulated " + hostile}); err != nil {
		t.Fatal(err)
	}
	return path, &res
}

// generated is a correct history with nemesis faults, an error string from
// the "cluster" that tries to inject markup, and the golden configuration.
func generated() ([]history.Op, *history.Config) {
	ops := checkertest.Generate(checkertest.GenOptions{Seed: 7, Ops: 3000, Keys: 4, Producers: 4, Consumers: 2, FailRate: 0.05, InfoRate: 0.05, NemesisEvery: 400})
	for i := range ops {
		if ops[i].Type == history.Fail && ops[i].F == history.FSend {
			ops[i].Error = hostile
		}
	}
	cfg := &history.Config{Acks: "all", MinISR: 2, RF: 3, Idempotence: true, Nemeses: []string{"kill"}, NemesisTarget: hostile}
	return ops, cfg
}

// TestRunReportInBrowser renders a run report in headless chromium and
// checks what a person would see: one bar per operation, one dot per send,
// the verdict, fault bands, and no markup injected from the history.
func TestRunReportInBrowser(t *testing.T) {
	ops, cfg := generated()
	path, res := writeRunReport(t, ops, cfg)
	if res.Valid != checker.ValidTrue {
		t.Fatalf("generated correct history: valid %v", res.Valid)
	}
	dom, shot := render(t, path)
	ivs, nemesis, _ := intervals(ops)
	if got := count(dom, `<rect class="op `); got != len(ivs) {
		t.Fatalf("timeline shows %d operations, history has %d", got, len(ivs))
	}
	_, sends := latency(ivs, nil, 1)
	if got := count(dom, `<circle class="lat `); got != sends {
		t.Fatalf("latency plot shows %d sends, history has %d", got, sends)
	}
	if len(nemesis) == 0 || count(dom, `<rect class="band"`) == 0 {
		t.Fatalf("no fault bands drawn for %d nemesis operations", len(nemesis))
	}
	mustContain(t, dom, `valid: true`, `id="availability"`, `id="keys"`, `history.jsonl`)
	if strings.Contains(dom, "<script") || strings.Contains(dom, "<img") {
		t.Fatal("markup from the history was injected into the page")
	}
	mustContain(t, dom, "&lt;script&gt;alert(")
	// The screenshot shows ok bars (green) and fault bands (pale red).
	if n := colours(shot, color.RGBA{0x3c, 0x9d, 0x4e, 0xff}); n < 200 {
		t.Fatalf("screenshot has %d green pixels: the timeline did not render", n)
	}
}

// TestRunReportNamesForbiddenAnomaly: a lost write under the golden
// configuration makes the report red, names the anomaly as forbidden, and
// links each example to its operation in the history excerpt.
func TestRunReportNamesForbiddenAnomaly(t *testing.T) {
	ops, _, _, err := history.ReadFile(filepath.Join("..", "checker", "testdata", "lost-write.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &history.Config{Acks: "all", MinISR: 2, RF: 3, Idempotence: true, Nemeses: []string{"kill"}}
	path, res := writeRunReport(t, ops, cfg)
	if res.Valid != checker.ValidFalse {
		t.Fatalf("lost-write fixture: valid %v", res.Valid)
	}
	dom, shot := render(t, path)
	mustContain(t, dom, `valid: false`, `id="anomaly-lost-write"`, `(forbidden)`)
	for _, ex := range res.Anomalies[checker.LostWrite] {
		for _, o := range ex.Ops {
			id := `id="op-` + itoa(o.Index) + `"`
			if !strings.Contains(dom, `href="#op-`+itoa(o.Index)+`"`) || !strings.Contains(dom, id) {
				t.Fatalf("example operation #%d is not linked to the history excerpt", o.Index)
			}
		}
	}
	if n := colours(shot, color.RGBA{0xfb, 0xe3, 0xe3, 0xff}); n < 100 {
		t.Fatalf("screenshot has %d pixels of the red verdict box", n)
	}
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }
