package checker

import (
	"cmp"
	"maps"
	"slices"

	"gregor/history"
)

// GroupFigures measure one consumer group from its history (seed 000's
// experiments B and C): each rebalance with its pause and lag spike, lag
// over time, and the records redelivered after each consumer crash or
// restart. Times are nanoseconds since the test started, like the history's.
type GroupFigures struct {
	Group string `json:"group"`
	// Keys are the partitions the group was assigned, sorted.
	Keys []string `json:"keys"`
	// Consumers counts the consumer processes that joined (restarts and
	// crash replacements are new processes).
	Consumers int `json:"consumers"`
	// Processed counts distinct records the group finished processing;
	// Failed distinct records whose processing failed (swallowed or given
	// up) and that were never processed.
	Processed int `json:"processed"`
	Failed    int `json:"failed"`
	// Rebalances, one per group generation, in generation order.
	Rebalances []RebalanceFigure `json:"rebalances"`
	// RebalanceCount and TotalPause cover the rebalances that were not
	// Initial: what faults and membership changes cost.
	RebalanceCount int   `json:"rebalance_count"`
	TotalPause     int64 `json:"total_pause"`
	// StaticRejoins counts consumers that took a static member's place in
	// its generation, without a rebalance.
	StaticRejoins int `json:"static_rejoins"`
	// PeakLag is the highest processing lag after the first fault (all
	// samples without faults).
	PeakLag int64 `json:"peak_lag"`
	// Lag is sampled at LagSamples evenly spaced times.
	Lag []LagSample `json:"lag"`
	// Ends are the consumers that crashed or left, with what they left
	// behind for others to consume again.
	Ends []ConsumerEnd `json:"ends"`
	// RedeliveredOther counts redelivered records not attributable to a
	// crash or leave of the consumer that processed them first (a consumer
	// kicked out of the group, a revoke without a commit).
	RedeliveredOther int `json:"redelivered_other"`
}

// RebalanceFigure is one group generation and the rebalance that led to it.
//
// Start is the first revoke (or loss) after the previous generation was
// fully assigned, or the first assignment of this generation if nobody
// revoked; End is the last assignment of this generation. Pause is the time
// within [Start, End] during which no partition of the group was owned by a
// live consumer: nothing of the group was consumed (a stop-the-world
// rebalance pauses all; a cooperative one need not pause any).
// UnownedTime integrates the partitions without a live owner over [Start,
// End] (partition-nanoseconds), so a rebalance that stops only some
// partitions shows too.
type RebalanceFigure struct {
	Generation  int32 `json:"generation"`
	Start       int64 `json:"start"`
	End         int64 `json:"end"`
	Pause       int64 `json:"pause"`
	UnownedTime int64 `json:"unowned_time"`
	// Members is the number of consumers assigned in this generation;
	// Moved the partitions whose consumer slot changed across it.
	Members int `json:"members"`
	Moved   int `json:"moved"`
	// LagBefore is the processing lag at Start; LagPeak the highest within
	// LagWindow after Start (and before the next rebalance starts).
	LagBefore int64 `json:"lag_before"`
	LagPeak   int64 `json:"lag_peak"`
	// Initial: the group forming before the first fault (or the group's
	// first generation when the test had no faults). Shutdown: begun after
	// the nemesis healed everything (the workload stopping). Neither counts
	// in RebalanceCount and TotalPause.
	Initial  bool `json:"initial"`
	Shutdown bool `json:"shutdown,omitempty"`
}

// LagSample is [time, committed lag, processing lag]: summed over the
// group's keys, the end offset acknowledged by then minus the last
// committed offset (Kafka's consumer lag, seed 000 §7) and minus one past
// the highest processed offset.
type LagSample [3]int64

// ConsumerEnd is a consumer process that crashed or left, and how many
// distinct records it had processed that a later process of the group
// processed again.
type ConsumerEnd struct {
	Process     history.Process `json:"process"`
	Slot        int             `json:"slot"`
	Time        int64           `json:"time"`
	Kind        string          `json:"kind"` // "crash" or "leave"
	Redelivered int             `json:"redelivered"`
}

// LagSamples bounds the lag series of one group.
const LagSamples = 400

// LagWindow is how long after a rebalance starts its lag peak is looked for.
const LagWindow = int64(5e9)

type grpEvent struct {
	t     int64
	idx   int64
	proc  history.Process
	kind  string // a Rebalance event, or "crash"
	keys  []string
	gen   int32
	slot  int
	group string
}

// procRec is one record of a process event: ok (processed) or not (failed).
type procRec struct {
	t    int64
	proc history.Process
	key  string
	off  int64
	ok   bool
	grp  string
	call int64
}

