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
)

// Controls: every row of a matrix has a theory of what its configuration
// allows (checker/theory.go), and a correct cluster must never show what
// it forbids. `gregor validate --controls` runs every cell of a matrix
// without planted bugs, --seeds times, and reports per configuration the
// runs that ended in a forbidden anomaly: each a false alarm, a theory or
// harness error to root-cause (issue 28). The target: none, and no run
// crashed or unknown.

// ControlCells are every cell of spec (all its rows, all its nemeses),
// with seeds 1..seeds per cell (on each of its runtimes: if it names
// them) when seeds > 0 (else the matrix's own). A
// row that plants a bug is refused: controls run the correct cluster.
func ControlCells(spec *matrix.Spec, first int64, seeds int) ([]matrix.Cell, error) {
	one := *spec
	if seeds > 0 {
		one.WithSeedRange(first, seeds)
	}
	cells, err := one.Cells()
	if err != nil {
		return nil, err
	}
	for _, c := range cells {
		if len(c.Config.Bugs) > 0 {
			return nil, fmt.Errorf("matrix %q row %q plants %v: controls run the correct cluster; use --generic to measure planted bugs", spec.Name, c.Label, c.Config.Bugs)
		}
	}
	return cells, nil
}

// ControlsSummary is the configuration x nemesis table of false alarms.
type ControlsSummary struct {
	Matrix  string       `json:"matrix"`
	Nemeses []string     `json:"nemeses"`
	Rows    []GenericRow `json:"rows"` // by configuration (the Bug field holds its label)
	// Total is the runs of every row that ended in a forbidden anomaly, of
	// those that ended with a verdict; Crashed and Unknown the others.
	Total   stats.Rate `json:"total"`
	Crashed int        `json:"crashed"`
	Unknown int        `json:"unknown"`
	Pass    bool       `json:"pass"`
}

// SummarizeControls tabulates the cells ControlCells made.
func SummarizeControls(name string, cells []reports.Cell) *ControlsSummary {
	s := &ControlsSummary{Matrix: name, Pass: true}
	rows := tabulate(cells, func(c reports.Cell) string { return c.Config }, &s.Nemeses)
	for _, r := range rows {
		s.Rows = append(s.Rows, *r)
		s.Total.K += r.Any.K
		s.Total.N += r.Any.N
		s.Crashed += r.Crashed
		s.Unknown += r.Unknown
		s.Pass = s.Pass && !r.Caught && r.Crashed+r.Unknown == 0
	}
	slices.SortFunc(s.Rows, func(a, b GenericRow) int { return strings.Compare(a.Bug, b.Bug) })
	return s
}

// WriteTable prints one line per configuration: false alarms per nemesis
// and over all (with the 95% Wilson interval), crashed, unknown, and the
// forbidden anomalies seen.
func (s *ControlsSummary) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "configuration\t%s\tfalse alarms (95%% Wilson CI)\tcrashed\tunknown\tanomalies\t\n", strings.Join(s.Nemeses, "\t"))
	for _, r := range s.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t\n", r.Bug, r.columns(s.Nemeses), r.Any, r.Crashed, r.Unknown, strings.Join(r.Anomalies, ","))
	}
	tw.Flush()
	fmt.Fprintf(w, "false alarms: %s over every row of %s (runs with a verdict); %d crashed or not run, %d unknown\n", s.Total, s.Matrix, s.Crashed, s.Unknown)
}
