package validate

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"gregor/checker"
	"gregor/history"
	"gregor/internal/stats"
	"gregor/reports"
	"gregor/workloads/all"
)

// Targets the issue sets: a bug is caught in at least 9 of 10 runs; the safe
// configuration never fails; no run of either crashes or ends unknown.
const (
	MinDetectionRate = 0.9
	MaxFalseAlarms   = 0
)

// Row kinds.
const (
	KindProbe   = "probe"   // a planted bug under its fault
	KindControl = "control" // a probe's exact settings without the bug
	KindSafe    = "safe"    // the false-alarm set (SafeSets)
)

// Row is one line of the validation table: a planted bug, its control, or
// a safe configuration, under one nemesis, over its runs.
type Row struct {
	Kind string `json:"kind"`
	// Bug is the planted bug of a probe or control row.
	Bug     string `json:"bug,omitempty"`
	Config  string `json:"config"` // the row label
	Nemesis string `json:"nemesis"`
	Runs    int    `json:"runs"`
	// Failed counts runs that ended in a forbidden anomaly: detections for a
	// probe, false alarms for a control or safe row.
	Failed int `json:"failed"`
	// Crashed and Unknown count runs that died or whose checker could not
	// decide: neither a detection nor a pass. Both fail the row's target
	// and count in Runs (never silently dropped).
	Crashed   int      `json:"crashed"`
	Unknown   int      `json:"unknown"`
	Anomalies []string `json:"anomalies,omitempty"` // forbidden anomalies seen
	// FirstFound is each detecting run's time from its first fault to the
	// first read that proved a forbidden anomaly (checker.Result.Evidence).
	FirstFound []time.Duration `json:"first_found_ns,omitempty"`
	// Rate is Failed of Runs with its 95% Wilson interval (RateLow, RateHigh).
	Rate     stats.Rate `json:"rate"`
	RateLow  float64    `json:"rate_low"`
	RateHigh float64    `json:"rate_high"`
	Pass     bool       `json:"pass"`
	Why      string     `json:"why,omitempty"`
	Reports  []string   `json:"reports,omitempty"`
}

// Inconclusive is Crashed + Unknown.
func (r Row) Inconclusive() int { return r.Crashed + r.Unknown }

// MedianFirst is the median of FirstFound; ok is false when no run found
// anything (0 is a real value: evidence complete by the first fault).
func (r Row) MedianFirst() (d time.Duration, ok bool) {
	if len(r.FirstFound) == 0 {
		return 0, false
	}
	s := slices.Clone(r.FirstFound)
	slices.Sort(s)
	return s[(len(s)-1)/2], true
}

// pass says whether the row meets its target: a probe detects in at least
// MinDetectionRate of its runs, a control or safe row never fails; and no
// run of any row crashed or ended unknown.
func (r Row) pass() bool {
	if r.Runs == 0 || r.Inconclusive() > 0 {
		return false
	}
	if r.Kind == KindProbe {
		return r.Rate.P() >= MinDetectionRate
	}
	return r.Failed <= MaxFalseAlarms
}

// Summary is a validation's outcome.
type Summary struct {
	Bugs []Row `json:"bugs"`
	// Safe holds the controls and the safe rows: every run that must not
	// fail.
	Safe []Row `json:"safe"`
	// SafeRuns, FalseAlarms and Inconclusive total the safe rows;
	// FalseAlarmRate is FalseAlarms of SafeRuns with its 95% Wilson
	// interval (0 of 100 bounds the rate only below 3.7%).
	SafeRuns       int        `json:"safe_runs"`
	FalseAlarms    int        `json:"false_alarms"`
	Inconclusive   int        `json:"inconclusive"`
	FalseAlarmRate stats.Rate `json:"false_alarm_rate"`
	FalseAlarmHigh float64    `json:"false_alarm_rate_high"`
	// Workloads are the workloads the safe runs covered.
	Workloads []string `json:"workloads"`
	Choices   []string `json:"choices"`
	Pass      bool     `json:"pass"`
}