type timedOffset struct {
	t   int64
	off int64
}

// groupFigures measures every group that wrote rebalance or process events;
// nil when none did.
func groupFigures(ix *index) []GroupFigures {
	byGroup := map[string][]grpEvent{}
	procGroup := map[history.Process]string{}
	procSlot := map[history.Process]int{}
	var crashes []grpEvent
	var recs []procRec
	commits := map[string]map[string][]timedOffset{} // group -> key -> commits
	ends := map[string][]timedOffset{}               // key -> acknowledged end offsets
	firstFault, healAll := int64(-1), int64(-1)
	lastT := int64(0)
	for ci := range ix.calls {
		c := &ix.calls[ci]
		if c.proc == history.Nemesis {
			if firstFault < 0 && c.f != "heal-all" {
				firstFault = c.endSeen
			}
			if c.f == "heal-all" && healAll < 0 {
				healAll = c.endSeen
			}
			continue
		}
		switch c.f {
		case history.FRebalance:
			r, err := history.ParseRebalance(c.op)
			if err != nil {
				continue
			}
			g := c.op.Group
			procGroup[c.proc], procSlot[c.proc] = g, r.Slot
			byGroup[g] = append(byGroup[g], grpEvent{t: c.endSeen, idx: c.cindex, proc: c.proc, kind: r.Event,
				keys: r.Keys, gen: r.Generation, slot: r.Slot, group: g})
			lastT = max(lastT, c.endSeen)
		case history.FCrash:
			crashes = append(crashes, grpEvent{t: c.endSeen, idx: c.cindex, proc: c.proc, kind: history.FCrash})
		case history.FProcess:
			for _, kr := range c.op.Records {
				for _, r := range kr.Records {
					recs = append(recs, procRec{c.endSeen, c.proc, kr.Key, r.Offset, c.typ == history.OK, c.op.Group, c.cindex})
				}
			}
			lastT = max(lastT, c.endSeen)
		case history.FCommit:
			if c.typ != history.OK {
				continue
			}
			g, offs := c.op.Group, c.op.Offsets
			if offs == nil && c.inv != nil {
				g, offs = c.inv.Group, c.inv.Offsets
			}
			m := commits[g]
			if m == nil {
				m = map[string][]timedOffset{}
				commits[g] = m
			}
			for _, ko := range offs {
				m[ko.Key] = append(m[ko.Key], timedOffset{c.endSeen, ko.Offset})
			}
			lastT = max(lastT, c.endSeen)
		default:
			if c.typ != history.OK || c.event {
				continue
			}
			for _, m := range c.mops() {
				if m.Kind == history.MopSend && m.Offset >= 0 {
					ends[m.Key] = append(ends[m.Key], timedOffset{c.endSeen, m.Offset + 1})
					lastT = max(lastT, c.endSeen)
				}
			}
		}
	}
	if len(byGroup) == 0 {
		return nil
	}
	for _, cr := range crashes {
		if g, ok := procGroup[cr.proc]; ok {
			cr.group, cr.slot = g, procSlot[cr.proc]
			byGroup[g] = append(byGroup[g], cr)
		}
	}
	for _, es := range ends {
		slices.SortFunc(es, func(a, b timedOffset) int { return cmp.Compare(a.t, b.t) })
	}
	var out []GroupFigures
	for _, g := range slices.Sorted(maps.Keys(byGroup)) {
		evs := byGroup[g]
		slices.SortStableFunc(evs, func(a, b grpEvent) int {
			return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.idx, b.idx))
		})
		f := GroupFigures{Group: g, Lag: []LagSample{}, Rebalances: []RebalanceFigure{}, Ends: []ConsumerEnd{}}
		// Processed records of this group, in time order.
		var mine []procRec
		for _, r := range recs {
			if r.grp == g {
				mine = append(mine, r)
			}
		}
		slices.SortStableFunc(mine, func(a, b procRec) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.call, b.call)) })
		measureOwnership(&f, evs, firstFault, healAll)
		keySet := map[string]bool{}
		for _, k := range f.Keys {
			keySet[k] = true
		}
		for _, r := range mine {
			if !keySet[r.key] {
				keySet[r.key] = true
				f.Keys = append(f.Keys, r.key)
			}
		}
		slices.Sort(f.Keys)
		processed := map[string][]timedOffset{}
		for _, r := range mine {
			if r.ok {
				processed[r.key] = append(processed[r.key], timedOffset{r.t, r.off + 1})
			}
		}
		first := int64(-1)
		if len(evs) > 0 {
			first = evs[0].t
		}
		measureLag(&f, ends, commits[g], processed, first, lastT, firstFault)
		measureRedelivery(&f, evs, mine)
		out = append(out, f)
	}
	return out
}

