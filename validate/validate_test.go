package validate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gregor/checker"
	"gregor/cluster"
	"gregor/harness"
	"gregor/reports"
)

// awaitingTxn are the planted transaction bugs whose probes need a part of
// issue 15 not built yet, each with what it awaits: a nemesis kind or a
// workload. TestEveryPlantedBugHasAProbe lets a bug go without a probe only
// while `gregor run` refuses what it awaits; once accepted, the bug needs
// its probe like any other, and its entry goes.
var awaitingTxn = map[string]string{}

// accepted reports whether `gregor run` accepts what a bug awaits.
func accepted(t *testing.T, what string) bool {
	c := harness.DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("the default run config does not validate: %v", err)
	}
	kind, name, _ := strings.Cut(what, " ")
	switch kind {
	case "nemesis":
		c.Nemeses = []string{name}
		err := c.Validate()
		return err == nil || !strings.Contains(err.Error(), name+`"`)
	case "workload":
		c.Workload = name
		err := c.Validate()
		return err == nil || !strings.HasPrefix(err.Error(), `--workload "`+name+`":`)
	}
	t.Fatalf("awaitingTxn: %q names neither a nemesis nor a workload", what)
	return false
}

// Every planted bug the broker carries (cluster.BugNames) has a probe, and
// every probe plants a bug the broker carries: a bug without a probe is
// never measured, a probe without a bug never fails. The one exception is
// explicit: awaitingTxn, each only while what it awaits is refused.
func TestEveryPlantedBugHasAProbe(t *testing.T) {
	probes := map[string]bool{}
	for _, p := range Probes(20 * time.Second) {
		probes[p.Bug] = true
	}
	bugs := cluster.BugNames()
	if len(bugs) == 0 {
		t.Fatal("cluster.BugNames lists no planted bug")
	}
	for _, b := range bugs {
		if probes[b] {
			continue
		}
		if what, ok := awaitingTxn[b]; ok && !accepted(t, what) {
			t.Logf("planted bug %q has no probe yet: it awaits the %s (issue 15)", b, what)
			continue
		}
		t.Errorf("planted bug %q (cluster.BugNames) has no probe: add to Probes in validate/probes.go "+
			"Probe{Bug: %q, Config: <safe, or the weakest setting the bug needs to lose data>, "+
			"Nemesis: <the fault or scenario most likely to expose it>, Why: <why that fault exposes it and the anomaly the checker reports>}, "+
			"then its row to the README's validate table and DESIGN.md section 6", b, b)
	}
	for b := range probes {
		if !slices.Contains(bugs, b) {
			t.Errorf("probe for %q, which cluster.BugNames does not list: the broker cannot plant it (remove the probe or add the switch in cluster/bugs.go)", b)
		}
	}
	for b := range awaitingTxn {
		if !slices.Contains(bugs, b) || probes[b] {
			t.Errorf("awaitingTxn names %q, which the broker does not plant or which has its probe: remove it from the list", b)
		}
	}
}

