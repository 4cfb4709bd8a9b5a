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
	"gregor/reports"
)

// Targets the issue sets: a bug is caught in at least 9 of 10 runs; the safe
// configuration never fails.
const (
	MinDetectionRate = 0.9
	MaxFalseAlarms   = 0
)

// Row is one line of the validation table: a planted bug (or the safe
// configuration under one nemesis) over its runs.
type Row struct {
	Bug     string `json:"bug,omitempty"` // "" for the safe configuration
	Nemesis string `json:"nemesis"`
	Runs    int    `json:"runs"`
	// Failed counts runs that ended in a forbidden anomaly: detections for a
	// bug, false alarms for the safe configuration.
	Failed int `json:"failed"`
	// Inconclusive counts runs that crashed or ended "unknown": neither a
	// detection nor a pass.
	Inconclusive int      `json:"inconclusive"`
	Anomalies    []string `json:"anomalies,omitempty"` // forbidden anomalies seen
	// FirstFound is each detecting run's time from its first fault to the
	// first evidence of a forbidden anomaly.
	FirstFound []time.Duration `json:"first_found_ns,omitempty"`
	Why        string          `json:"why,omitempty"`
	Reports    []string        `json:"reports,omitempty"`
}

// Rate is Failed / Runs.
func (r Row) Rate() float64 {
	if r.Runs == 0 {
		return 0
	}
	return float64(r.Failed) / float64(r.Runs)
}

// MedianFirst is the median of FirstFound; ok is false when no run found
// anything (0 is a real value: evidence complete by the first fault).
func (r Row) MedianFirst() (d time.Duration, ok bool) {
	if len(r.FirstFound) == 0 {
		return 0, false
	}
	s := slices.Clone(r.FirstFound)
	slices.Sort(s)
	return s[len(s)/2], true
}

// Pass says whether the row meets its target.
func (r Row) Pass() bool {
	if r.Bug == "" {
		return r.Failed <= MaxFalseAlarms
	}
	return r.Runs > 0 && r.Rate() >= MinDetectionRate
}

// Summary is a validation's outcome.
type Summary struct {
	Bugs []Row `json:"bugs"`
	Safe []Row `json:"safe"`
	// SafeRuns and FalseAlarms total the safe rows.
	SafeRuns    int      `json:"safe_runs"`
	FalseAlarms int      `json:"false_alarms"`
	Choices     []string `json:"choices"`
}

// Pass says whether every bug was caught often enough and no safe run failed.
func (s *Summary) Pass() bool {
	for _, r := range append(slices.Clone(s.Bugs), s.Safe...) {
		if !r.Pass() {
			return false
		}
	}
	return true
}

