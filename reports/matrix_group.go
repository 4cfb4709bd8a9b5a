package reports

import "gregor/checker"

// GroupCell is what a matrix cell shows of a group-workload run: the
// at-most-once and at-least-once findings and what rebalances cost.
type GroupCell struct {
	CommittedSkip int     `json:"committed_skip"`
	Redelivered   int     `json:"redelivered"`
	Rebalances    int     `json:"rebalances"` // after the warm-up
	TotalPauseMs  float64 `json:"total_pause_ms"`
	PeakLag       int64   `json:"peak_lag"`
	StaticRejoins int     `json:"static_rejoins"`
}

// groupCell summarises res's group figures; nil without groups.
func groupCell(res *checker.Result) *GroupCell {
	if len(res.Groups) == 0 {
		return nil
	}
	g := &GroupCell{CommittedSkip: res.Counts[checker.CommittedSkip], Redelivered: res.Counts[checker.Redelivered]}
	for _, f := range res.Groups {
		g.Rebalances += f.RebalanceCount
		g.TotalPauseMs += float64(f.TotalPause) / 1e6
		g.PeakLag = max(g.PeakLag, f.PeakLag)
		g.StaticRejoins += f.StaticRejoins
	}
	return g
}

// add sums o into g (either may be nil).
func (g *GroupCell) add(o *GroupCell) *GroupCell {
	if o == nil {
		return g
	}
	if g == nil {
		c := *o
		return &c
	}
	g.CommittedSkip += o.CommittedSkip
	g.Redelivered += o.Redelivered
	g.Rebalances += o.Rebalances
	g.TotalPauseMs += o.TotalPauseMs
	g.PeakLag = max(g.PeakLag, o.PeakLag)
	g.StaticRejoins += o.StaticRejoins
	return g
}
