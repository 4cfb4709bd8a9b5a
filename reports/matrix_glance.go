package reports

// The matrix index at a glance (issue 28): each cell is coloured by a rate
// of runs (those that lost acknowledged writes; at acks=0, where nothing is
// acknowledged, those with records never seen), and draws that rate with
// its 95% Wilson interval and the per-run counts behind it, so which rows
// lose under which faults, and how often, shows without reading a word.
// The SVG is drawn by templates/index.html from the coordinates computed
// here (numbers only; html/template escapes whatever else goes in).

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"gregor/checker"
	"gregor/internal/stats"
)

// rgb is a colour of the index's scale.
type rgb struct{ R, G, B uint8 }

func (c rgb) CSS() template.CSS { return template.CSS(fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)) }

// luminance is the WCAG relative luminance (0 black, 1 white).
func (c rgb) luminance() float64 {
	lin := func(v uint8) float64 {
		s := float64(v) / 255
		if s <= 0.04045 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(c.R) + 0.7152*lin(c.G) + 0.0722*lin(c.B)
}

// ink is the text colour readable on c: white on the dark end of the scale.
func (c rgb) ink() template.CSS {
	if c.luminance() < 0.2 {
		return "#fff"
	}
	return "#222"
}

var (
	// scaleNone is "no run lost any": nearly the page's white, so the
	// cells that lose stand out and the quiet ones recede.
	scaleNone = rgb{0xff, 0xfb, 0xe6}
	// scaleStops is ColorBrewer's sequential YlOrBr from its third class
	// on, for a rate from just above 0 to 1: a single hue ramp that never
	// reaches red, so the forbidden badge's red is never read as a shade
	// of it, and a single lossy run in many is already a visible yellow
	// (0 vs any is the first question).
	scaleStops = []rgb{{0xfe, 0xe3, 0x91}, {0xfe, 0xc4, 0x4f}, {0xfe, 0x99, 0x29}, {0xec, 0x70, 0x14}, {0xcc, 0x4c, 0x02}, {0x8c, 0x2d, 0x04}}
	// scaleNoRuns is a cell whose every run crashed: no rate to colour by.
	scaleNoRuns = rgb{0xd9, 0xd9, 0xd9}
)

// rateColour is the scale's colour for a rate: scaleNone at 0 of n, the
// darkest stop at n of n, piecewise linear between the stops.
func rateColour(r stats.Rate) rgb {
	if r.N == 0 {
		return scaleNoRuns
	}
	if r.K == 0 {
		return scaleNone
	}
	f := r.P() * float64(len(scaleStops)-1)
	i := min(int(f), len(scaleStops)-2)
	a, b, t := scaleStops[i], scaleStops[i+1], f-float64(i)
	mix := func(x, y uint8) uint8 { return uint8(math.Round(float64(x) + t*(float64(y)-float64(x)))) }
	return rgb{mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B)}
}

// The drawings' geometry, in SVG user units (= CSS pixels).
const (
	glanceW    = 120.0 // width of the bar and the strip
	glancePad  = 6.0   // axis inset at either end, room for the labels
	stripRows  = 3     // dots at one value stack this high, then overlap
	dotRadius  = 2.5
	dotSpacing = 5.0
)

func axisX(f float64) float64 { return glancePad + f*(glanceW-2*glancePad) }

// axis is where the templates draw the axes: the left end, the middle and
// the right end, and the drawing's width.
type axis struct{ X0, Mid, X1, W string }

var glanceAxis = axis{X0: coord(axisX(0)), Mid: coord(axisX(0.5)), X1: coord(axisX(1)), W: coord(glanceW)}

func coord(x float64) string { return fmt.Sprintf("%.1f", x) }

// rateBar is a rate on a 0-100% axis: the interval as a band, the point
// as a mark.
type rateBar struct {
	Axis             axis
	Lo, Width, Point string
	Label            string
}

func newRateBar(r stats.Rate) *rateBar {
	if r.N == 0 {
		return nil
	}
	lo, hi := r.Wilson()
	return &rateBar{Axis: glanceAxis, Lo: coord(axisX(lo)), Width: coord(axisX(hi) - axisX(lo)), Point: coord(axisX(r.P()) - 1.5), Label: r.String()}
}

// dotStrip is one dot per run on a log1p axis from 0 to Max, the one Max
// of its measure across the whole matrix: cells compare by position, and
// log1p keeps 1 apart from 0 even when another cell counts hundreds.
type dotStrip struct {
	Axis axis
	R    string // a dot's radius
	Dots []stripDot
	Max  int
	What string // "lost acks" or "never seen"
}

type stripDot struct {
	X, Y  string
	Class string // "run", "run forbidden" (a bug) or "run unknown"
	Title string
}

// stripX places v on the shared axis.
func stripX(v, maxV int) float64 {
	if maxV <= 0 {
		return axisX(0)
	}
	return axisX(math.Log1p(float64(v)) / math.Log1p(float64(maxV)))
}

// newDotStrip draws a cell's finished runs (a crashed run has no count: it
// is the CRASHED badge), and as rings on the same axis its runs on another
// runtime (beside). Dots closer than a dot apart stack, so three runs at 0
// read as three.
func newDotStrip(runs, beside []Cell, m measure, maxV int) *dotStrip {
	s := &dotStrip{Axis: glanceAxis, R: coord(dotRadius), Max: maxV, What: m.what}
	stacked := map[int]int{}
	for i, c := range append(append([]Cell(nil), runs...), beside...) {
		if c.Valid == "crashed" {
			continue
		}
		v := m.perRun(c)
		x := stripX(v, maxV)
		bucket := int(math.Round(x / dotSpacing))
		row := stacked[bucket] % stripRows
		stacked[bucket]++
		d := stripDot{X: coord(x), Y: coord(15 - dotSpacing*float64(row)), Class: "run",
			Title: fmt.Sprintf("%sseed %d: %d %s", runtimeOf(c), c.Seed, v, m.what)}
		if i >= len(runs) {
			d.Class = "run beside"
		}
		switch c.Valid {
		case "false":
			d.Class, d.Title = d.Class+" forbidden", d.Title+", forbidden anomaly"
		case "unknown":
			d.Class, d.Title = d.Class+" unknown", d.Title+", checker undecided"
		}
		s.Dots = append(s.Dots, d)
	}
	return s
}