// Summarize groups matrix cells (as `gregor validate` ran them, out being
// the matrix output folder) into rows, reading each detecting run's result
// and history for the time to the first forbidden anomaly.
func Summarize(out string, cells []reports.Cell, timeLimit time.Duration) *Summary {
	s := &Summary{Choices: Choices}
	why := map[string]string{}
	for _, p := range Probes(timeLimit) {
		why[BugLabel(p.Bug)] = p.Why
	}
	rows := map[string]*Row{}
	var order []string
	for _, c := range cells {
		key := c.Config + "\x00" + c.Nemesis
		r, ok := rows[key]
		if !ok {
			r = &Row{Nemesis: c.Nemesis, Why: why[c.Config]}
			if b, isBug := strings.CutPrefix(c.Config, "bug="); isBug {
				r.Bug = b
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
		default:
			r.Inconclusive++
		}
	}
	for _, k := range order {
		r := *rows[k]
		slices.Sort(r.Anomalies)
		if r.Bug != "" {
			s.Bugs = append(s.Bugs, r)
			continue
		}
		s.Safe = append(s.Safe, r)
		s.SafeRuns += r.Runs
		s.FalseAlarms += r.Failed
	}
	slices.SortStableFunc(s.Bugs, func(a, b Row) int { return strings.Compare(a.Bug, b.Bug) })
	slices.SortStableFunc(s.Safe, func(a, b Row) int { return strings.Compare(a.Nemesis, b.Nemesis) })
	return s
}

// firstFound is, for the run stored in dir, the time from its first fault
// to the earliest moment the evidence of a forbidden anomaly was complete:
// per example the latest operation it cites, the earliest such over the
// examples, and 0 when that predates the fault (a record acknowledged just
// before the fault and lost through it: the checker's examples cite the
// acknowledgement, not the reads that later missed it).
func firstFound(dir history.RunDir) (time.Duration, error) {
	res, err := checker.ReadResultFile(dir.Results())
	if err != nil {
		return 0, err
	}
	first := int64(-1)
	for a := range res.Forbidden {
		for _, ex := range res.Anomalies[a] {
			last := int64(-1)
			for _, op := range ex.Ops {
				last = max(last, op.Time)
			}
			if last >= 0 && (first < 0 || last < first) {
				first = last
			}
		}
	}
	if first < 0 {
		return 0, errors.New("no forbidden example cites an operation")
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
	fmt.Fprintln(tw, "planted bug\tnemesis\tdetected\trate\tmedian to first\tanomalies\t")
	for _, r := range s.Bugs {
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%.0f%% %s\t%s\t%s\t\n", r.Bug, r.Nemesis, r.Failed, r.Runs, 100*r.Rate(), mark(r.Pass()),
			fmtMedian(r), strings.Join(r.Anomalies, ","))
	}
	fmt.Fprintln(tw, "\t\t\t\t\t\t")
	fmt.Fprintln(tw, "safe configuration\tnemesis\tfalse alarms\t\t\tinconclusive\t")
	for _, r := range s.Safe {
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t\t%d\t\n", "acks=all minisr=2 unclean=off", r.Nemesis, r.Failed, r.Runs, mark(r.Pass()), r.Inconclusive)
	}
	tw.Flush()
	fmt.Fprintf(w, "false alarms: %d in %d safe runs\n", s.FalseAlarms, s.SafeRuns)
}

func mark(ok bool) string {
	if ok {
		return "ok"
	}
	return "BELOW TARGET"
}

// fmtMedian renders a row's median time to the first forbidden anomaly,
// "-" when no run found one.
func fmtMedian(r Row) string {
	d, ok := r.MedianFirst()
	if !ok {
		return "-"
	}
	return d.Round(100 * time.Millisecond).String()
}

// Section renders the summary as the matrix report's validation section.
func (s *Summary) Section() *reports.Validation {
	v := &reports.Validation{Choices: s.Choices, SafeRuns: s.SafeRuns, Alarms: s.FalseAlarms, Pass: s.Pass(),
		TargetRate: fmt.Sprintf("each planted bug caught in at least %.0f%% of its runs", 100*MinDetectionRate),
		Target:     fmt.Sprintf("at most %d false alarms in the safe configuration", MaxFalseAlarms)}
	for _, r := range s.Bugs {
		v.Rows = append(v.Rows, reports.ValidationRow{Name: r.Bug, Nemesis: r.Nemesis,
			Result: fmt.Sprintf("detected %d/%d (%.0f%%)", r.Failed, r.Runs, 100*r.Rate()), Median: fmtMedian(r),
			Anomalies: strings.Join(r.Anomalies, ", "), Why: r.Why, Pass: r.Pass(), Reports: r.Reports})
	}
	for _, r := range s.Safe {
		res := fmt.Sprintf("%d/%d false alarms", r.Failed, r.Runs)
		if r.Inconclusive > 0 {
			res += fmt.Sprintf(", %d inconclusive", r.Inconclusive)
		}
		v.Rows = append(v.Rows, reports.ValidationRow{Name: "safe (no bug)", Nemesis: r.Nemesis, Result: res,
			Median: fmtMedian(r), Anomalies: strings.Join(r.Anomalies, ", "), Pass: r.Pass(), Reports: r.Reports})
	}
	return v
}
