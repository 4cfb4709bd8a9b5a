package validate

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"gregor/internal/stats"
	"gregor/matrix"
	"gregor/reports"
	"gregor/workloads/all"
)

// Generic detection: a probe's fault is picked knowing the bug; a user's
// matrix is not. `gregor validate --generic` runs a matrix's own nemeses,
// with its own settings, on its safe rows (acks=all, min ISR >= 2, unclean
// off: where every lost acknowledged write is forbidden) with each planted
// bug, and once without one (the control row), and tabulates bug x nemesis.
// The target: every planted bug caught by the matrix (some run of some
// nemesis ends in a forbidden anomaly), no control run failing.

// NoBug names the control row of the generic table.
const NoBug = "(no bug)"

// ForbidsLoss says whether the theory forbids a lost acknowledged write in
// a cell's run (checker.Expect of the test.json its arguments would record).
// A safe row's cell where it does not (a whole-cluster power loss without
// fsync loses acknowledged writes at any acks and min ISR) can show no
// planted bug by a loss: its runs would be spent for nothing.
type ForbidsLoss func(matrix.Cell) (bool, error)

// GenericCells are the cells of spec's safe rows under its nemeses and
// seeds, once per bug in bugs and once without a bug, where forbidsLoss
// holds; the nemeses it dropped are returned by name. Each cell's label is
// its configuration's (with "bugs=NAME" when one is planted).
func GenericCells(spec *matrix.Spec, bugs []string, forbidsLoss ForbidsLoss) (cells []matrix.Cell, dropped []string, err error) {
	var safe []matrix.Settings
	configs := append(slices.Clone(spec.Configs), spec.Dimensions.Configs()...)
	for _, c := range configs {
		if isSafe(spec.Defaults, c) {
			safe = append(safe, c)
		}
	}
	if len(safe) == 0 {
		return nil, nil, fmt.Errorf("matrix %q has no safe configuration (acks all, min_isr >= 2, unclean false) to plant bugs into: add one", spec.Name)
	}
	known := BugNames()
	for _, b := range bugs {
		if !slices.Contains(known, b) {
			return nil, nil, fmt.Errorf("--bugs %q: no such planted bug with a probe; choose from %v", b, known)
		}
	}
	for _, bug := range append([]string{""}, bugs...) {
		one := *spec
		one.Dimensions = matrix.Dimensions{}
		one.Configs = nil
		for _, c := range safe {
			c.Bugs = nil
			if bug != "" {
				c.Bugs = []string{bug}
			}
			one.Configs = append(one.Configs, c)
		}
		cs, err := one.Cells()
		if err != nil {
			return nil, nil, err
		}
		for _, c := range cs {
			keep, err := forbidsLoss(c)
			if err != nil {
				return nil, nil, err
			}
			if keep {
				cells = append(cells, c)
			} else if !slices.Contains(dropped, c.Nemesis.Name) {
				dropped = append(dropped, c.Nemesis.Name)
			}
		}
	}
	return cells, dropped, nil
}

// isSafe says whether configuration c (over defaults d) forbids every lost
// acknowledged write: acks=all, min ISR at least 2, unclean election off.
func isSafe(d, c matrix.Settings) bool {
	acks, minISR, unclean := d.Acks, d.MinISR, d.Unclean
	if c.Acks != "" {
		acks = c.Acks
	}
	if c.MinISR != nil {
		minISR = c.MinISR
	}
	if c.Unclean != nil {
		unclean = c.Unclean
	}
	return (acks == "all" || acks == "") && minISR != nil && *minISR >= 2 && (unclean == nil || !*unclean) &&
		safeBrokersSuffice(d.Workload) && safeBrokersSuffice(c.Workload)
}

// safeBrokersSuffice: on safe brokers the workload forbids every lost
// acknowledged write whatever its own settings (kit.Descriptor).
func safeBrokersSuffice(workload string) bool {
	d, ok := all.Workloads.Lookup(workload)
	return !ok || d.SafeBrokersSuffice()
}