// Summarize groups matrix cells (as `gregor validate` ran them, out being
// the matrix output folder) into rows, reading each detecting run's result
// and history for the time to the first forbidden anomaly.
func Summarize(out string, cells []reports.Cell, timeLimit time.Duration) *Summary {
	s := &Summary{Choices: Choices}
	why := map[string]string{}
	probeLabels := map[string]string{} // bug -> its probe's configuration label
	for _, p := range Probes(timeLimit) {
		why[BugLabel(p.Bug)] = p.Why
		probeLabels[p.Bug] = p.Config.Label()
	}
	rows := map[string]*Row{}
	var order []string
	for _, c := range cells {
		key := c.Config + "\x00" + c.Nemesis
		r, ok := rows[key]
		if !ok {
			r = &Row{Kind: KindSafe, Config: c.Config, Nemesis: c.Nemesis, Why: why[c.Config]}
			if b, isBug := strings.CutPrefix(c.Config, bugPrefix); isBug {
				r.Kind, r.Bug = KindProbe, b
			} else if b, isControl := strings.CutPrefix(c.Config, controlPrefix); isControl {
				r.Kind, r.Bug = KindControl, b
				r.Why = "the probe's exact settings, fault and seeds without the bug: a failure here is a false alarm, not a detection"
			}
			rows[key] = r
			order = append(order, key)
		}
		r.Runs++
		if c.Report != "" {
			r.Reports = append(r.Reports, c.Report)
		}
		switch c.Valid {
		case "false":
			r.Failed++
			for _, a := range c.Forbidden {
				if !slices.Contains(r.Anomalies, a) {
					r.Anomalies = append(r.Anomalies, a)
				}
			}
			if c.Report != "" {
				if d, err := firstFound(history.RunDir(filepath.Join(out, filepath.Dir(c.Report)))); err == nil {
					r.FirstFound = append(r.FirstFound, d)
				}
			}
		case "true":
		case "crashed":
			r.Crashed++
		default:
			r.Unknown++
		}
	}
	workloads := map[string]bool{}
	for _, k := range order {
		r := *rows[k]
		slices.Sort(r.Anomalies)
		r.Rate = stats.Rate{K: r.Failed, N: r.Runs}
		r.RateLow, r.RateHigh = r.Rate.Wilson()
		r.Pass = r.pass()
		if r.Kind == KindProbe {
			s.Bugs = append(s.Bugs, r)
			continue
		}
		s.Safe = append(s.Safe, r)
		s.SafeRuns += r.Runs
		s.FalseAlarms += r.Failed
		s.Inconclusive += r.Inconclusive()
		workloads[rowWorkload(r, probeLabels)] = true
	}
	slices.SortStableFunc(s.Bugs, func(a, b Row) int { return strings.Compare(a.Bug, b.Bug) })
	slices.SortStableFunc(s.Safe, func(a, b Row) int {
		return strings.Compare(a.Config+"\x00"+a.Nemesis, b.Config+"\x00"+b.Nemesis)
	})
	s.FalseAlarmRate = stats.Rate{K: s.FalseAlarms, N: s.SafeRuns}
	_, s.FalseAlarmHigh = s.FalseAlarmRate.Wilson()
	for w := range workloads {
		s.Workloads = append(s.Workloads, w)
	}
	slices.Sort(s.Workloads)
	s.Pass = true
	for _, r := range append(slices.Clone(s.Bugs), s.Safe...) {
		s.Pass = s.Pass && r.Pass
	}
	return s
}

// rowWorkload names the workload of a false-alarm row: a safe row's is in
// its label, a control's is its probe's (a control row is labelled by its
// bugs only, and probes run the txn and eos workloads as well as the queue).
func rowWorkload(r Row, probeLabels map[string]string) string {
	label := r.Config
	if r.Kind == KindControl {
		bug, _, _ := strings.Cut(r.Bug, ",") // bugs sharing a control share its settings
		label = probeLabels[bug]
	}
	w := strings.TrimPrefix(field(label, "workload"), "workload=")
	if all.Workloads.IsDefault(w) {
		return all.Workloads.Default().Name()
	}
	if commit := field(label, "commit"); commit != "" { // a consumer group's rows, by commit mode
		return w + " " + strings.TrimPrefix(commit, "commit=")
	}
	return w
}

// field is the "name=value" word of a row label, "" if none.
func field(label, name string) string {
	for _, w := range strings.Fields(label) {
		if strings.HasPrefix(w, name+"=") {
			return w
		}
	}
	return ""
}