// Every planted bug the broker carries has a probe, each probe plants
// exactly its bug, and safe runs carry none and cover every nemesis.
func TestPlanCells(t *testing.T) {
	// One run per (safe configuration, nemesis) pair: the queue under
	// every safe nemesis, each group commit mode under two.
	safeRuns := len(SafeNemeses()) + 2*len(GroupCommitModes) + len(TxnSafeNemeses)
	cells, err := Plan{Runs: 3, SafeRuns: safeRuns, TimeLimit: 20 * time.Second, Seed: 5}.Cells()
	if err != nil {
		t.Fatal(err)
	}
	bugs := map[string]int{}
	safe := map[string]int{}
	groupModes := map[string]int{}
	txnSafe := map[string]int{}
	probeArgs, controls := map[string]string{}, map[string]string{}
	ids := map[string]bool{}
	for _, c := range cells {
		if ids[c.ID] {
			t.Fatalf("cell %s twice: two runs into one directory", c.ID)
		}
		ids[c.ID] = true
	}
	for _, c := range cells {
		args := strings.Join(c.Args, " ")
		limit := "--time-limit 20s"
		probe := strings.TrimPrefix(strings.TrimPrefix(c.Label, "bug="), "control=")
		switch {
		case probe == "truncate-to-hw":
			limit = "--time-limit 35s" // two KIP-101 stories (see Probes)
		case probe == "share-ack-after-lock-expiry":
			limit = "--time-limit 1m0s" // stalls past the 15 s lock (SafeShare)
		case slices.ContainsFunc(strings.Split(probe, ","), func(b string) bool { return b == "no-zombie-fencing" || b == "marker-before-prepare" }):
			limit = "--time-limit 40s" // two 15 s producer pauses (see Probes)
		}
		if !strings.Contains(args, limit) || !strings.Contains(args, "--dedicated-controllers") {
			t.Fatalf("cell %s: %s", c.ID, args)
		}
		if b, ok := strings.CutPrefix(c.Label, "bug="); ok {
			if strings.Count(args, "--bug ") != 1 || !strings.Contains(args, "--bug "+b) {
				t.Fatalf("probe %s plants %s", b, args)
			}
			bugs[b]++
			probeArgs[strings.Replace(args, " --bug "+b, "", 1)] = b
			continue
		}
		if b, ok := strings.CutPrefix(c.Label, "control="); ok {
			if strings.Contains(args, "--bug") {
				t.Fatalf("control of %s plants a bug: %s", b, args)
			}
			controls[args] = b
			continue
		}
		if strings.Contains(args, "--bug") || !strings.HasPrefix(c.Label, "safe: ") {
			t.Fatalf("safe cell with a bug or another label: %s %s", c.Label, args)
		}
		if !strings.Contains(args, "--acks all") || !strings.Contains(args, "--min-isr 2") || !strings.Contains(args, "--unclean=false") {
			t.Fatalf("safe cell is not the safe configuration: %s", args)
		}
		if c.Label == SafeLabel {
			safe[c.Nemesis.Name]++
		} else if m := commitMode(args); m != "" && strings.Contains(args, "--workload group") {
			groupModes[m]++
		} else if strings.Contains(args, "--workload txn") && strings.Contains(args, "--transaction-version 2") {
			txnSafe[c.Nemesis.Name]++
		} else {
			t.Fatalf("safe cell of neither workload: %s %s", c.Label, args)
		}
	}
	// Every probe's exact settings, fault and seeds run without the bug,
	// once: ack-before-isr and hw-past-lagging-isr share settings and fault,
	// so they share a control named after both.
	// 12 probes x 3 seeds, less the 3 runs ack-before-isr and
	// hw-past-lagging-isr share.
	if len(probeArgs) != 33 {
		t.Fatalf("%d distinct probe runs without their bug, want 33 (two probes share theirs)", len(probeArgs))
	}
	for a, b := range probeArgs {
		if !slices.Contains(strings.Split(controls[a], ","), b) {
			t.Errorf("probe run of %s %q has no control with the same arguments naming it (%q)", b, a, controls[a])
		}
	}
	if len(controls) != 33 {
		t.Errorf("%d control runs, want 33 (one per distinct probe run)", len(controls))
	}
	for _, b := range []string{"ack-before-isr", "hw-past-lagging-isr", "truncate-to-hw", "skip-min-isr", "elect-outside-isr",
		"lso-past-open-txn", "no-zombie-fencing", "marker-before-prepare", "txn-offsets-early", "assign-before-revoke",
		"share-ack-after-lock-expiry", "keep-deleted-acls"} {
		if bugs[b] != 3 {
			t.Errorf("bug %s: %d runs, want 3", b, bugs[b])
		}
	}
	total := 0
	for _, n := range SafeNemeses() {
		if safe[n.Name] < 1 {
			t.Errorf("safe runs under %s: %d, want 1 (%d over %d pairs)", n.Name, safe[n.Name], safeRuns, safeRuns)
		}
		total += safe[n.Name]
	}
	for _, m := range GroupCommitModes {
		if groupModes[m] != 2 {
			t.Errorf("group commit mode %s: %d safe runs, want 2 (one per nemesis)", m, groupModes[m])
		}
		total += groupModes[m]
	}
	for _, n := range TxnSafeNemeses {
		if txnSafe[n.Name] != 1 {
			t.Errorf("safe txn runs under %s: %d, want 1", n.Name, txnSafe[n.Name])
		}
		total += txnSafe[n.Name]
	}
	if total != safeRuns {
		t.Errorf("%d safe runs, want %d", total, safeRuns)
	}
	if _, err := (Plan{Runs: 1, TimeLimit: time.Second, Bugs: []string{"no-such-bug"}}).Cells(); err == nil {
		t.Fatal("an unknown bug was accepted")
	}
	if _, err := (Plan{TimeLimit: time.Second}).Cells(); err == nil {
		t.Fatal("a plan with no runs was accepted")
	}
}

