package reports

import (
	"fmt"
	"path"
	"time"

	"gregor/history"
)

// shrinkView is the report's "Shrinking" section: the link from a failing
// run to the smallest schedule gregor shrink found for it, or back.
type shrinkView struct {
	// FromHref links the original run's report (in a shrunk run), ToHref
	// the shrunk run's (in the original).
	FromHref, ToHref string
	Anomalies        []string
	Before, After    string
	Replays          int
	Exhausted        bool
}

func shrinkSection(l *history.ShrinkLinks) *shrinkView {
	if l == nil {
		return nil
	}
	v := &shrinkView{Anomalies: l.Anomalies, Before: sizeText(l.Before), After: sizeText(l.After),
		Replays: l.Replays, Exhausted: l.Exhausted}
	if l.ShrunkFrom != "" {
		v.FromHref = path.Join(l.ShrunkFrom, history.ReportFile)
	}
	if l.ShrunkTo != "" {
		v.ToHref = path.Join(l.ShrunkTo, history.ReportFile)
	}
	return v
}

func sizeText(z history.ScheduleSize) string {
	return fmt.Sprintf("%d faults, %.1f s of faults (%.1f s in force), the last ending at %.1f s, in a %.1f s fault phase", z.Faults,
		time.Duration(z.FaultTime).Seconds(), time.Duration(z.InForce).Seconds(), time.Duration(z.End).Seconds(), time.Duration(z.TimeLimit).Seconds())
}
