package reports

import (
	"bytes"
	"cmp"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gregor/checker"
	"gregor/history"
	"gregor/internal/stats"
)

// Cell is one matrix cell's outcome: a configuration x a nemesis set x a
// seed, run once. results.json is a list of cells; shards merge by
// concatenating their cells.
type Cell struct {
	// Config is the configuration part (no nemesis, no seed), e.g.
	// "acks=all minisr=2 rf=3 unclean=false idem=true fsync=never".
	Config  string `json:"config"`
	Nemesis string `json:"nemesis"`
	Seed    int64  `json:"seed"`
	// Runtime is the runtime a matrix with runtimes: put the run on, ""
	// when the cell's own settings picked it. A cell's runs on two
	// runtimes are one matrix cell, shown side by side.
	Runtime string `json:"runtime,omitempty"`
	// Acks is the run's producer acks ("0", "1", "all"; test.json's): at
	// acks=0 nothing is acknowledged, so lost acks do not apply. Empty in
	// a results.json from before it (AcksZero reads the label then).
	Acks string `json:"acks,omitempty"`
	// Valid is "true", "false" or "unknown"; "crashed" when the run died.
	Valid  string         `json:"valid"`
	Counts map[string]int `json:"counts"`
	// LostAcks is the checker's Stats.LostAcks: acknowledged sends gone
	// from the log (lost-write, or read and then overwritten).
	LostAcks  int      `json:"lost_acks"`
	Forbidden []string `json:"forbidden,omitempty"`
	Allowed   []string `json:"allowed,omitempty"`
	// WriteAvailability is the share of sends that were acknowledged.
	WriteAvailability float64 `json:"write_availability"`
	// Report is the run report's path relative to the matrix output.
	Report string `json:"report,omitempty"`
	// Log is the tail of a crashed run's output.
	Log string `json:"log,omitempty"`
	// Group sums the consumer-group figures of a group-workload run.
	Group *GroupCell `json:"group,omitempty"`
	// Txn is a txn-workload run's transaction figures (matrix_txn.go).
	Txn *TxnCell `json:"txn,omitempty"`
}

// CellFrom summarises a checker result as a cell.
func CellFrom(config, nemesis string, seed int64, res *checker.Result, report string) Cell {
	c := Cell{Config: config, Nemesis: nemesis, Seed: seed, Valid: strings.Trim(res.Valid.String(), `"`),
		Counts: res.Counts, LostAcks: res.Stats.LostAcks, WriteAvailability: res.Availability.OKShare, Report: report, Group: groupCell(res), Txn: txnCell(res)}
	for a := range res.Forbidden {
		c.Forbidden = append(c.Forbidden, a)
	}
	for a := range res.Allowed {
		c.Allowed = append(c.Allowed, a)
	}
	sort.Strings(c.Forbidden)
	sort.Strings(c.Allowed)
	return c
}

// ConfigLabel names a configuration's matrix row.
func ConfigLabel(c *history.Config) string {
	s := fmt.Sprintf("acks=%s minisr=%d rf=%d unclean=%v idem=%v", c.Acks, c.MinISR, c.RF, c.Unclean, c.Idempotence)
	if c.Fsync != "" && c.Fsync != "never" {
		s += " fsync=" + c.Fsync
	}
	if c.LazyFS {
		s += " lazyfs"
	}
	if c.AutoCommit {
		s += " autocommit"
	}
	if c.CommitMode != "" {
		s += " commit=" + c.CommitMode
	}
	if len(c.PlantedBugs) > 0 {
		s += " bugs=" + strings.Join(c.PlantedBugs, ",")
	}
	return s
}

// Failed reports whether a cell fails the matrix: a forbidden anomaly or a
// crash. Allowed anomalies are findings, not failures.
func (c Cell) Failed() bool { return c.Valid == "false" || c.Valid == "crashed" }

// SortCells orders cells by configuration, nemesis and seed, so a merged
// set of shards renders exactly as the unsharded run.
func SortCells(cells []Cell) {
	slices.SortFunc(cells, func(a, b Cell) int {
		return cmp.Or(cmp.Compare(a.Config, b.Config), cmp.Compare(a.Nemesis, b.Nemesis), cmp.Compare(a.Runtime, b.Runtime), cmp.Compare(a.Seed, b.Seed))
	})
}

// ReadResults reads results.json files and concatenates their cells
// (gregor report merge).
func ReadResults(paths ...string) ([]Cell, error) {
	var all []Cell
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var res MatrixResultsFile
		if err := json.Unmarshal(b, &res); err != nil {
			// A results.json from before the per-cell summaries: a bare list
			// of runs.
			if err2 := json.Unmarshal(b, &res.Runs); err2 != nil {
				return nil, fmt.Errorf("%s: %w (not a results.json written by gregor matrix)", p, err)
			}
		}
		all = append(all, res.Runs...)
	}
	SortCells(all)
	return all, nil
}