// measureOwnership replays assignments, revokes and consumer ends to find
// each generation's rebalance window and how long partitions went without
// a live owner within it.
func measureOwnership(f *GroupFigures, evs []grpEvent, firstFault, healAll int64) {
	type ownerT struct {
		proc history.Process
		slot int
	}
	owners := map[string]ownerT{}
	keys := map[string]bool{}
	joined := map[history.Process]bool{}
	// timeline[i]: from timeline[i].t on, owned partitions and (after the
	// fact) the key set size; the last entry holds until the end.
	type step struct {
		t     int64
		owned int
	}
	var timeline []step
	type genInfo struct {
		first, last int64
		procs       map[history.Process]bool
		slots       map[int]history.Process
	}
	gens := map[int32]*genInfo{}
	snapshots := []map[string]int{} // slot owners after each event
	for _, e := range evs {
		switch e.kind {
		case history.RebalanceJoin:
			joined[e.proc] = true
		case history.RebalanceAssigned:
			for _, k := range e.keys {
				owners[k] = ownerT{e.proc, e.slot}
				keys[k] = true
			}
			if e.gen >= 0 {
				gi := gens[e.gen]
				if gi == nil {
					gi = &genInfo{first: e.t, procs: map[history.Process]bool{}, slots: map[int]history.Process{}}
					gens[e.gen] = gi
				}
				if p, ok := gi.slots[e.slot]; ok && p != e.proc {
					// A new process of a slot joined an existing
					// generation: a static member replaced without a
					// rebalance (KIP-345).
					f.StaticRejoins++
					break
				}
				gi.slots[e.slot] = e.proc
				gi.last = max(gi.last, e.t)
				gi.procs[e.proc] = true
			}
		case history.RebalanceRevoked, history.RebalanceLost:
			for _, k := range e.keys {
				keys[k] = true
				if owners[k].proc == e.proc {
					delete(owners, k)
				}
			}
		case history.RebalanceLeave, history.FCrash:
			for k, o := range owners {
				if o.proc == e.proc {
					delete(owners, k)
				}
			}
		}
		timeline = append(timeline, step{e.t, len(owners)})
		snap := make(map[string]int, len(owners))
		for k, o := range owners {
			snap[k] = o.slot
		}
		snapshots = append(snapshots, snap)
	}
	f.Consumers = len(joined)
	f.Keys = slices.Sorted(maps.Keys(keys))
	nKeys := len(keys)
	// ownedAt integrates over [a, b]: time with nothing owned, and
	// unowned partition-time.
	integrate := func(a, b int64) (pause, unowned int64) {
		if b <= a {
			return 0, 0
		}
		cur := 0 // nothing owned before the first event
		for i, s := range timeline {
			if s.t > a {
				break
			}
			cur = timeline[i].owned
		}
		t := a
		for _, s := range timeline {
			if s.t <= a {
				continue
			}
			if s.t >= b {
				break
			}
			if cur == 0 {
				pause += s.t - t
			}
			unowned += int64(nKeys-cur) * (s.t - t)
			t, cur = s.t, s.owned
		}
		if cur == 0 {
			pause += b - t
		}
		unowned += int64(nKeys-cur) * (b - t)
		return pause, unowned
	}
	// snapshotAt is the slot ownership just before time t (strictly).
	snapshotAt := func(t int64, inclusive bool) map[string]int {
		var s map[string]int
		for i, e := range evs {
			if e.t > t || (!inclusive && e.t == t) {
				break
			}
			s = snapshots[i]
		}
		return s
	}
	order := slices.Sorted(maps.Keys(gens))
	prevEnd := int64(-1) << 62
	for i, g := range order {
		gi := gens[g]
		start := gi.first
		// The rebalance began when a member of this generation stopped
		// consuming for it; a leaving member's revoke is not that.
		for _, e := range evs {
			if e.t > prevEnd && e.t <= gi.last && gi.procs[e.proc] &&
				(e.kind == history.RebalanceRevoked || e.kind == history.RebalanceLost) {
				start = min(start, e.t)
				break
			}
		}
		pause, unowned := integrate(start, gi.last)
		before, after := snapshotAt(start, false), snapshotAt(gi.last, true)
		moved := 0
		for k := range keys {
			a, okA := after[k]
			b, okB := before[k]
			if okA && (!okB || a != b) {
				moved++
			}
		}
		initial := i == 0 || (firstFault >= 0 && start < firstFault)
		shutdown := healAll >= 0 && start >= healAll
		f.Rebalances = append(f.Rebalances, RebalanceFigure{Generation: g, Start: start, End: gi.last,
			Pause: pause, UnownedTime: unowned, Members: len(gi.procs), Moved: moved, Initial: initial, Shutdown: shutdown})
		if !initial && !shutdown {
			f.RebalanceCount++
			f.TotalPause += pause
		}
		prevEnd = gi.last
	}
}

