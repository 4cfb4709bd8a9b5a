// Package reports turns a run's history and the checker's result into
// self-contained HTML: inline CSS and SVG, no script or font from anywhere
// else, so a report opens offline years later. Everything that came from
// the cluster or the history is escaped by html/template.
package reports

import (
	"bytes"
	"cmp"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"gregor/checker"
	"gregor/history"
)

//go:embed templates/*.html
var templates embed.FS

var runTmpl = template.Must(template.New("run.html").Funcs(template.FuncMap{
	"pct":   func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
	"ms":    func(ns int64) string { return fmt.Sprintf("%.1f ms", float64(ns)/1e6) },
	"sec":   func(ns int64) string { return fmt.Sprintf("%.2f s", float64(ns)/1e9) },
	"json":  func(v any) string { b, _ := json.Marshal(v); return string(b) },
	"valid": func(v checker.Validity) string { return strings.Trim(v.String(), `"`) },
}).ParseFS(templates, "templates/run.html", "templates/metadata.html"))

// Limits on what one report draws, so a million-operation history still
// renders in a browser: beyond them operations are sampled evenly and the
// report says so.
const (
	maxTimelineOps  = 20000
	maxLatencyDots  = 8000
	maxExamples     = 10
	historyContext  = 3
	maxExcerptLines = 2000
	chartWidth      = 1000.0
)

// RunInput is everything a run report shows.
type RunInput struct {
	Title  string
	Config *history.Config
	Ops    []history.Op
	Result *checker.Result
	// HistoryFile is the history's file name, linked from the report.
	HistoryFile string
	// Runtime notes how faults were injected (real or emulated), one line
	// per fault kind.
	Runtime string
	// Metadata are the partition-state samples of the run
	// (history.ReadRun); MetadataNote says why there are none or what was
	// tolerated in the file.
	Metadata     []history.MetadataSample
	MetadataNote string
	// Shrink links the run to its shrunk form or its original (shrink.json;
	// nil: none).
	Shrink *history.ShrinkLinks
}

// WriteRun renders the per-run report.
func WriteRun(w io.Writer, in RunInput) error {
	v, err := buildRun(in)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := runTmpl.Execute(&buf, v); err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}

type interval struct {
	proc       history.Process
	start, end int64
	typ        history.Type
	f          string
	index      int64
}

type band struct {
	X, W  float64
	Label string
}

type rect struct {
	X, Y, W float64
	Class   string
	Title   string
}

type dot struct {
	X, Y  float64
	Class string
}

type line struct {
	Y     float64
	Label string
}

type chart struct {
	Width, Height float64
	Bands         []band
	Rects         []rect
	Dots          []dot
	Lines         []line
	Path          string
	Rows          []rowLabel
	Note          string
	XTicks        []tick
}

type rowLabel struct {
	Y     float64
	Label string
}

type tick struct {
	X     float64
	Label string
}

type exampleView struct {
	Anomaly string
	Allowed bool
	Reason  string
	Count   int
	Items   []exampleItem
}

type exampleItem struct {
	Summary string
	Ops     []checker.OpRef
	Viz     string
}

type excerptLine struct {
	Index   int64
	Text    string
	Focused bool
}

type runView struct {
	Title       string
	Valid       string
	VerdictWhy  string
	Config      [][2]string
	Result      *checker.Result
	Examples    []exampleView
	Timeline    chart
	Latency     chart
	Throughput  chart
	Excerpt     []excerptLine
	HistoryFile string
	Runtime     []string
	Keys        []keyView
	Sends       int
	Metadata    metadataView
	Groups      template.HTML // group.go
	Shrink      *shrinkView   // shrink.go
	Txn         *txnView      // txn.go; nil without transactions
	Faults      *faultsView   // exposure.go; nil without faults
}

type keyView struct {
	Key    string
	Status string
	Ops    int
	Viz    string
	Note   string
}

