package checker

import (
	"maps"
	"slices"

	"gregor/history"
)

// collector counts every anomaly, keeps the first few examples of each, and
// the earliest time the history proved each (Result.Evidence).
// Invariant: len(examples[name]) <= max and <= counts[name]. Not checked:
// addAt, the only writer, keeps both by construction (it counts first and
// appends only below max).
type collector struct {
	max      int
	examples map[string][]Example
	counts   map[string]int
	evidence map[string]int64
}

func newCollector(max int) *collector {
	return &collector{max: max, examples: make(map[string][]Example), counts: make(map[string]int), evidence: make(map[string]int64)}
}

// merge adds what o collected. Only for anomalies c has none of yet:
// examples are kept in the order they were found, and o's would then
// follow c's whatever order the checks ran in.
func (c *collector) merge(o *collector) {
	for name, n := range o.counts {
		c.counts[name] += n
	}
	for name, at := range o.evidence {
		if cur, ok := c.evidence[name]; !ok || at < cur {
			c.evidence[name] = at
		}
	}
	for name, exs := range o.examples {
		c.examples[name] = append(c.examples[name], exs...)
	}
}

// add counts one anomaly whose proof is complete at the latest operation
// its example cites (the second of two reads that disagree, the poll that
// went backwards, ...).
func (c *collector) add(name string, ex func() Example) { c.addAt(name, -1, ex) }

// addAt counts one anomaly the history proved at time at (the history's
// clock), or, for at < 0, at the latest operation its example cites; ex
// builds the example (always when at < 0, else only when it will be kept).
func (c *collector) addAt(name string, at int64, ex func() Example) {
	c.counts[name]++
	var e Example
	built := false
	if at < 0 {
		e, built = ex(), true
		for _, op := range e.Ops {
			at = max(at, op.Time)
		}
	}
	if cur, ok := c.evidence[name]; at >= 0 && (!ok || at < cur) {
		c.evidence[name] = at
	}
	if len(c.examples[name]) < c.max {
		if !built {
			e = ex()
		}
		c.examples[name] = append(c.examples[name], e)
	}
}

// checkWrites finds lost-write, unseen, G1a, duplicate and
// inconsistent-offsets from the per-key tables.
func checkWrites(ix *index, col *collector) {
	for _, name := range ix.order {
		k := ix.keys[name]
		for si := range k.sends {
			s := &k.sends[si]
			c := &ix.calls[s.call]
			if c.typ == history.OK && s.ack >= 0 {
				gone := !s.read && s.ack < k.maxRead
				if sl := k.slotAt(s.ack); sl != nil && sl.read && sl.last != s.value {
					gone = true
				}
				if gone {
					ix.stats.LostAcks++
				}
			}
			switch {
			case c.typ == history.OK && !s.read:
				anomaly := Unseen
				if s.ack >= 0 && s.ack < k.maxRead {
					anomaly = LostWrite
					if c.f == history.FTxn {
						anomaly = LostCommittedWrite
					}
				}
				// The proof is not the acknowledgement the example cites
				// but the first read that passed its offset without it
				// (lost-write), or the key's last read (unseen).
				at := k.lastPollEnd
				if anomaly == LostWrite {
					at = max(c.endSeen, k.firstReadAbove(ix, s.ack))
				}
				col.addAt(anomaly, at, func() Example {
					ex := Example{Key: name, Value: i64(s.value), Ops: []OpRef{refMop(c, name, s.ack, s.value)}}
					if s.ack >= 0 {
						ex.Offset = i64(s.ack)
					}
					if k.maxRead >= 0 {
						ex.MaxReadOffset = i64(k.maxRead)
					}
					if anomaly == Unseen && s.ack < 0 {
						ex.Note = "acknowledged without an offset; cannot tell lost from late"
					}
					return ex
				})
			case c.typ == history.Fail && s.read:
				anomaly := G1a
				if c.f == history.FTxn {
					anomaly = AbortedRead
				}
				col.add(anomaly, func() Example {
					r := &ix.calls[s.reader]
					return Example{Key: name, Value: i64(s.value), Offsets: s.offsets,
						Ops: []OpRef{refMop(c, name, -1, s.value), refMop(r, name, s.offsets[0], s.value)}}
				})
			}
			if len(s.offsets) > 1 {
				col.add(Duplicate, func() Example {
					ex := Example{Key: name, Value: i64(s.value), Offsets: slices.Sorted(slices.Values(s.offsets)),
						Ops: []OpRef{refMop(c, name, s.ack, s.value)}}
					for _, o := range ex.Offsets {
						if o != s.ack && int(o) < len(k.slots) && k.slots[o].first >= 0 {
							ex.Ops = append(ex.Ops, refMop(&ix.calls[k.slots[o].first], name, o, s.value))
						}
					}
					return ex
				})
			}
		}
		if len(k.conflicts) == 0 {
			continue
		}
		for _, o := range slices.Sorted(maps.Keys(k.conflicts)) {
			col.add(InconsistentOffsets, func() Example {
				s := k.slots[o]
				ex := Example{Key: name, Offset: i64(o), Values: []int64{s.value},
					Ops: []OpRef{refMop(&ix.calls[s.first], name, o, s.value)}}
				for _, x := range k.conflicts[o] {
					ex.Values = append(ex.Values, x.value)
					ex.Ops = append(ex.Ops, refMop(&ix.calls[x.call], name, o, x.value))
				}
				return ex
			})
		}
	}
}

