package checker

import (
	"fmt"
	"slices"

	"gregor/history"
)

// maxOffset bounds offsets so the dense per-offset table stays in memory; a
// test writes far fewer records than this per partition.
const maxOffset = 1 << 28

// slot is what the history says about one offset of a key.
type slot struct {
	value int64 // first value observed here
	first int32 // call that observed it first; -1 when nothing was observed
	read  bool  // some poll read this offset
	// last is the value the latest poll (in history order) read here:
	// what the log holds at this offset as far as the history knows.
	// Meaningful only when read.
	last int64
}

// sendRec is one send micro-op and what became of its value.
type sendRec struct {
	call  int32 // position in calls
	value int64
	ack   int64 // acknowledged offset, or history.NoOffset
	// offsets where the value was observed (ack or read), in order observed.
	// Invariant: distinct (a read adds its offset only if absent), so more
	// than one entry means a duplicate.
	offsets []int64
	read    bool
	reader  int32 // first poll call that read it; -1 if none
}

// pollRec is one ok poll's records of one key.
type pollRec struct {
	call int32
	recs []history.Record
}

// obs is an extra value observed at an offset that already had another.
type obs struct {
	value int64
	call  int32
}

// keyIndex gathers one key's sends, reads and per-offset table.
type keyIndex struct {
	name      string
	id        int // 0, 1, ... in the order keys were met
	slots     []slot
	conflicts map[int64][]obs // offset -> values other than slots[offset].value
	sends     []sendRec
	byValue   valueIndex // value -> position in sends
	polls     []pollRec
	// maxRead is the highest offset any poll read; -1 if none.
	maxRead int64
	// readPrefix[o] counts read offsets below o; built by finish.
	readPrefix []int32
	// txn: some send to the key was part of a transaction (f "txn"), so
	// aborted records and markers take offsets no operation names.
	txn bool
	// lastPollEnd is the latest completion of a poll that read the key (-1:
	// none); built by finish.
	lastPollEnd int64
	// firstOffsets[si] backs sends[si].offsets while it holds one offset
	// (one allocation for the key, not one per send).
	firstOffsets []int64
	// readAbove[o] is the earliest completion of a poll that read an offset
	// above o (-1: none); built on first use by firstReadAbove.
	readAbove []int64
}

// firstReadAbove is the earliest completion time of a poll that read an
// offset of the key above o, -1 when none did: the read that proves an
// acknowledged record at o gone (lost-write).
func (k *keyIndex) firstReadAbove(ix *index, o int64) int64 {
	if k.readAbove == nil {
		// best[x]: earliest poll that read offset x; then a suffix minimum.
		k.readAbove = make([]int64, len(k.slots)+1)
		for i := range k.readAbove {
			k.readAbove[i] = -1
		}
		for _, p := range k.polls {
			t := ix.calls[p.call].endSeen
			for _, r := range p.recs {
				if b := k.readAbove[r.Offset]; b < 0 || t < b {
					k.readAbove[r.Offset] = t
				}
			}
		}
		next := int64(-1) // earliest read of an offset above i
		for i := len(k.readAbove) - 1; i >= 0; i-- {
			here := k.readAbove[i]
			k.readAbove[i] = next
			if here >= 0 && (next < 0 || here < next) {
				next = here
			}
		}
	}
	if o < 0 || o >= int64(len(k.readAbove)) {
		return -1
	}
	return k.readAbove[o]
}

func newKeyIndex(name string) *keyIndex {
	return &keyIndex{name: name, maxRead: -1}
}