// Validation is the section `gregor validate` adds to its matrix report:
// the harness's own detection rate per planted bug and its false alarms.
type Validation struct {
	Rows []ValidationRow
	// Choices are the harness settings that raise detection, with reasons.
	Choices          []string
	SafeRuns, Alarms int
	// AlarmRate is Alarms of SafeRuns with its 95% Wilson interval.
	AlarmRate          string
	Pass               bool
	TargetRate, Target string // the targets, in words
}

// ValidationRow is one planted bug, or the safe configuration under one
// nemesis.
type ValidationRow struct {
	Name, Nemesis string
	Result        string // the rate with its 95% Wilson interval: "detected 9/10 = 90% (95% CI 60%-98%)"
	// Runs is the sample size; Crashed and Unknown of them neither
	// detected nor passed (they fail the row's target).
	Runs, Crashed, Unknown int
	Median                 string // median time from the first fault to the first forbidden anomaly
	Anomalies              string
	Why                    string
	Pass                   bool
	Reports                []string
}

// A matrix directory (gregor matrix --out, gregor validate --out, gregor
// report merge --out): the report, its cells (shards merge by these), JUnit,
// and each cell's run store under runs/<cell>/ (history.RunDir inside).
const (
	MatrixIndex   = "index.html"
	MatrixResults = "results.json"
	MatrixJUnit   = "junit.xml"
)

// MatrixResultsFile is results.json: every run (shards merge by these) and,
// per cell (a configuration x a nemesis over its seeds), the spread of its
// runs.
type MatrixResultsFile struct {
	Runs  []Cell        `json:"runs"`
	Cells []CellSummary `json:"cells"`
}

// CellSummary is one matrix cell over its seeds: lost acknowledged writes as
// min / median / max, and the share of runs that lost any, with its 95%
// Wilson interval (internal/stats).
type CellSummary struct {
	Config  string `json:"config"`
	Nemesis string `json:"nemesis"`
	// Runtime: the cell's runs on one runtime (Cell.Runtime).
	Runtime  string       `json:"runtime,omitempty"`
	Seeds    []int64      `json:"seeds"`
	LostAcks stats.Spread `json:"lost_acks"`
	// LostAny counts the runs with at least one lost acknowledged write.
	LostAny     stats.Rate `json:"lost_any"`
	LostAnyLow  float64    `json:"lost_any_low"`
	LostAnyHigh float64    `json:"lost_any_high"`
	// Unseen and UnseenAny are the same for records no read ever saw: what
	// an acks=0 cell, where nothing is acknowledged, is coloured by.
	Unseen        stats.Spread `json:"unseen"`
	UnseenAny     stats.Rate   `json:"unseen_any"`
	UnseenAnyLow  float64      `json:"unseen_any_low"`
	UnseenAnyHigh float64      `json:"unseen_any_high"`
	// Failed, Crashed and Unknown count runs with a forbidden anomaly, that
	// died, or whose checker could not decide.
	Failed  int `json:"failed"`
	Crashed int `json:"crashed"`
	Unknown int `json:"unknown"`
}

// Summaries groups runs (sorted: SortCells) into cells, one per runtime.
func Summaries(runs []Cell) []CellSummary {
	var out []CellSummary
	var lost, unseen []int
	flush := func() {
		if len(out) == 0 {
			return
		}
		c := &out[len(out)-1]
		c.LostAcks, c.Unseen = stats.SpreadOf(lost), stats.SpreadOf(unseen)
		c.LostAnyLow, c.LostAnyHigh = c.LostAny.Wilson()
		c.UnseenAnyLow, c.UnseenAnyHigh = c.UnseenAny.Wilson()
		lost, unseen = nil, nil
	}
	for _, r := range runs {
		if last := len(out) - 1; last < 0 || out[last].Config != r.Config || out[last].Nemesis != r.Nemesis || out[last].Runtime != r.Runtime {
			flush()
			out = append(out, CellSummary{Config: r.Config, Nemesis: r.Nemesis, Runtime: r.Runtime})
		}
		c := &out[len(out)-1]
		c.Seeds = append(c.Seeds, r.Seed)
		switch r.Valid {
		case "crashed":
			c.Crashed++
			continue // no lost-acks figure: the run has none to give
		case "false":
			c.Failed++
		case "true":
		default:
			// Undecided is a check's verdict (e.g. linearizability out of
			// time): the run's lost acks are still counted, and drawn
			// (newDotStrip marks it undecided).
			c.Unknown++
		}
		lost = append(lost, r.LostAcks)
		c.LostAny.N++
		if r.LostAcks > 0 {
			c.LostAny.K++
		}
		u := r.Counts[checker.Unseen]
		unseen = append(unseen, u)
		c.UnseenAny.N++
		if u > 0 {
			c.UnseenAny.K++
		}
	}
	flush()
	return out
}