func buildRun(in RunInput) (*runView, error) {
	if in.Result == nil {
		return nil, fmt.Errorf("reports: no checker result")
	}
	v := &runView{Title: in.Title, Result: in.Result, HistoryFile: in.HistoryFile, Valid: strings.Trim(in.Result.Valid.String(), `"`)}
	if v.Title == "" {
		v.Title = "gregor run"
	}
	v.VerdictWhy = verdictWhy(in.Result)
	v.Shrink = shrinkSection(in.Shrink)
	if in.Config != nil {
		v.Config = configRows(in.Config)
	}
	for _, l := range strings.Split(strings.TrimSpace(in.Runtime), "\n") {
		if l != "" {
			v.Runtime = append(v.Runtime, l)
		}
	}
	ivs, nemesis, end := intervals(in.Ops)
	bands := faultBands(nemesis, end)
	v.Timeline = timeline(ivs, bands, end)
	v.Txn = txnSection(in.Ops, bands, end)
	v.Latency, v.Sends = latency(ivs, bands, end)
	v.Throughput = throughput(ivs, bands, end)
	v.Faults = faultsSection(in.Ops, in.Metadata, in.Config)
	if v.Faults != nil {
		v.Faults.LostAcks = in.Result.Stats.LostAcks
	}
	v.Metadata = metadataChart(in.Metadata, bands, end, configMinISR(in.Config), in.MetadataNote)
	groups, err := groupSections(in.Result, bands, end)
	if err != nil {
		return nil, err
	}
	v.Groups = groups
	focus := map[int64]bool{}
	v.Examples = examples(in.Result, focus)
	v.Excerpt = excerpt(in.Ops, focus)
	for _, k := range slices.Sorted(maps.Keys(in.Result.Linearizability)) {
		l := in.Result.Linearizability[k]
		v.Keys = append(v.Keys, keyView{Key: k, Status: l.Status, Ops: l.Ops, Viz: l.Visualization, Note: l.Note})
	}
	return v, nil
}

func verdictWhy(r *checker.Result) string {
	switch r.Valid {
	case checker.ValidFalse:
		var names []string
		for a := range r.Forbidden {
			names = append(names, a)
		}
		sort.Strings(names)
		return "forbidden anomalies found: " + strings.Join(names, ", ") + " — the system under test broke a guarantee this configuration gives"
	case checker.ValidTrue:
		if len(r.Allowed) > 0 {
			return "no forbidden anomaly; the configuration's allowed anomalies showed up: unsafe configuration demonstrated"
		}
		return "no anomaly found"
	}
	return "unknown: " + strings.Join(r.UnknownReasons, "; ")
}

func configRows(c *history.Config) [][2]string {
	b, _ := json.Marshal(c)
	var m map[string]any
	json.Unmarshal(b, &m)
	var rows [][2]string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		vb, _ := json.Marshal(m[k])
		rows = append(rows, [2]string{k, string(vb)})
	}
	if m := c.AutoCommitModel(); m != "" {
		rows = append(rows, [2]string{"auto-commit models", m})
	}
	return rows
}

// intervals pairs each invoke with its completion per process. Operations
// still open at the end are drawn to the end as unknown.
func intervals(ops []history.Op) (ivs []interval, nemesis []history.Op, end int64) {
	open := map[history.Process]history.Op{}
	for _, op := range ops {
		end = max(end, op.Time)
		if op.Process == history.Nemesis {
			nemesis = append(nemesis, op)
			continue
		}
		switch op.Type {
		case history.Invoke:
			open[op.Process] = op
		case history.OK, history.Fail, history.Info:
			inv, ok := open[op.Process]
			if !ok {
				continue // events without an invoke (assign, process)
			}
			delete(open, op.Process)
			ivs = append(ivs, interval{proc: op.Process, start: inv.Time, end: op.Time, typ: op.Type, f: op.F, index: op.Index})
		}
	}
	for p, inv := range open {
		ivs = append(ivs, interval{proc: p, start: inv.Time, end: end, typ: history.Info, f: inv.F, index: inv.Index})
	}
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].start < ivs[j].start })
	return ivs, nemesis, end
}