// measureLag samples committed and processing lag over [from, to] and reads
// each rebalance's lag before and peak off the samples.
func measureLag(f *GroupFigures, ends, commits, processed map[string][]timedOffset, from, to, firstFault int64) {
	if from < 0 || to <= from || len(f.Keys) == 0 {
		return
	}
	for _, m := range []map[string][]timedOffset{commits, processed} {
		for _, xs := range m {
			slices.SortStableFunc(xs, func(a, b timedOffset) int { return cmp.Compare(a.t, b.t) })
		}
	}
	type cursor struct{ e, c, p int }
	cur := make([]cursor, len(f.Keys))
	endV := make([]int64, len(f.Keys))
	comV := make([]int64, len(f.Keys))
	proV := make([]int64, len(f.Keys))
	n := int64(LagSamples)
	for i := int64(0); i < n; i++ {
		t := from + (to-from)*i/(n-1)
		var lc, lp int64
		for ki, k := range f.Keys {
			c := &cur[ki]
			for es := ends[k]; c.e < len(es) && es[c.e].t <= t; c.e++ {
				endV[ki] = max(endV[ki], es[c.e].off)
			}
			for cs := commits[k]; c.c < len(cs) && cs[c.c].t <= t; c.c++ {
				comV[ki] = cs[c.c].off // the latest commit is the committed offset
			}
			for ps := processed[k]; c.p < len(ps) && ps[c.p].t <= t; c.p++ {
				proV[ki] = max(proV[ki], ps[c.p].off)
			}
			lc += max(0, endV[ki]-comV[ki])
			lp += max(0, endV[ki]-proV[ki])
		}
		f.Lag = append(f.Lag, LagSample{t, lc, lp})
		if firstFault < 0 || t >= firstFault {
			f.PeakLag = max(f.PeakLag, lp)
		}
	}
	for i := range f.Rebalances {
		r := &f.Rebalances[i]
		stop := r.Start + LagWindow
		if i+1 < len(f.Rebalances) && f.Rebalances[i+1].Start > r.End {
			stop = min(stop, f.Rebalances[i+1].Start)
		}
		for _, s := range f.Lag {
			if s[0] <= r.Start {
				r.LagBefore = s[2]
			}
			if s[0] >= r.Start && s[0] <= stop {
				r.LagPeak = max(r.LagPeak, s[2])
			}
		}
		r.LagPeak = max(r.LagPeak, r.LagBefore)
	}
}

// measureRedelivery attributes each record processed again to the crash or
// leave of the process that processed it first, when that end came between
// the two; counts processed and failed records.
func measureRedelivery(f *GroupFigures, evs []grpEvent, recs []procRec) {
	type rk struct {
		key string
		off int64
	}
	type firstSeen struct {
		t    int64
		proc history.Process
	}
	endIdx := map[history.Process]int{}
	for _, e := range evs {
		if e.kind != history.FCrash && e.kind != history.RebalanceLeave {
			continue
		}
		if _, dup := endIdx[e.proc]; dup {
			continue
		}
		kind := "crash"
		if e.kind == history.RebalanceLeave {
			kind = "leave"
		}
		endIdx[e.proc] = len(f.Ends)
		f.Ends = append(f.Ends, ConsumerEnd{Process: e.proc, Slot: e.slot, Time: e.t, Kind: kind})
	}
	first := map[rk]firstSeen{}
	counted := map[rk]bool{}
	failed := map[rk]bool{}
	for _, r := range recs {
		k := rk{r.key, r.off}
		if !r.ok {
			failed[k] = true
			continue
		}
		fs, seen := first[k]
		if !seen {
			first[k] = firstSeen{r.t, r.proc}
			continue
		}
		if counted[k] {
			continue
		}
		counted[k] = true
		if i, ok := endIdx[fs.proc]; ok && f.Ends[i].Time >= fs.t && f.Ends[i].Time <= r.t {
			f.Ends[i].Redelivered++
		} else {
			f.RedeliveredOther++
		}
	}
	f.Processed = len(first)
	for k := range failed {
		if _, ok := first[k]; !ok {
			f.Failed++
		}
	}
}