func (k *keyIndex) observe(offset, value int64, c int32, read bool) error {
	if offset < 0 || offset >= maxOffset {
		return fmt.Errorf("key %q: offset %d out of range [0, %d)", k.name, offset, maxOffset)
	}
	for int64(len(k.slots)) <= offset {
		k.slots = append(k.slots, slot{first: -1})
	}
	s := &k.slots[offset]
	if read {
		s.read = true
		s.last = value
		if offset > k.maxRead {
			k.maxRead = offset
		}
	}
	if s.first < 0 {
		s.value, s.first = value, c
		return nil
	}
	if s.value == value {
		return nil
	}
	if k.conflicts == nil {
		k.conflicts = make(map[int64][]obs)
	}
	for _, o := range k.conflicts[offset] {
		if o.value == value {
			return nil
		}
	}
	k.conflicts[offset] = append(k.conflicts[offset], obs{value, c})
	return nil
}

// slotAt is offset's slot, or nil beyond the table.
func (k *keyIndex) slotAt(offset int64) *slot {
	if offset < 0 || offset >= int64(len(k.slots)) {
		return nil
	}
	return &k.slots[offset]
}

// assigned reports whether any op observed a record at offset.
func (k *keyIndex) assigned(offset int64) bool {
	return offset >= 0 && offset < int64(len(k.slots)) && k.slots[offset].first >= 0
}

// readBetween reports whether some poll read an offset in (lo, hi).
func (k *keyIndex) readBetween(lo, hi int64) bool {
	if hi-lo < 2 {
		return false
	}
	a, b := lo+1, hi
	if a < 0 {
		a = 0
	}
	n := int64(len(k.readPrefix)) - 1
	if b > n {
		b = n
	}
	if a >= b {
		return false
	}
	return k.readPrefix[b]-k.readPrefix[a] > 0
}

func (k *keyIndex) finish(ix *index) {
	k.lastPollEnd = -1
	for _, p := range k.polls {
		k.lastPollEnd = max(k.lastPollEnd, ix.calls[p.call].endSeen)
	}
	k.readPrefix = make([]int32, len(k.slots)+1)
	for i, s := range k.slots {
		k.readPrefix[i+1] = k.readPrefix[i]
		if s.read {
			k.readPrefix[i+1]++
		}
	}
}

// index is the whole history's per-key view.
type index struct {
	calls []call
	keys  map[string]*keyIndex
	order []string // keys in first-seen order, for deterministic output
	stats Stats
}

func (ix *index) key(name string) *keyIndex {
	k, ok := ix.keys[name]
	if !ok {
		k = newKeyIndex(name)
		k.id = len(ix.keys)
		ix.keys[name] = k
		ix.order = append(ix.order, name)
	}
	return k
}

