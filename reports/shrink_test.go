package reports

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gregor/checker"
	"gregor/history"
)

// TestShrinkLinksInBrowser writes an original run's report and its shrunk
// run's, as gregor shrink lays them out in a store, and follows the links
// in headless chromium: the original's "shrunk run" link resolves to the
// shrunk report, whose "original run" link resolves back; both show the
// sizes before and after; a report without shrink.json has no section.
func TestShrinkLinksInBrowser(t *testing.T) {
	ops, _, _, err := history.ReadFile(filepath.Join("..", "checker", "testdata", "lost-write.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &history.Config{Acks: "all", MinISR: 2, RF: 3, Idempotence: true, Nemeses: []string{"kill"}}
	res, err := checker.Check(ops, cfg, checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	orig := filepath.Join(store, "queue", "20260101T000000.000Z")
	shrunk := filepath.Join(store, "queue-shrunk", "20260101T000100.000Z")
	links := history.ShrinkLinks{Anomalies: []string{checker.LostWrite, hostile},
		Before:  history.ScheduleSize{Faults: 7, FaultTime: history.Duration(21 * time.Second), End: history.Duration(25 * time.Second), TimeLimit: history.Duration(25 * time.Second)},
		After:   history.ScheduleSize{Faults: 1, FaultTime: history.Duration(2500 * time.Millisecond), End: history.Duration(3 * time.Second), TimeLimit: history.Duration(6 * time.Second)},
		Replays: 9}
	to, from := links, links
	to.ShrunkTo, from.ShrunkFrom = "../../queue-shrunk/20260101T000100.000Z", "../../queue/20260101T000000.000Z"
	write := func(dir string, l *history.ShrinkLinks) string {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, history.ReportFile)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := WriteRun(f, RunInput{Title: filepath.Base(dir), Config: cfg, Ops: ops, Result: &res, Shrink: l}); err != nil {
			t.Fatal(err)
		}
		return path
	}
	origReport, shrunkReport := write(orig, &to), write(shrunk, &from)
	plain := write(filepath.Join(store, "other", "x"), nil)

	follow := func(report, id string) string {
		t.Helper()
		dom, _ := render(t, report)
		m := regexp.MustCompile(`id="` + id + `" href="([^"]+)"`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("%s: no link #%s", report, id)
		}
		mustContain(t, dom, "7 faults, 21.0 s of faults", "1 faults, 2.5 s of faults", "<code>lost-write</code>", "&lt;script&gt;")
		if strings.Contains(dom, "<script") {
			t.Fatalf("%s: an anomaly name was injected as markup", report)
		}
		target := filepath.Join(filepath.Dir(report), filepath.FromSlash(m[1]))
		if _, err := os.Stat(target); err != nil {
			t.Fatalf("%s: #%s links %s, which does not exist: %v", report, id, m[1], err)
		}
		return target
	}
	if got := follow(origReport, "shrunk-to"); got != shrunkReport {
		t.Fatalf("the original links %s, want the shrunk run's report %s", got, shrunkReport)
	}
	if got := follow(shrunkReport, "shrunk-from"); got != origReport {
		t.Fatalf("the shrunk run links %s, want the original's report %s", got, origReport)
	}
	if dom, _ := render(t, plain); strings.Contains(dom, `id="shrink"`) {
		t.Fatal("a report without shrink.json shows a shrinking section")
	}
}
