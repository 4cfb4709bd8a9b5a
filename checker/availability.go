package checker

import (
	"cmp"
	"slices"

	"gregor/history"
)

// Availability is what the same history says about the system's liveness.
type Availability struct {
	Sends     int     `json:"sends"` // send operations (not micro-ops)
	OK        int     `json:"ok"`
	Fail      int     `json:"fail"`
	Info      int     `json:"info"`
	OKShare   float64 `json:"ok_share"`
	FailShare float64 `json:"fail_share"`
	InfoShare float64 `json:"info_share"`
	// ErrorsByCode counts failed and indeterminate sends by their error code
	// ("" is recorded as "unknown").
	ErrorsByCode map[string]int `json:"errors_by_code"`
	// LongestOutage is the longest stretch of the test with no ok send
	// completing, from the first operation to the last.
	LongestOutage Outage `json:"longest_outage"`
	// Recovery is, per nemesis operation, how long each key took to accept a
	// write again: the completion time of the first ok send to that key
	// invoked after the nemesis operation completed, minus that completion
	// time. Both a fault's start and its end are nemesis operations, so a key
	// that stays down through the fault shows its time to recover after the
	// heal. Keys that never recovered are listed in NotRecovered.
	Recovery []Recovery `json:"recovery"`
}

// Outage is a time range in nanoseconds since the test started.
type Outage struct {
	From     int64 `json:"from"`
	To       int64 `json:"to"`
	Duration int64 `json:"duration_ns"`
}

// Recovery is one nemesis operation's effect on write availability.
type Recovery struct {
	Index        int64            `json:"index"`
	F            string           `json:"f"`
	Time         int64            `json:"time"`
	RecoverNs    map[string]int64 `json:"recover_ns"`
	NotRecovered []string         `json:"not_recovered,omitempty"`
}

// maxRecoveries bounds the recovery table; later nemesis operations are
// summarised by the earlier ones.
const maxRecoveries = 1000

func availability(ix *index) Availability {
	a := Availability{ErrorsByCode: map[string]int{}, Recovery: []Recovery{}}
	var first, last int64 = -1, 0
	// okSends[key]: (invoke time, completion time) of ok sends, in completion order.
	type span struct{ start, end int64 }
	okSends := make(map[string][]span)
	var okEnds []int64
	for ci := range ix.calls {
		c := &ix.calls[ci]
		if first < 0 || c.start < first {
			first = c.start
		}
		last = max(last, c.endSeen)
		if c.f != history.FSend || c.event {
			continue
		}
		a.Sends++
		switch c.typ {
		case history.OK:
			a.OK++
			okEnds = append(okEnds, c.end)
			for _, m := range c.mops() {
				if m.Kind == history.MopSend {
					okSends[m.Key] = append(okSends[m.Key], span{c.start, c.end})
				}
			}
			continue
		case history.Fail:
			a.Fail++
		default:
			a.Info++
		}
		code := c.op.Error
		if code == "" {
			code = "unknown"
		}
		a.ErrorsByCode[code]++
	}
	if a.Sends > 0 {
		a.OKShare = float64(a.OK) / float64(a.Sends)
		a.FailShare = float64(a.Fail) / float64(a.Sends)
		a.InfoShare = float64(a.Info) / float64(a.Sends)
	}
	if first < 0 {
		return a
	}
	slices.Sort(okEnds)
	prev := first
	for _, t := range append(okEnds, last) {
		if t-prev > a.LongestOutage.Duration {
			a.LongestOutage = Outage{From: prev, To: t, Duration: t - prev}
		}
		prev = max(prev, t)
	}
	// Per key, ok sends by invoke time with the suffix minimum of their
	// completion: the first recovery after T is one binary search.
	keys := make([]string, 0, len(okSends))
	for k, ss := range okSends {
		keys = append(keys, k)
		slices.SortFunc(ss, func(x, y span) int { return cmp.Compare(x.start, y.start) })
		for i := len(ss) - 2; i >= 0; i-- {
			ss[i].end = min(ss[i].end, ss[i+1].end)
		}
	}
	slices.Sort(keys)
	for ci := range ix.calls {
		c := &ix.calls[ci]
		if c.proc != history.Nemesis || len(a.Recovery) >= maxRecoveries {
			continue
		}
		r := Recovery{Index: c.cindex, F: c.f, Time: c.endSeen, RecoverNs: map[string]int64{}}
		for _, k := range keys {
			ss := okSends[k]
			i, _ := slices.BinarySearchFunc(ss, c.endSeen, func(x span, t int64) int { return cmp.Compare(x.start, t) })
			if i == len(ss) {
				r.NotRecovered = append(r.NotRecovered, k)
			} else {
				r.RecoverNs[k] = ss[i].end - c.endSeen
			}
		}
		a.Recovery = append(a.Recovery, r)
	}
	return a
}
