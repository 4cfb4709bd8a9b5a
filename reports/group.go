package reports

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"strings"

	"gregor/checker"
)

var groupTmpl = template.Must(template.New("group.html").Funcs(template.FuncMap{
	"ms":  func(ns int64) string { return fmt.Sprintf("%.1f ms", float64(ns)/1e6) },
	"sec": func(ns int64) string { return fmt.Sprintf("%.2f s", float64(ns)/1e9) },
}).ParseFS(templates, "templates/group.html"))

// lagHeight is the lag chart's height in pixels.
const lagHeight = 170.0

// groupView is one consumer group's section of the run report.
type groupView struct {
	Name                                string
	Consumers, Processed, Failed, Count int
	StaticRejoins, RedeliveredOther     int
	TotalPause, PeakLag                 int64
	Chart                               chart
	Height                              float64
	Rebalances                          []band
	CommittedPath, ProcessedPath        string
	Rows                                []rebalanceRow
	Ends                                []checker.ConsumerEnd
}

type rebalanceRow struct {
	checker.RebalanceFigure
	Duration int64
	Note     string
}

// groupSections renders the consumer groups' figures (checker.GroupFigures)
// for the run report: a lag chart with the rebalances and faults on the run's
// time axis (end), the rebalance table and what each consumer crash left to
// be processed again. Empty when the run had no group.
func groupSections(res *checker.Result, faults []band, end int64) (template.HTML, error) {
	if res == nil || len(res.Groups) == 0 {
		return "", nil
	}
	var views []groupView
	for _, g := range res.Groups {
		v := groupView{Name: g.Group, Consumers: g.Consumers, Processed: g.Processed, Failed: g.Failed,
			Count: g.RebalanceCount, StaticRejoins: g.StaticRejoins, RedeliveredOther: g.RedeliveredOther,
			TotalPause: g.TotalPause, PeakLag: g.PeakLag, Ends: g.Ends, Height: lagHeight - 2}
		v.Chart = chart{Width: chartWidth, Height: lagHeight, Bands: scaleBands(faults, end), XTicks: ticks(end)}
		for _, r := range g.Rebalances {
			note := ""
			switch {
			case r.Initial:
				note = "initial (not counted)"
			case r.Shutdown:
				note = "workload stopping (not counted)"
			}
			v.Rows = append(v.Rows, rebalanceRow{RebalanceFigure: r, Duration: r.End - r.Start, Note: note})
			if !r.Initial && !r.Shutdown {
				v.Rebalances = append(v.Rebalances, band{X: xOf(r.Start, end), W: math.Max(2, xOf(r.End, end)-xOf(r.Start, end)),
					Label: fmt.Sprintf("generation %d: pause %.1f ms, lag %d → %d", r.Generation, float64(r.Pause)/1e6, r.LagBefore, r.LagPeak)})
			}
		}
		top := int64(1)
		for _, s := range g.Lag {
			top = max(top, s[1], s[2])
		}
		y := func(n int64) float64 { return lagHeight - 14 - float64(n)/float64(top)*(lagHeight-24) }
		var com, pro strings.Builder
		for i, s := range g.Lag {
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&com, "%s%.1f %.1f ", cmd, xOf(s[0], end), y(s[1]))
			fmt.Fprintf(&pro, "%s%.1f %.1f ", cmd, xOf(s[0], end), y(s[2]))
		}
		v.CommittedPath, v.ProcessedPath = com.String(), pro.String()
		v.Chart.Lines = []line{{Y: y(top) + 10, Label: fmt.Sprintf("%d records", top)}, {Y: y(0) - 2, Label: "0"}}
		views = append(views, v)
	}
	var buf bytes.Buffer
	if err := groupTmpl.ExecuteTemplate(&buf, "groups", views); err != nil {
		return "", err
	}
	return template.HTML(buf.String()), nil // produced by html/template: escaped
}