// WriteMatrix writes index.html, results.json and junit.xml into dir.
func WriteMatrix(dir, title string, cells []Cell) error {
	return WriteMatrixValidation(dir, title, cells, nil)
}

// WriteMatrixValidation is WriteMatrix with a validation section on top of
// index.html (nil: none).
func WriteMatrixValidation(dir, title string, cells []Cell, val *Validation) error {
	SortCells(cells)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(MatrixResultsFile{Runs: cells, Cells: Summaries(cells)}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, MatrixResults), b, 0o644); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := writeJUnit(&buf, title, cells); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, MatrixJUnit), buf.Bytes(), 0o644); err != nil {
		return err
	}
	buf.Reset()
	if err := writeIndex(&buf, title, cells, val); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, MatrixIndex), buf.Bytes(), 0o644)
}

type matrixCellView struct {
	Lost, Unseen, Dups int
	// Spread is set for a cell of several runs: lost acks per run as
	// min / median / max and the runs that lost any.
	Spread *CellSummary
	// Sum is the cell over its runs, one run or many (what the glance
	// draws).
	Sum      CellSummary
	Glance   glance
	Avail    float64
	Class    string
	Runs     []Cell
	Findings string
	// Beside are the cell's runs on each other runtime (matrix_glance.go).
	Beside []besideView
	Group  *GroupCell // summed over the runs (matrix_group.go)
	Txn    *TxnCell   // summed over the runs (matrix_txn.go)
}

type matrixRow struct {
	Config string
	Cells  []*matrixCellView // one per nemesis column (nil: not run)
	// Forbidden counts the row's finished runs that showed an anomaly its
	// theory forbids: on a correct cluster every run is a control of the
	// row's theory, so this is its false-alarm rate (issue 28).
	Forbidden stats.Rate
}

type matrixView struct {
	Title    string
	Nemeses  []string
	Rows     []matrixRow
	Total    int
	Failed   int
	Crashed  int
	Findings int
	// Forbidden is every row's Forbidden summed: the matrix's false-alarm
	// rate when the cluster is correct.
	Forbidden stats.Rate
	Legend    legend
	// Validation is set for `gregor validate`'s report.
	Validation *Validation
}

var indexTmpl = template.Must(template.New("index.html").Funcs(template.FuncMap{
	"pct": func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
}).ParseFS(templates, "templates/index.html"))

func writeIndex(w io.Writer, title string, cells []Cell, val *Validation) error {
	v := matrixView{Title: title, Total: len(cells), Validation: val}
	v.Nemeses = nemeses(cells)
	nemIdx := map[string]int{}
	for i, n := range v.Nemeses {
		nemIdx[n] = i
	}
	rowIdx := map[string]int{}
	for _, c := range cells {
		ri, ok := rowIdx[c.Config]
		if !ok {
			ri = len(v.Rows)
			rowIdx[c.Config] = ri
			v.Rows = append(v.Rows, matrixRow{Config: c.Config, Cells: make([]*matrixCellView, len(v.Nemeses))})
		}
		mc := v.Rows[ri].Cells[nemIdx[c.Nemesis]]
		if mc == nil {
			mc = &matrixCellView{Class: "pass"}
			v.Rows[ri].Cells[nemIdx[c.Nemesis]] = mc
		}
		mc.add(c)
		switch c.Valid {
		case "crashed":
			v.Crashed++
		case "false":
			v.Failed++
		}
		if c.Valid != "crashed" {
			v.Rows[ri].Forbidden.N++
			v.Forbidden.N++
			if c.Valid == "false" {
				v.Rows[ri].Forbidden.K++
				v.Forbidden.K++
			}
		}
		if len(c.Allowed) > 0 {
			v.Findings++
		}
	}
	v.finish()
	return indexTmpl.Execute(w, v)
}

// nemeses are the matrix's columns, sorted.
func nemeses(cells []Cell) []string {
	var out []string
	for _, c := range cells {
		out = append(out, c.Nemesis)
	}
	return dedup(out)
}

