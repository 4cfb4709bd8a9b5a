package checker

import (
	"sort"
	"strconv"

	"gregor/history"
)

// concurrentCommitWindow bounds how long before another consumer's commit
// ended a commit of the same key may still have been in flight, and so have
// been applied after it: the group workload gives a commit 10 s
// (workloads/group commitTimeout). Commits of one consumer are sequential.
const concurrentCommitWindow = int64(10e9)

// checkCommitRegression finds committed-offset-regression: a consumer is
// assigned a key and starts consuming it below the group's committed offset.
//
// A consumer newly assigned a partition fetches the group's committed
// offset (OffsetFetch) and polls from there, so the first record of the key
// it polls after the "assigned" line is the committed offset then (with
// auto.offset.reset=earliest only when the group never committed). Let L be
// the last ok commit of the key that ended before the assignment: the
// coordinator applied it before answering, and a later, lower committed
// offset is legitimate only if some commit of at most that offset may have
// been applied after L. Commits of one consumer are sequential, so only
// these count: a commit (ok or unknown) that ended after L did, and one by
// another consumer that ended at most concurrentCommitWindow before L did.
// Without such a commit, starting below L means the coordinator lost a
// commit it had acknowledged: typically a coordinator failover that
// reloaded offsets without it (the offsets were not durable).
func checkCommitRegression(ix *index, col *collector) {
	type commitRec struct {
		value int64
		end   int64 // completion time as observed
		proc  history.Process
		ok    bool
		call  int32
	}
	commits := map[groupKey][]commitRec{} // completion order
	type pending struct {
		group string
		proc  history.Process
		call  int32 // the assigned line
		at    int64
	}
	assigned := map[history.Process]map[string]pending{}
	type start struct {
		gk     groupKey
		p      pending
		offset int64
		value  int64
		call   int32
	}
	var starts []start
	for ci := range ix.calls {
		c := &ix.calls[ci]
		switch {
		case c.f == history.FCommit && (c.typ == history.OK || c.typ == history.Info):
			g, offsets := c.op.Group, c.op.Offsets
			if offsets == nil && c.inv != nil {
				g, offsets = c.inv.Group, c.inv.Offsets
			}
			for _, ko := range offsets {
				gk := groupKey{g, ko.Key}
				commits[gk] = append(commits[gk], commitRec{ko.Offset, c.endSeen, c.proc, c.typ == history.OK, int32(ci)})
			}
		case c.f == history.FRebalance:
			r, err := history.ParseRebalance(c.op)
			if err != nil {
				continue // prepare validated the line; nothing to learn here
			}
			switch r.Event {
			case history.RebalanceAssigned:
				m := assigned[c.proc]
				if m == nil {
					m = map[string]pending{}
					assigned[c.proc] = m
				}
				for _, k := range r.Keys {
					m[k] = pending{c.op.Group, c.proc, int32(ci), c.endSeen}
				}
			case history.RebalanceRevoked, history.RebalanceLost:
				for _, k := range r.Keys {
					delete(assigned[c.proc], k)
				}
			case history.RebalanceLeave, history.RebalanceJoin:
				delete(assigned, c.proc)
			}
		case c.f == history.FCrash:
			delete(assigned, c.proc)
		case c.f == history.FPoll && c.typ == history.OK:
			m := assigned[c.proc]
			if len(m) == 0 {
				continue
			}
			for _, mop := range c.mops() {
				for _, kr := range mop.Polls {
					p, ok := m[kr.Key]
					if !ok || len(kr.Records) == 0 {
						continue
					}
					delete(m, kr.Key)
					r := kr.Records[0]
					starts = append(starts, start{groupKey{p.group, kr.Key}, p, r.Offset, r.Value, int32(ci)})
				}
			}
		}
	}
	for _, s := range starts {
		cs := commits[s.gk]
		// L: the last ok commit that ended before the assignment.
		i := sort.Search(len(cs), func(i int) bool { return cs[i].end >= s.p.at }) - 1
		for i >= 0 && !cs[i].ok {
			i--
		}
		if i < 0 || s.offset >= cs[i].value {
			continue
		}
		last := cs[i]
		explained := false
		for _, o := range cs {
			if o.value > s.offset || o.call == last.call || (o.proc == s.p.proc && o.call > s.call) {
				continue // too high, L itself, or the new owner's own later commit
			}
			if o.end > last.end || (o.proc != last.proc && o.end >= last.end-concurrentCommitWindow) {
				explained = true
				break
			}
		}
		if explained {
			continue
		}
		col.add(CommittedOffsetRegression, func() Example {
			commit := ref(&ix.calls[last.call])
			commit.Key, commit.Offset = s.gk.key, i64(last.value)
			assign := ref(&ix.calls[s.p.call])
			assign.Key = s.gk.key
			return Example{Key: s.gk.key, Group: s.gk.group, Offsets: []int64{last.value, s.offset},
				Note: "the group committed " + strconv.FormatInt(last.value, 10) + " (acknowledged); a consumer assigned the key after it started at " +
					strconv.FormatInt(s.offset, 10) + ", and no commit that could have come later was that low",
				Ops: []OpRef{commit, assign, refMop(&ix.calls[s.call], s.gk.key, s.offset, s.value)}}
		})
	}
}
