package reports

import (
	"fmt"
	"slices"
	"strings"

	"gregor/history"
)

// maxTxnSpans bounds the transactions drawn; more are thinned (noted).
const maxTxnSpans = 20000

// txnView is the run report's transactions section: each transaction's
// span from invoke to completion, by producer, coloured by its outcome
// (committed, aborted, unknown), its micro-ops in the bar's title.
type txnView struct {
	Chart                       chart
	Committed, Aborted, Unknown int
}

var txnOutcome = map[history.Type]string{history.OK: "committed", history.Fail: "aborted", history.Info: "unknown"}

// txnSection draws the txn operations of ops; nil without any.
func txnSection(ops []history.Op, bands []band, end int64) *txnView {
	type span struct {
		inv, done *history.Op
	}
	open := map[history.Process]*history.Op{}
	var spans []span
	for i := range ops {
		op := &ops[i]
		if op.F != history.FTxn || op.Process == history.Nemesis {
			continue
		}
		if op.Type == history.Invoke {
			open[op.Process] = op
			continue
		}
		if inv, ok := open[op.Process]; ok {
			delete(open, op.Process)
			spans = append(spans, span{inv, op})
		}
	}
	for _, inv := range open {
		spans = append(spans, span{inv, nil}) // never completed: unknown, to the end
	}
	if len(spans) == 0 {
		return nil
	}
	var procs []history.Process
	for _, s := range spans {
		if !slices.Contains(procs, s.inv.Process) {
			procs = append(procs, s.inv.Process)
		}
	}
	slices.Sort(procs)
	const rowH = 14.0
	v := &txnView{Chart: chart{Width: chartWidth, Height: rowH*float64(len(procs)) + 20, XTicks: ticks(end), Bands: scaleBands(bands, end)}}
	for i, p := range procs {
		v.Chart.Rows = append(v.Chart.Rows, rowLabel{Y: rowH*float64(i) + 10, Label: p.String()})
	}
	slices.SortFunc(spans, func(a, b span) int { return int(a.inv.Time - b.inv.Time) })
	step := thin(&v.Chart, len(spans), maxTxnSpans, "transactions")
	for i, s := range spans {
		typ, to, mops := history.Info, end, s.inv.Mops
		if s.done != nil {
			typ, to = s.done.Type, s.done.Time
			if len(s.done.Mops) > 0 {
				mops = s.done.Mops
			}
		}
		switch typ {
		case history.OK:
			v.Committed++
		case history.Fail:
			v.Aborted++
		default:
			v.Unknown++
		}
		if i%step != 0 {
			continue
		}
		x := xOf(s.inv.Time, end)
		title := fmt.Sprintf("#%d process %s %s: %s", s.inv.Index, s.inv.Process, txnOutcome[typ], describeMops(mops))
		if s.done != nil && s.done.Error != "" {
			title += " (" + s.done.Error + ")"
		}
		v.Chart.Rects = append(v.Chart.Rects, rect{X: x, Y: rowH*float64(slices.Index(procs, s.inv.Process)) + 2,
			W: max(0.5, xOf(to, end)-x), Class: typeClass(typ), Title: title})
	}
	return v
}

// describeMops is a transaction's micro-ops in words: "send t/0 12@5,
// poll t/1 [3@7 4@8]".
func describeMops(mops []history.Mop) string {
	var parts []string
	for _, m := range mops {
		switch m.Kind {
		case history.MopSend:
			s := fmt.Sprintf("send %s %d", m.Key, m.Value)
			if m.Offset >= 0 {
				s += fmt.Sprintf("@%d", m.Offset)
			}
			parts = append(parts, s)
		case history.MopPoll:
			var b strings.Builder
			b.WriteString("poll")
			for _, kr := range m.Polls {
				fmt.Fprintf(&b, " %s [", kr.Key)
				for j, r := range kr.Records {
					if j > 0 {
						b.WriteByte(' ')
					}
					fmt.Fprintf(&b, "%d@%d", r.Value, r.Offset)
				}
				b.WriteByte(']')
			}
			parts = append(parts, b.String())
		}
	}
	return strings.Join(parts, ", ")
}