// lastSeen is where a process last was on a key.
type lastSeen struct {
	offset int64
	value  int64
	call   int32
}

// checkOrder finds nonmonotonic-send, poll-skip and nonmonotonic-poll by
// walking each process's operations in completion order. A process's poll
// position is forgotten at an assign or subscribe (including a rebalance
// event), a crash, and an indeterminate poll, since each may legitimately
// move the consumer.
func checkOrder(ix *index, col *collector) {
	sends := newProcSeen(ix)
	polls := newProcSeen(ix)
	forget := polls.forget
	for ci := range ix.calls {
		c := &ix.calls[ci]
		if c.proc == history.Nemesis {
			continue
		}
		switch c.f {
		case history.FAssign, history.FSubscribe, history.FCrash, history.FRebalance:
			forget(c.proc)
			continue
		}
		if c.f == history.FPollUncommitted {
			continue // read_uncommitted polls: not the committed log (txn.go)
		}
		if c.typ != history.OK && hasPoll(c) {
			// An indeterminate poll, or a transaction that failed after
			// polling: the consumer moved, and the history keeps no read.
			forget(c.proc)
		}
		if c.typ != history.OK {
			continue
		}
		for _, m := range c.mops() {
			switch m.Kind {
			case history.MopSend:
				if m.Offset < 0 {
					continue
				}
				at := sends.at(c.proc, m.Key)
				prev, ok := at.ls, at.ok
				if ok && m.Offset < prev.offset {
					col.add(NonmonotonicSend, func() Example {
						pc := &ix.calls[prev.call]
						return Example{Key: m.Key, Process: proc(c.proc), Offsets: []int64{prev.offset, m.Offset},
							Ops: []OpRef{refMop(pc, m.Key, prev.offset, prev.value), refMop(c, m.Key, m.Offset, m.Value)}}
					})
				}
				*at = seen{lastSeen{m.Offset, m.Value, int32(ci)}, true}
			case history.MopPoll:
				for _, kr := range m.Polls {
					k := ix.keys[kr.Key]
					at := polls.at(c.proc, kr.Key)
					prev, ok := at.ls, at.ok
					for _, r := range kr.Records {
						if ok {
							switch {
							case r.Offset <= prev.offset:
								col.add(NonmonotonicPoll, func() Example {
									return Example{Key: kr.Key, Process: proc(c.proc), Offsets: []int64{prev.offset, r.Offset},
										Ops: []OpRef{refMop(&ix.calls[prev.call], kr.Key, prev.offset, prev.value), refMop(c, kr.Key, r.Offset, r.Value)}}
								})
							case k.readBetween(prev.offset, r.Offset):
								col.add(PollSkip, func() Example {
									var skipped []int64
									for o := prev.offset + 1; o < r.Offset && len(skipped) < 16; o++ {
										if k.slots[o].read {
											skipped = append(skipped, o)
										}
									}
									return Example{Key: kr.Key, Process: proc(c.proc), Offsets: []int64{prev.offset, r.Offset}, Values: nil,
										Note: "skipped offsets that polls read: " + fmtInts(skipped),
										Ops:  []OpRef{refMop(&ix.calls[prev.call], kr.Key, prev.offset, prev.value), refMop(c, kr.Key, r.Offset, r.Value)}}
								})
							}
						}
						prev, ok = lastSeen{r.Offset, r.Value, int32(ci)}, true
					}
					if ok {
						*at = seen{prev, true}
					}
				}
			}
		}
	}
}

// procSeen is where each process last was on each key: a row of key
// columns per process, so a step is two slice lookups instead of hashing a
// (process, key name) pair; the key's column is its index id.
type procSeen struct {
	ix    *index
	extra map[string]int // columns of keys the index does not have
	dense [][]seen       // rows by process, for client ids below maxDenseProcess
	other map[history.Process][]seen
}

type seen struct {
	ls lastSeen
	ok bool
}

func newProcSeen(ix *index) *procSeen { return &procSeen{ix: ix} }

// at is process p's place on key; valid until the next call of at.
func (t *procSeen) at(p history.Process, key string) *seen {
	col := 0
	if k := t.ix.keys[key]; k != nil {
		col = k.id
	} else {
		c, ok := t.extra[key]
		if !ok {
			if t.extra == nil {
				t.extra = make(map[string]int)
			}
			c = len(t.ix.keys) + len(t.extra)
			t.extra[key] = c
		}
		col = c
	}
	var row *[]seen
	if p >= 0 && p < maxDenseProcess {
		if int(p) >= len(t.dense) {
			t.dense = append(t.dense, make([][]seen, int(p)+1-len(t.dense))...)
		}
		row = &t.dense[p]
	} else {
		if t.other == nil {
			t.other = make(map[history.Process][]seen)
		}
		r := t.other[p]
		row = &r
		defer func() { t.other[p] = r }()
	}
	if col >= len(*row) {
		*row = append(*row, make([]seen, max(col+1, len(t.ix.keys))-len(*row))...)
	}
	return &(*row)[col]
}

// forget drops process p's places on every key.
func (t *procSeen) forget(p history.Process) {
	if p >= 0 && p < maxDenseProcess {
		if int(p) < len(t.dense) {
			clear(t.dense[p])
		}
		return
	}
	clear(t.other[p])
}

func hasPoll(c *call) bool {
	for _, m := range c.mops() {
		if m.Kind == history.MopPoll {
			return true
		}
	}
	return false
}
