package checker

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

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
	mop   int32 // position of the micro-op in the call's
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

// checkOffset refuses an offset the per-offset table cannot hold.
func checkOffset(key string, offset int64) error {
	if offset < 0 || offset >= maxOffset {
		return fmt.Errorf("key %q: offset %d out of range [0, %d)", key, offset, maxOffset)
	}
	return nil
}

func (k *keyIndex) observe(offset, value int64, c int32, read bool) error {
	if err := checkOffset(k.name, offset); err != nil {
		return err
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
// it read), then every read. It runs on workers in two steps: chunks of
// calls, in parallel, gather each key's sends and polls in call order
// (scanChunk); then each key, in parallel, takes its sends and then its
// reads in that order (takeSends, takeReads). A key's state depends only on
// its own sends and reads in history order, which is what one pass over the
// calls gave, so the index is the same whatever the number of workers; an
// error is the first one pass would meet (any send's before any read's).
func buildIndex(calls []call, workers int) (*index, error) {
	ix := &index{calls: calls, keys: make(map[string]*keyIndex)}
	chunks := make([]chunkIndex, chunkCount(len(calls), workers))
	forEach(len(chunks), workers, func(i int) {
		lo, hi := i*len(calls)/len(chunks), (i+1)*len(calls)/len(chunks)
		chunks[i] = ix.scanChunk(lo, hi)
	})
	ix.makeKeys(chunks)
	keys := make([]*keyIndex, len(ix.order))
	for i, name := range ix.order {
		keys[i] = ix.keys[name]
	}
	sendErrs := make([]*sendError, len(keys))
	forEach(len(keys), workers, func(i int) {
		k := keys[i]
		sendErrs[i] = k.takeSends(ix, chunks)
		k.takeReads(ix, chunks)
		k.finish(ix)
	})
	var first *sendError
	for _, e := range sendErrs {
		if e != nil && (first == nil || e.before(first)) {
			first = e
		}
	}
	if first != nil {
		return nil, first.err
	}
	for i := range chunks {
		if chunks[i].readErr != nil {
			return nil, chunks[i].readErr
		}
	}
	for i := range chunks {
		ix.stats.Sends += chunks[i].sends
		ix.stats.Polls += chunks[i].polls
		ix.stats.Records += chunks[i].records
	}
	ix.stats.Keys = len(ix.keys)
	return ix, nil
}

// chunkIndex is what one chunk of calls holds, per key in call order.
type chunkIndex struct {
	keys map[string]*keyPart
	// sendKeys and pollKeys: the keys first seen in a send, in a poll, in
	// the order met (a key only read is added to the index in that order).
	sendKeys, pollKeys    []string
	sends, polls, records int
	// readErr: the chunk's first record at an offset out of range.
	readErr error
}

// keyPart is one chunk's sends and polls of one key.
type keyPart struct {
	sends []sendRec
	polls []pollRec
	txn   bool // a send was part of a transaction
	// inSend, inPoll: the key was met in a send, in a poll.
	inSend, inPoll bool
}

func (ch *chunkIndex) part(name string) *keyPart {
	p := ch.keys[name]
	if p == nil {
		p = &keyPart{}
		ch.keys[name] = p
	}
	return p
}

// scanChunk gathers calls[lo:hi]'s sends and ok polls per key.
func (ix *index) scanChunk(lo, hi int) chunkIndex {
	ch := chunkIndex{keys: make(map[string]*keyPart)}
	for ci := lo; ci < hi; ci++ {
		c := &ix.calls[ci]
		if c.event || c.proc == history.Nemesis {
			continue
		}
		for mi, m := range c.mops() {
			if m.Kind != history.MopSend {
				continue
			}
			ch.sends++
			p := ch.part(m.Key)
			if !p.inSend {
				p.inSend = true
				ch.sendKeys = append(ch.sendKeys, m.Key)
			}
			ack := history.NoOffset
			if c.typ == history.OK && m.Offset >= 0 {
				ack = m.Offset
			}
			p.txn = p.txn || c.f == history.FTxn
			p.sends = append(p.sends, sendRec{call: int32(ci), mop: int32(mi), value: m.Value, ack: ack, reader: -1})
		}
		// read_uncommitted polls read aborted and open transactions'
		// records too: not reads of the committed log (txn.go counts them).
		if c.typ != history.OK || c.f == history.FPollUncommitted {
			continue
		}
		for _, m := range c.op.Mops {
			if m.Kind != history.MopPoll || m.Polls == nil {
				continue
			}
			ch.polls++
			for _, kr := range m.Polls {
				ch.scanRead(c, ci, kr)
			}
		}
	}
	return ch
}

// scanRead adds call ci's records of a key; an offset out of range is the
// chunk's read error (observe's check, made here in history order).
func (ch *chunkIndex) scanRead(c *call, ci int, kr history.KeyRecords) {
	p := ch.part(kr.Key)
	if !p.inPoll {
		p.inPoll = true
		ch.pollKeys = append(ch.pollKeys, kr.Key)
	}
	if len(kr.Records) == 0 {
		return
	}
	p.polls = append(p.polls, pollRec{call: int32(ci), recs: kr.Records})
	ch.records += len(kr.Records)
	if ch.readErr != nil {
		return
	}
	for _, r := range kr.Records {
		if err := checkOffset(kr.Key, r.Offset); err != nil {
			ch.readErr = &InputError{c.cindex, c.pos, err.Error()}
			return
		}
	}
}

// makeKeys adds the chunks' keys to the index: the sent ones sorted, then
// those only read, in the order first read.
func (ix *index) makeKeys(chunks []chunkIndex) {
	var sent []string
	for i := range chunks {
		sent = append(sent, chunks[i].sendKeys...)
	}
	slices.Sort(sent)
	for _, name := range slices.Compact(sent) {
		ix.key(name)
	}
	for i := range chunks {
		for _, name := range chunks[i].pollKeys {
			ix.key(name)
		}
	}
}

// sendError is a key's first bad send and where it is in history order.
type sendError struct {
	call, mop int32
	err       error
}

func (e *sendError) before(o *sendError) bool {
	return e.call < o.call || (e.call == o.call && e.mop < o.mop)
}

// takeSends registers the key's sends, the chunks' in their order.
func (k *keyIndex) takeSends(ix *index, chunks []chunkIndex) *sendError {
	n, dense := 0, 0
	for i := range chunks {
		if p := chunks[i].keys[k.name]; p != nil {
			n += len(p.sends)
			k.txn = k.txn || p.txn
			for _, s := range p.sends {
				if s.value >= 0 && s.value < maxDenseValue {
					dense = max(dense, int(s.value)+1)
				}
			}
		}
	}
	k.byValue = newValueIndex(n, dense)
	k.sends = make([]sendRec, 0, n)
	k.firstOffsets = make([]int64, n)
	for i := range chunks {
		if p := chunks[i].keys[k.name]; p != nil {
			k.sends = append(k.sends, p.sends...)
		}
	}
	for si := range k.sends {
		s := &k.sends[si]
		if prev, dup := k.byValue.get(s.value); dup {
			c := &ix.calls[s.call]
			return &sendError{s.call, s.mop, &InputError{c.index, c.pos, fmt.Sprintf("value %d sent to key %q twice (also by op %d); values must be unique per key",
				s.value, k.name, ix.calls[k.sends[prev].call].index)}}
		}
		k.byValue.put(s.value, int32(si))
		if s.ack >= 0 {
			if err := k.observe(s.ack, s.value, s.call, false); err != nil {
				c := &ix.calls[s.call]
				return &sendError{s.call, s.mop, &InputError{c.cindex, c.pos, err.Error()}}
			}
			k.addOffset(int32(si), s.ack)
		}
	}
	return nil
}

// takeReads registers the key's ok polls, the chunks' in their order. Their
// offsets are in range (scanRead checked them).
func (k *keyIndex) takeReads(ix *index, chunks []chunkIndex) {
	n := 0
	for i := range chunks {
		if p := chunks[i].keys[k.name]; p != nil {
			n += len(p.polls)
		}
	}
	k.polls = make([]pollRec, 0, n)
	for i := range chunks {
		if p := chunks[i].keys[k.name]; p != nil {
			k.polls = append(k.polls, p.polls...)
		}
	}
	for _, p := range k.polls {
		for _, r := range p.recs {
			if k.observe(r.Offset, r.Value, p.call, true) != nil {
				continue // not reached: scanRead refused the history
			}
			si, ok := k.byValue.get(r.Value)
			if !ok {
				continue // a value nobody sent: the linearizability check names it
			}
			s := &k.sends[si]
			if !s.read {
				s.read, s.reader = true, p.call
			}
			if !containsInt(s.offsets, r.Offset) {
				k.addOffset(si, r.Offset)
			}
		}
	}
}

// chunkCount is how many chunks buildIndex cuts calls into: a few per
// worker, so one slow chunk does not hold the others up, none tiny.
func chunkCount(calls, workers int) int {
	return max(1, min(4*workers, calls/chunkMinCalls))
}

// chunkMinCalls is the smallest chunk worth a goroutine (a variable so that
// tests cut small histories into many chunks).
var chunkMinCalls = 4096

// forEach runs f(0), ..., f(n-1) on up to workers goroutines, each taking
// the next i when done with its last.
func forEach(n, workers int, f func(i int)) {
	if workers <= 1 || n <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(i)
			}
		})
	}
	wg.Wait()
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