// faultBands shades each fault from its first operation to its end. A
// nemesis operation names its schedule step ("step"): a step's band ends
// at the ending verb (history.IsEndVerb) with the same step, so faults
// composed to overlap (--compose) get a band each; a scenario's phase
// operations only add their verb to its label. Heal-all, which has no
// step, ends every open band; a fault never ended runs to the end. An
// operation without a step that does not end anything (a history written
// before steps were recorded) pairs with the next step-less end, as the
// serial schedule it came from did.
func faultBands(nemesis []history.Op, end int64) []band {
	type open struct {
		at    int64
		label string
	}
	const noStep = -1
	var (
		out   []band
		opens = map[int]*open{}
		order []int // steps in the order they opened: the bands' order
	)
	closeStep := func(step int, at int64) {
		o := opens[step]
		if o == nil {
			return
		}
		out = append(out, band{X: float64(o.at), W: float64(at - o.at), Label: o.label})
		delete(opens, step)
	}
	for _, op := range nemesis {
		step := noStep
		if v, err := history.ParseNemesis(&op); err == nil && v.Step != nil {
			step = *v.Step
		}
		if history.IsEndVerb(op.F) {
			if step == noStep && opens[noStep] == nil {
				// heal-all: everything still open ends here.
				for _, s := range order {
					closeStep(s, op.Time)
				}
				order = order[:0]
				continue
			}
			closeStep(step, op.Time)
			continue
		}
		if o := opens[step]; o != nil {
			if !slices.Contains(strings.Split(o.label, "+"), op.F) {
				o.label += "+" + op.F
			}
			continue
		}
		opens[step] = &open{at: op.Time, label: op.F}
		order = append(slices.DeleteFunc(order, func(s int) bool { return s == step }), step)
	}
	for _, s := range order {
		closeStep(s, end)
	}
	slices.SortStableFunc(out, func(a, b band) int { return cmp.Compare(a.X, b.X) })
	return out
}

func scaleBands(bands []band, end int64) []band {
	out := make([]band, len(bands))
	for i, b := range bands {
		out[i] = band{X: xOf(int64(b.X), end), W: math.Max(1, b.W/float64(max(end, 1))*chartWidth), Label: b.Label}
	}
	return out
}

func xOf(t, end int64) float64 { return float64(t) / float64(max(end, 1)) * chartWidth }

func ticks(end int64) []tick {
	var out []tick
	step := niceStep(float64(end) / 1e9 / 8)
	for s := 0.0; s*1e9 <= float64(end) && len(out) < 20; s += step {
		out = append(out, tick{X: s * 1e9 / float64(max(end, 1)) * chartWidth, Label: fmt.Sprintf("%gs", s)})
	}
	return out
}

func niceStep(x float64) float64 {
	for _, s := range []float64{0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600} {
		if s >= x {
			return s
		}
	}
	return 1200
}

func typeClass(t history.Type) string {
	switch t {
	case history.OK:
		return "ok"
	case history.Fail:
		return "fail"
	}
	return "info"
}

func timeline(ivs []interval, bands []band, end int64) chart {
	procs := map[history.Process]int{}
	var order []history.Process
	for _, iv := range ivs {
		if _, ok := procs[iv.proc]; !ok {
			procs[iv.proc] = 0
			order = append(order, iv.proc)
		}
	}
	slices.Sort(order)
	const rowH = 14.0
	c := chart{Width: chartWidth, Height: rowH*float64(len(order)) + 20, XTicks: ticks(end)}
	for i, p := range order {
		procs[p] = i
		c.Rows = append(c.Rows, rowLabel{Y: rowH*float64(i) + 10, Label: p.String()})
	}
	c.Bands = scaleBands(bands, end)
	step := thin(&c, len(ivs), maxTimelineOps, "operations")
	for i := 0; i < len(ivs); i += step {
		iv := ivs[i]
		x := xOf(iv.start, end)
		c.Rects = append(c.Rects, rect{X: x, Y: rowH*float64(procs[iv.proc]) + 2, W: math.Max(0.5, xOf(iv.end, end)-x),
			Class: typeClass(iv.typ), Title: fmt.Sprintf("#%d %s %s %s", iv.index, iv.proc, iv.f, iv.typ)})
	}
	return c
}

// thin is the stride that draws at most limit of n items, noting on c
// when it skips some.
func thin(c *chart, n, limit int, what string) int {
	if n <= limit {
		return 1
	}
	step := (n + limit - 1) / limit
	c.Note = fmt.Sprintf("showing every %dth of %d %s", step, n, what)
	return step
}