func commitMode(args string) string {
	_, after, ok := strings.Cut(args, "--commit-mode ")
	if !ok {
		return ""
	}
	return strings.Fields(after)[0]
}

// writeRun stores a run's results.json and history.jsonl: a first fault at
// 2s and, when forbidden, a lost write whose evidence ends at 5s.
func writeRun(t *testing.T, out, name string, forbidden bool) string {
	t.Helper()
	dir := filepath.Join(out, "runs", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	res := checker.Result{Valid: checker.ValidTrue, Anomalies: map[string][]checker.Example{}, Forbidden: map[string]string{}}
	if forbidden {
		res.Valid = checker.ValidFalse
		res.Forbidden[checker.LostWrite] = "forbidden"
		// The example cites the acknowledgement at 1.5s (before the
		// fault); the read that proved the loss came at 5s.
		res.Anomalies[checker.LostWrite] = []checker.Example{{Ops: []checker.OpRef{{Time: 1.5e9}}}}
		res.Evidence = map[string]int64{checker.LostWrite: 5e9}
	}
	b, _ := json.Marshal(res)
	if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	hist := `{"index":0,"time":1000000000,"process":0,"type":"invoke","f":"send","value":[["send","t/0",1]]}
{"index":1,"time":2000000000,"process":"nemesis","type":"info","f":"kill","value":{"nodes":[1]}}
`
	if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(hist), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join("runs", name, "report.html")
}

// Detections, false alarms, inconclusive runs and the time to the first
// forbidden anomaly are counted per row, and the targets decide the verdict.
func TestSummarize(t *testing.T) {
	out := t.TempDir()
	var cells []reports.Cell
	for i := range 10 {
		c := reports.Cell{Config: BugLabel("ack-before-isr"), Nemesis: "isolate-leader", Seed: int64(i), Valid: "true"}
		if i < 9 {
			c.Valid, c.Forbidden = "false", []string{checker.LostWrite}
		}
		c.Report = writeRun(t, out, "a"+c.Nemesis+string(rune('0'+i)), c.Valid == "false")
		cells = append(cells, c)
	}
	cells = append(cells,
		reports.Cell{Config: BugLabel("truncate-to-hw"), Nemesis: "kip101", Valid: "false", Forbidden: []string{checker.InconsistentOffsets}},
		reports.Cell{Config: BugLabel("truncate-to-hw"), Nemesis: "kip101", Valid: "crashed"},
		reports.Cell{Config: SafeLabel, Nemesis: "kill-leader", Valid: "true"},
		reports.Cell{Config: SafeLabel, Nemesis: "kill-leader", Valid: "unknown"},
		reports.Cell{Config: SafeLabel, Nemesis: "pause-leader", Valid: "true"})
	s := Summarize(out, cells, 20*time.Second)
	if len(s.Bugs) != 2 || len(s.Safe) != 2 {
		t.Fatalf("rows: %d bugs, %d safe", len(s.Bugs), len(s.Safe))
	}
	a, tr := s.Bugs[0], s.Bugs[1]
	if a.Bug != "ack-before-isr" || a.Failed != 9 || a.Runs != 10 || !a.Pass {
		t.Fatalf("ack-before-isr row %+v", a)
	}
	if d, ok := a.MedianFirst(); !ok || d != 3*time.Second {
		t.Fatalf("median first %v (%v), want 3s (the proving read at 5s, first fault at 2s; the example's ack at 1.5s is not the proof)", d, ok)
	}
	if _, ok := s.Safe[0].MedianFirst(); ok {
		t.Fatal("a row that found nothing has a median time")
	}
	if tr.Failed != 1 || tr.Crashed != 1 || tr.Runs != 2 || tr.Pass {
		t.Fatalf("truncate-to-hw row %+v: 1 of 2 is below 90%%, and the crashed run counts", tr)
	}
	if s.SafeRuns != 3 || s.FalseAlarms != 0 || s.Safe[0].Unknown != 1 || s.Inconclusive != 1 {
		t.Fatalf("safe rows %+v", s.Safe)
	}
	// An unknown safe run fails its row: it was never shown to pass.
	if s.Safe[0].Pass || !s.Safe[1].Pass {
		t.Fatalf("safe rows' verdicts %+v", s.Safe)
	}
	if s.Pass {
		t.Fatal("a bug below target passed the validation")
	}
	// A probe row whose every run detected still fails when one more crashed.
	crashedProbe := append(slices.Clone(cells[:9]), reports.Cell{Config: BugLabel("ack-before-isr"), Nemesis: "isolate-leader", Valid: "crashed"})
	if r := Summarize(out, crashedProbe, 20*time.Second).Bugs[0]; r.Pass || r.Runs != 10 || r.Crashed != 1 {
		t.Fatalf("9 detections and a crash: %+v, want below target (the crash counts)", r)
	}
	cells = append(cells, reports.Cell{Config: SafeLabel, Nemesis: "pause-leader", Valid: "false", Forbidden: []string{checker.LostWrite}},
		reports.Cell{Config: ControlLabel("truncate-to-hw"), Nemesis: "kip101", Valid: "true"})
	s = Summarize(out, cells, 20*time.Second)
	if s.FalseAlarms != 1 || s.Safe[len(s.Safe)-1].Pass {
		t.Fatalf("a safe run with a forbidden anomaly is not a false alarm: %+v", s.Safe)
	}
	if s.Safe[0].Kind != KindControl || s.SafeRuns != 5 {
		t.Fatalf("the control run is not counted with the safe runs: %+v", s.Safe)
	}
	// 1 of 5 with its 95% Wilson interval.
	if lo, hi := s.FalseAlarmRate.Wilson(); s.FalseAlarmRate.String() != "1/5 = 20% (95% CI 3.6%-62%)" || lo <= 0 || hi != s.FalseAlarmHigh {
		t.Fatalf("false alarm rate %s [%v, %v]", s.FalseAlarmRate, lo, hi)
	}
	// The report's section carries the same rates, intervals, sample
	// sizes, and crashed and unknown counts.
	sec := s.Section()
	if sec.AlarmRate != "1/5 = 20% (95% CI 3.6%-62%)" || sec.SafeRuns != 5 || sec.Pass {
		t.Fatalf("section %+v", sec)
	}
	var sawCrash, sawUnknown bool
	for _, r := range sec.Rows {
		if !strings.Contains(r.Result, "95% CI") || r.Runs == 0 {
			t.Fatalf("section row without its interval or sample size: %+v", r)
		}
		sawCrash = sawCrash || (r.Name == "truncate-to-hw" && r.Crashed == 1 && !r.Pass)
		sawUnknown = sawUnknown || (r.Nemesis == "kill-leader" && r.Unknown == 1 && !r.Pass)
	}
	if !sawCrash || !sawUnknown {
		t.Fatalf("section rows %+v lack the crashed or the unknown run", sec.Rows)
	}
	var sb strings.Builder
	s.WriteTable(&sb)
	for _, want := range []string{"ack-before-isr", "9/10 = 90% (95% CI 60%-98%)", "BELOW TARGET", "false alarms: 1/5 = 20% (95% CI 3.6%-62%)", "3s (n=9)"} {
		if !strings.Contains(sb.String(), want) {
			t.Fatalf("table lacks %q:\n%s", want, sb.String())
		}
	}
}

// The false-alarm line names the workloads its runs covered: a control is
// its probe's workload (txn, eos), not the queue's.
func TestSummarizeNamesWorkloads(t *testing.T) {
	txn := SafeTxn(20 * time.Second)
	cells := []reports.Cell{
		{Config: ControlLabel("lso-past-open-txn"), Nemesis: "kill-leader", Valid: "true"},
		{Config: ControlLabel("txn-offsets-early"), Nemesis: "client-crash", Valid: "true"},
		{Config: SafeConfigLabel(txn), Nemesis: "pause-producer", Valid: "true"},
	}
	s := Summarize(t.TempDir(), cells, 20*time.Second)
	if got := strings.Join(s.Workloads, ","); got != "eos,txn" {
		t.Fatalf("workloads %q, want eos,txn (the controls' probes' and the safe txn row's)", got)
	}
	cells = append(cells, reports.Cell{Config: SafeLabel, Nemesis: "kill-leader", Valid: "true"},
		reports.Cell{Config: ControlLabel("ack-before-isr", "hw-past-lagging-isr"), Nemesis: "isolate-leader", Valid: "true"})
	if got := strings.Join(Summarize(t.TempDir(), cells, 20*time.Second).Workloads, ","); got != "eos,queue,txn" {
		t.Fatalf("workloads %q, want eos,queue,txn", got)
	}
}