// tabulate counts each cell into the row keyOf names (its Bug field) and
// the cell's nemesis column: runs that ended in a forbidden anomaly of the
// runs that ended with a verdict; crashed and unknown runs (and cells an
// interrupted matrix never ran, recorded crashed) apart, never in a rate's
// n: a run without a verdict looked at nothing, and counting it would
// narrow the interval of a rate nobody measured. nemeses collects the
// columns, sorted.
func tabulate(cells []reports.Cell, keyOf func(reports.Cell) string, nemeses *[]string) map[string]*GenericRow {
	rows := map[string]*GenericRow{}
	for _, c := range cells {
		key := keyOf(c)
		r, ok := rows[key]
		if !ok {
			r = &GenericRow{Bug: key, ByNemesis: map[string]stats.Rate{}}
			rows[key] = r
		}
		if !slices.Contains(*nemeses, c.Nemesis) {
			*nemeses = append(*nemeses, c.Nemesis)
		}
		rate := r.ByNemesis[c.Nemesis]
		switch c.Valid {
		case "false":
			rate.K++
			r.Any.K++
			for _, a := range c.Forbidden {
				if !slices.Contains(r.Anomalies, a) {
					r.Anomalies = append(r.Anomalies, a)
				}
			}
			fallthrough
		case "true":
			rate.N++
			r.Any.N++
		case "crashed":
			r.Crashed++
		default:
			r.Unknown++
		}
		r.ByNemesis[c.Nemesis] = rate
	}
	slices.Sort(*nemeses)
	for _, r := range rows {
		r.Caught = r.Any.K > 0
		slices.Sort(r.Anomalies)
	}
	return rows
}

// GenericRow is one planted bug (or NoBug) over the matrix's nemeses.
type GenericRow struct {
	Bug string `json:"bug"`
	// ByNemesis is, per nemesis, the runs that ended in a forbidden anomaly
	// of the runs made (k of n, with its Wilson interval when printed).
	ByNemesis map[string]stats.Rate `json:"by_nemesis"`
	// Any is the runs of any nemesis that ended in a forbidden anomaly.
	Any     stats.Rate `json:"any"`
	Crashed int        `json:"crashed"`
	Unknown int        `json:"unknown"`
	// Caught: some run failed (for NoBug: a false alarm).
	Caught    bool     `json:"caught"`
	Anomalies []string `json:"anomalies,omitempty"`
}

// columns renders the row's k/n per nemesis, tab-separated.
func (r GenericRow) columns(nemeses []string) string {
	cols := make([]string, len(nemeses))
	for i, n := range nemeses {
		rate := r.ByNemesis[n]
		cols[i] = fmt.Sprintf("%d/%d", rate.K, rate.N)
	}
	return strings.Join(cols, "\t")
}

// GenericSummary is the bug x nemesis table.
type GenericSummary struct {
	Matrix  string       `json:"matrix"`
	Nemeses []string     `json:"nemeses"`
	Rows    []GenericRow `json:"rows"` // NoBug first, then bugs by name
	Pass    bool         `json:"pass"`
}

// SummarizeGeneric tabulates the cells GenericCells made.
func SummarizeGeneric(name string, cells []reports.Cell) *GenericSummary {
	s := &GenericSummary{Matrix: name}
	rows := tabulate(cells, func(c reports.Cell) string {
		if bug := strings.TrimPrefix(field(c.Config, "bugs"), "bugs="); bug != "" {
			return bug
		}
		return NoBug
	}, &s.Nemeses)
	s.Pass = true
	for _, r := range rows {
		s.Rows = append(s.Rows, *r)
		if r.Bug == NoBug {
			s.Pass = s.Pass && !r.Caught && r.Crashed+r.Unknown == 0
		} else {
			s.Pass = s.Pass && r.Caught
		}
	}
	slices.SortFunc(s.Rows, func(a, b GenericRow) int {
		if (a.Bug == NoBug) != (b.Bug == NoBug) {
			if a.Bug == NoBug {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Bug, b.Bug)
	})
	return s
}

// WriteTable prints the bug x nemesis table: per cell the runs that ended in
// a forbidden anomaly of the runs with a verdict, then over every nemesis with its 95%
// Wilson interval.
func (s *GenericSummary) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "planted bug\t%s\tany nemesis (95%% Wilson CI)\tcrashed\tunknown\tcaught\t\n", strings.Join(s.Nemeses, "\t"))
	for _, r := range s.Rows {
		verdict := "yes"
		switch {
		case r.Bug == NoBug && r.Caught:
			verdict = "FALSE ALARM"
		case r.Bug == NoBug:
			verdict = "no false alarm"
		case !r.Caught:
			verdict = "MISSED"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t\n", r.Bug, r.columns(s.Nemeses), r.Any, r.Crashed, r.Unknown, verdict)
	}
	tw.Flush()
}