// measure is what a cell is coloured and drawn by.
type measure struct {
	what   string
	perRun func(Cell) int
	rate   func(*CellSummary) stats.Rate
}

var (
	lostMeasure = measure{what: "lost acks", perRun: func(c Cell) int { return c.LostAcks },
		rate: func(s *CellSummary) stats.Rate { return s.LostAny }}
	// At acks=0 nothing is acknowledged, so nothing acknowledged can be
	// lost: what shows is what no read ever saw.
	unseenMeasure = measure{what: "never seen", perRun: func(c Cell) int { return c.Counts[checker.Unseen] },
		rate: func(s *CellSummary) stats.Rate { return s.UnseenAny }}
)

// AcksZero reports whether the run's producer asked for no
// acknowledgement. A results.json from before Cell.Acks has only the row
// label, which ConfigLabel and the matrix's labels begin with acks=.
func (c Cell) AcksZero() bool {
	if c.Acks != "" {
		return c.Acks == "0"
	}
	return strings.HasPrefix(c.Config, "acks=0 ") || c.Config == "acks=0"
}

// glance is what a cell shows before its words are opened.
type glance struct {
	AcksZero  bool
	Rate      stats.Rate
	Interval  string // "95% CI 21%-94%"
	Fill, Ink template.CSS
	Bar       *rateBar
	Strip     *dotStrip
	// Forbidden, Crashed and Unknown count the runs each badge marks.
	Forbidden, Crashed, Unknown int
	// Marks are the badges' names, for the cell's border (CSS
	// td[data-marks~=forbidden]): on top of the colour, never a shade.
	Marks string
}

// newGlance draws a cell: sum is its runs' summary (beside: its runs on
// other runtimes, drawn as rings), m what it counts, stripMax the most any
// run of the matrix counted.
func newGlance(sum *CellSummary, runs, beside []Cell, m measure, stripMax int) glance {
	rate := m.rate(sum)
	fill := rateColour(rate)
	g := glance{AcksZero: m.what == unseenMeasure.what, Rate: rate, Fill: fill.CSS(), Ink: fill.ink(),
		Interval: "95% CI " + rate.Interval(), Bar: newRateBar(rate), Strip: newDotStrip(runs, beside, m, stripMax),
		Forbidden: sum.Failed, Crashed: sum.Crashed, Unknown: sum.Unknown}
	var marks []string
	for _, mk := range []struct {
		n    int
		name string
	}{{sum.Failed, "forbidden"}, {sum.Crashed, "crashed"}, {sum.Unknown, "unknown"}} {
		if mk.n > 0 {
			marks = append(marks, mk.name)
		}
	}
	g.Marks = strings.Join(marks, " ")
	return g
}

// legend explains the scale, the drawings and the marks.
type legend struct {
	Swatches           []swatch
	None, NoRuns       template.CSS
	Bar                *rateBar
	LostMax, UnseenMax int
	AcksZero           bool // a row at acks=0 is in the matrix
	Beside             bool // a cell has runs on a second runtime
}

type swatch struct {
	Fill  template.CSS
	Label string
}

func newLegend(lostMax, unseenMax int, acksZero bool) legend {
	l := legend{None: scaleNone.CSS(), NoRuns: scaleNoRuns.CSS(), Bar: newRateBar(stats.Rate{K: 2, N: 3}),
		LostMax: lostMax, UnseenMax: unseenMax, AcksZero: acksZero}
	for _, s := range []struct {
		r     stats.Rate
		label string
	}{{stats.Rate{K: 1, N: 100}, "a few"}, {stats.Rate{K: 1, N: 4}, "25%"}, {stats.Rate{K: 2, N: 4}, "50%"},
		{stats.Rate{K: 3, N: 4}, "75%"}, {stats.Rate{K: 4, N: 4}, "every run"}} {
		l.Swatches = append(l.Swatches, swatch{Fill: rateColour(s.r).CSS(), Label: s.label})
	}
	return l
}

// runtimeOf prefixes a run's label with its runtime, when a matrix with
// runtimes named one.
func runtimeOf(c Cell) string {
	if c.Runtime == "" {
		return ""
	}
	return c.Runtime + " "
}

// besideView is a cell's runs on a runtime other than the one its colour
// is of: "process: 1/1 lost acks (23)", each run's count, and whether
// that rate falls inside the main runtime's 95% interval.
type besideView struct {
	Runtime string
	Rate    stats.Rate
	Counts  string // per run, "23" or "23, 0, 5"; a crashed run "crashed"
	Runs    []Cell
}

func newBeside(sum CellSummary, runs []Cell, m measure) besideView {
	b := besideView{Runtime: sum.Runtime, Rate: m.rate(&sum)}
	var counts []string
	for _, c := range runs {
		if c.Runtime != sum.Runtime {
			continue
		}
		b.Runs = append(b.Runs, c)
		if c.Valid == "crashed" {
			counts = append(counts, "crashed")
		} else {
			counts = append(counts, fmt.Sprint(m.perRun(c)))
		}
	}
	b.Counts = strings.Join(counts, ", ")
	return b
}