func latency(ivs []interval, bands []band, end int64) (chart, int) {
	var lats []int64
	var sends []interval
	for _, iv := range ivs {
		if iv.f == history.FSend {
			sends = append(sends, iv)
			lats = append(lats, iv.end-iv.start)
		}
	}
	c := chart{Width: chartWidth, Height: 260, XTicks: ticks(end), Bands: scaleBands(bands, end)}
	if len(sends) == 0 {
		c.Note = "no sends"
		return c, 0
	}
	sorted := slices.Clone(lats)
	slices.Sort(sorted)
	maxLat := float64(max(sorted[len(sorted)-1], 1))
	// Log scale from 0.1 ms to the slowest send.
	lo := math.Log10(1e5)
	hi := math.Log10(math.Max(maxLat, 1e6))
	yOf := func(ns int64) float64 {
		l := math.Log10(math.Max(float64(ns), 1e5))
		return c.Height - 10 - (l-lo)/(hi-lo)*(c.Height-20)
	}
	step := thin(&c, len(sends), maxLatencyDots, "sends")
	for i := 0; i < len(sends); i += step {
		s := sends[i]
		c.Dots = append(c.Dots, dot{X: xOf(s.end, end), Y: yOf(s.end - s.start), Class: typeClass(s.typ)})
	}
	for _, q := range []float64{0.5, 0.95, 0.99} {
		v := sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
		c.Lines = append(c.Lines, line{Y: yOf(v), Label: fmt.Sprintf("p%g %.1f ms", q*100, float64(v)/1e6)})
	}
	return c, len(sends)
}

func throughput(ivs []interval, bands []band, end int64) chart {
	c := chart{Width: chartWidth, Height: 160, XTicks: ticks(end), Bands: scaleBands(bands, end)}
	const buckets = 200
	counts := make([]int, buckets)
	for _, iv := range ivs {
		if iv.f == history.FSend && iv.typ == history.OK {
			b := min(buckets-1, int(float64(iv.end)/float64(max(end, 1))*buckets))
			counts[b]++
		}
	}
	peak := max(slices.Max(counts), 1)
	var sb strings.Builder
	for i, n := range counts {
		x := (float64(i) + 0.5) / buckets * chartWidth
		y := c.Height - 10 - float64(n)/float64(peak)*(c.Height-20)
		if i == 0 {
			fmt.Fprintf(&sb, "M%.1f %.1f", x, y)
		} else {
			fmt.Fprintf(&sb, " L%.1f %.1f", x, y)
		}
	}
	c.Path = sb.String()
	perSec := float64(peak) / (float64(max(end, 1)) / 1e9 / buckets)
	c.Lines = []line{{Y: 10, Label: fmt.Sprintf("peak %.0f ok sends/s", perSec)}}
	return c
}

func examples(r *checker.Result, focus map[int64]bool) []exampleView {
	var out []exampleView
	for _, a := range checker.AnomalyNames {
		exs := r.Anomalies[a]
		if len(exs) == 0 {
			continue
		}
		ev := exampleView{Anomaly: a, Count: r.Counts[a]}
		if why, ok := r.Forbidden[a]; ok {
			ev.Reason = why
		} else {
			ev.Allowed, ev.Reason = true, r.Allowed[a]
		}
		for i, ex := range exs {
			if i == maxExamples {
				break
			}
			item := exampleItem{Ops: ex.Ops, Viz: ex.Visualization}
			b, _ := json.Marshal(struct {
				Key     string  `json:"key,omitempty"`
				Offset  *int64  `json:"offset,omitempty"`
				Value   *int64  `json:"value,omitempty"`
				Offsets []int64 `json:"offsets,omitempty"`
				Values  []int64 `json:"values,omitempty"`
				Note    string  `json:"note,omitempty"`
			}{ex.Key, ex.Offset, ex.Value, ex.Offsets, ex.Values, ex.Note})
			item.Summary = string(b)
			for _, o := range ex.Ops {
				focus[o.Index] = true
			}
			ev.Items = append(ev.Items, item)
		}
		out = append(out, ev)
	}
	return out
}

// excerpt is the history lines around every operation an example names,
// each with an anchor the examples link to.
func excerpt(ops []history.Op, focus map[int64]bool) []excerptLine {
	if len(focus) == 0 {
		return nil
	}
	keep := map[int]bool{}
	for i, op := range ops {
		if focus[op.Index] {
			for j := max(0, i-historyContext); j <= min(len(ops)-1, i+historyContext); j++ {
				keep[j] = true
			}
		}
	}
	var out []excerptLine
	for _, i := range slices.Sorted(maps.Keys(keep)) {
		if len(out) == maxExcerptLines {
			break
		}
		out = append(out, excerptLine{Index: ops[i].Index, Text: string(history.AppendJSON(nil, &ops[i])), Focused: focus[ops[i].Index]})
	}
	return out
}