// add counts run c into its cell; the cell's class is its worst run's
// (crashed over forbidden over unknown over allowed).
func (mc *matrixCellView) add(c Cell) {
	mc.Runs = append(mc.Runs, c)
	mc.Lost += c.LostAcks
	mc.Unseen += c.Counts[checker.Unseen]
	mc.Dups += c.Counts[checker.Duplicate]
	mc.Avail += c.WriteAvailability
	mc.Group = mc.Group.add(c.Group)
	mc.Txn = mc.Txn.add(c.Txn)
	switch {
	case c.Valid == "crashed":
		mc.Class = "crashed"
	case c.Valid == "false":
		if mc.Class != "crashed" {
			mc.Class = "fail"
		}
	case c.Valid == "unknown" && mc.Class == "pass":
		mc.Class = "unknown"
	case len(c.Allowed) > 0 && mc.Class == "pass":
		mc.Class = "finding"
	}
}

// finish summarises every cell and draws its glance, the dot strips on
// one scale per measure across the matrix.
func (v *matrixView) finish() {
	maxOf := map[string]int{}
	acksZero := false
	for _, r := range v.Rows {
		for _, mc := range r.Cells {
			if mc == nil {
				continue
			}
			m := mc.measure()
			acksZero = acksZero || m.what == unseenMeasure.what
			for _, c := range mc.Runs {
				if c.Valid != "crashed" {
					maxOf[m.what] = max(maxOf[m.what], m.perRun(c))
				}
			}
		}
	}
	v.Legend = newLegend(maxOf[lostMeasure.what], maxOf[unseenMeasure.what], acksZero)
	for _, r := range v.Rows {
		for _, mc := range r.Cells {
			if mc != nil {
				mc.finish(maxOf[mc.measure().what])
				v.Legend.Beside = v.Legend.Beside || len(mc.Beside) > 0
			}
		}
	}
}

// measure is lost acks, or never-seen records for a cell at acks=0.
func (mc *matrixCellView) measure() measure {
	if len(mc.Runs) > 0 && mc.Runs[0].AcksZero() {
		return unseenMeasure
	}
	return lostMeasure
}

// finish summarises the cell: on a matrix with runtimes (Cell.Runtime),
// the runtime with the most runs gives its rate, colour and figures, and
// each other runtime's runs are shown beside it (the simulation's 30 seeds
// with the process runtime's one).
func (mc *matrixCellView) finish(stripMax int) {
	sums := Summaries(mc.Runs)
	main := 0
	for i, s := range sums {
		if len(s.Seeds) > len(sums[main].Seeds) {
			main = i
		}
	}
	var runs, beside []Cell
	if len(sums) > 0 {
		mc.Sum = sums[main]
		for _, c := range mc.Runs {
			if c.Runtime == mc.Sum.Runtime {
				runs = append(runs, c)
			} else {
				beside = append(beside, c)
			}
		}
		for i, s := range sums {
			if i != main {
				mc.Beside = append(mc.Beside, newBeside(s, beside, mc.measure()))
			}
		}
	}
	if len(runs) > 1 {
		mc.Spread = &mc.Sum
	}
	mc.Avail /= float64(len(mc.Runs))
	var f []string
	for _, c := range mc.Runs {
		f = append(f, c.Forbidden...)
		f = append(f, c.Allowed...)
	}
	mc.Findings = strings.Join(dedup(f), ", ")
	mc.Glance = newGlance(&mc.Sum, runs, beside, mc.measure(), stripMax)
}

func dedup(s []string) []string {
	sort.Strings(s)
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// writeJUnit writes one testcase per cell: a forbidden anomaly is a
// failure, a crash an error, an allowed anomaly a pass with the finding in
// system-out.
func writeJUnit(w io.Writer, title string, cells []Cell) error {
	s := junitSuite{Name: title, Tests: len(cells)}
	for _, c := range cells {
		jc := junitCase{Name: fmt.Sprintf("%s | %s | seed %d", c.Config, c.Nemesis, c.Seed), Classname: "gregor.matrix"}
		switch {
		case c.Valid == "crashed":
			jc.Error = &junitMessage{Message: "run crashed", Body: c.Log}
			s.Errors++
		case c.Valid == "false":
			jc.Failure = &junitMessage{Message: "forbidden anomalies: " + strings.Join(c.Forbidden, ", "), Body: c.Report}
			s.Failures++
		}
		if len(c.Allowed) > 0 {
			jc.SystemOut = "unsafe configuration demonstrated: " + strings.Join(c.Allowed, ", ") + " (" + c.Report + ")"
		}
		s.Cases = append(s.Cases, jc)
	}
	io.WriteString(w, xml.Header)
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	return enc.Encode(s)
}