// firstFound is, for the run stored in dir, the time from its first fault
// to the earliest moment the history proved a forbidden anomaly (the
// checker's Evidence: for a lost write the first read that passed its
// offset without it, not the acknowledgement its example cites), 0 when
// that predates the first fault.
func firstFound(dir history.RunDir) (time.Duration, error) {
	res, err := checker.ReadResultFile(dir.Results())
	if err != nil {
		return 0, err
	}
	first := int64(-1)
	for a := range res.Forbidden {
		if t, ok := res.Evidence[a]; ok && (first < 0 || t < first) {
			first = t
		}
	}
	if first < 0 {
		return 0, fmt.Errorf("%s: no evidence time for a forbidden anomaly (results written before checker.Result.Evidence)", dir.Results())
	}
	fault, err := firstFault(dir.History())
	if err != nil {
		return 0, err
	}
	return time.Duration(max(0, first-fault)), nil
}

// firstFault is the time of the first nemesis operation in a history.
func firstFault(path string) (int64, error) {
	ops, _, _, err := history.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, op := range ops {
		if op.Process == history.Nemesis {
			return op.Time, nil
		}
	}
	return 0, errors.New("no fault in the history")
}

// WriteTable prints the summary for a terminal.
func (s *Summary) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "planted bug\tnemesis\tdetected (95% Wilson CI)\tcrashed\tunknown\ttarget\tmedian to first proof (n)\tanomalies\t")
	for _, r := range s.Bugs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t\n", r.Bug, r.Nemesis, r.Rate, r.Crashed, r.Unknown, mark(r.Pass),
			fmtMedian(r), strings.Join(r.Anomalies, ","))
	}
	fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t")
	fmt.Fprintln(tw, "must not fail\tnemesis\tfalse alarms (95% Wilson CI)\tcrashed\tunknown\ttarget\t\tanomalies\t")
	for _, r := range s.Safe {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t\t%s\t\n", r.Config, r.Nemesis, r.Rate, r.Crashed, r.Unknown, mark(r.Pass), strings.Join(r.Anomalies, ","))
	}
	tw.Flush()
	fmt.Fprintf(w, "false alarms: %s in the safe runs and controls (workloads: %s); %d crashed or unknown\n",
		s.FalseAlarmRate, strings.Join(s.Workloads, ", "), s.Inconclusive)
}

func mark(ok bool) string {
	if ok {
		return "ok"
	}
	return "BELOW TARGET"
}

// fmtMedian renders a row's median time to the first proof of a forbidden
// anomaly and how many runs it is over, "-" when no run found one.
func fmtMedian(r Row) string {
	d, ok := r.MedianFirst()
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%s (n=%d)", d.Round(100*time.Millisecond), len(r.FirstFound))
}

// Section renders the summary as the matrix report's validation section.
func (s *Summary) Section() *reports.Validation {
	v := &reports.Validation{Choices: s.Choices, SafeRuns: s.SafeRuns, Alarms: s.FalseAlarms, Pass: s.Pass,
		AlarmRate:  s.FalseAlarmRate.String(),
		TargetRate: fmt.Sprintf("each planted bug caught in at least %.0f%% of its runs", 100*MinDetectionRate),
		Target: fmt.Sprintf("at most %d false alarms in the safe runs and the probes' controls (workloads: %s); no run crashed or unknown",
			MaxFalseAlarms, strings.Join(s.Workloads, ", "))}
	for _, r := range append(slices.Clone(s.Bugs), s.Safe...) {
		res := "detected " + r.Rate.String()
		name := r.Bug
		switch r.Kind {
		case KindControl:
			res, name = "false alarms "+r.Rate.String(), "control: "+r.Bug+" settings, no bug"
		case KindSafe:
			res, name = "false alarms "+r.Rate.String(), r.Config
		}
		v.Rows = append(v.Rows, reports.ValidationRow{Name: name, Nemesis: r.Nemesis, Result: res, Runs: r.Runs,
			Crashed: r.Crashed, Unknown: r.Unknown, Median: fmtMedian(r),
			Anomalies: strings.Join(r.Anomalies, ", "), Why: r.Why, Pass: r.Pass, Reports: r.Reports})
	}
	return v
}