// buildIndex registers every send first (a poll may complete before the send
// it read), then every read.
func buildIndex(calls []call) (*index, error) {
	ix := &index{calls: calls, keys: make(map[string]*keyIndex)}
	// Count sends per key first so each key's value map is sized once
	// instead of rehashing as it grows.
	type count struct{ n, dense int }
	perKey := make(map[string]*count)
	for ci := range calls {
		c := &calls[ci]
		if c.event || c.proc == history.Nemesis {
			continue
		}
		for _, m := range c.mops() {
			if m.Kind == history.MopSend {
				n := perKey[m.Key]
				if n == nil {
					n = &count{}
					perKey[m.Key] = n
				}
				n.n++
				if m.Value >= 0 && m.Value < maxDenseValue {
					n.dense = max(n.dense, int(m.Value)+1)
				}
			}
		}
	}
	for name, n := range perKey {
		k := ix.key(name)
		k.byValue = newValueIndex(n.n, n.dense)
		k.sends = make([]sendRec, 0, n.n)
		k.firstOffsets = make([]int64, n.n)
	}
	slices.Sort(ix.order) // map order above is random; keep output deterministic
	for ci := range calls {
		c := &calls[ci]
		if c.event || c.proc == history.Nemesis {
			continue
		}
		for _, m := range c.mops() {
			if m.Kind != history.MopSend {
				continue
			}
			ix.stats.Sends++
			k := ix.key(m.Key)
			if c.f == history.FTxn {
				k.txn = true
			}
			if prev, dup := k.byValue.get(m.Value); dup {
				return nil, &InputError{c.index, c.pos, fmt.Sprintf("value %d sent to key %q twice (also by op %d); values must be unique per key",
					m.Value, m.Key, calls[k.sends[prev].call].index)}
			}
			ack := history.NoOffset
			if c.typ == history.OK && m.Offset >= 0 {
				ack = m.Offset
			}
			k.byValue.put(m.Value, int32(len(k.sends)))
			k.sends = append(k.sends, sendRec{call: int32(ci), value: m.Value, ack: ack, reader: -1})
			if ack >= 0 {
				if err := k.observe(ack, m.Value, int32(ci), false); err != nil {
					return nil, &InputError{c.cindex, c.pos, err.Error()}
				}
				k.addOffset(int32(len(k.sends)-1), ack)
			}
		}
	}
	for ci := range calls {
		c := &calls[ci]
		if c.typ != history.OK || c.event || c.proc == history.Nemesis {
			continue
		}
		if c.f == history.FPollUncommitted {
			// read_uncommitted: aborted and open transactions' records
			// too; not a read of the committed log (txn.go counts them).
			continue
		}
		for _, m := range c.op.Mops {
			if m.Kind != history.MopPoll || m.Polls == nil {
				continue
			}
			ix.stats.Polls++
			for _, kr := range m.Polls {
				k := ix.key(kr.Key)
				if len(kr.Records) == 0 {
					continue
				}
				k.polls = append(k.polls, pollRec{call: int32(ci), recs: kr.Records})
				for _, r := range kr.Records {
					ix.stats.Records++
					if err := k.observe(r.Offset, r.Value, int32(ci), true); err != nil {
						return nil, &InputError{c.cindex, c.pos, err.Error()}
					}
					si, ok := k.byValue.get(r.Value)
					if !ok {
						continue // a value nobody sent: the linearizability check names it
					}
					s := &k.sends[si]
					if !s.read {
						s.read, s.reader = true, int32(ci)
					}
					if !containsInt(s.offsets, r.Offset) {
						k.addOffset(si, r.Offset)
					}
				}
			}
		}
	}
	for _, k := range ix.keys {
		k.finish(ix)
	}
	ix.stats.Keys = len(ix.keys)
	return ix, nil
}

// addOffset appends o to sends[si].offsets.
func (k *keyIndex) addOffset(si int32, o int64) {
	s := &k.sends[si]
	if s.offsets == nil && int(si) < len(k.firstOffsets) {
		s.offsets = k.firstOffsets[si : si+1 : si+1] // a second offset reallocates
		s.offsets[0] = o
		return
	}
	s.offsets = append(s.offsets, o)
}

func containsInt(xs []int64, x int64) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// maxDenseValue bounds the values a valueIndex keeps in its table: the
// workloads number each key's values 1, 2, 3, ...
const maxDenseValue = 1 << 26

// valueIndex maps a key's sent values to their positions in its sends: a
// table for small non-negative values (the workloads' per-key counters),
// a map for any other.
type valueIndex struct {
	dense []int32 // dense[v] is the position + 1; 0: not sent
	other map[int64]int32
}

// newValueIndex has room for n sends, values below dense in the table. A
// table far larger than the sends (sparse values) is not made: those
// values go to the map.
func newValueIndex(n, dense int) valueIndex {
	if dense > 4*n+1024 {
		dense = 4*n + 1024
	}
	return valueIndex{dense: make([]int32, dense)}
}

func (vi *valueIndex) get(v int64) (int32, bool) {
	if v >= 0 && v < int64(len(vi.dense)) {
		p := vi.dense[v]
		return p - 1, p > 0
	}
	p, ok := vi.other[v]
	return p, ok
}

func (vi *valueIndex) put(v int64, pos int32) {
	if v >= 0 && v < int64(len(vi.dense)) {
		vi.dense[v] = pos + 1
		return
	}
	if vi.other == nil {
		vi.other = make(map[int64]int32)
	}
	vi.other[v] = pos
}
