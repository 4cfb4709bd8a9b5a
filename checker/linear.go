package checker

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"gregor/history"
)

// The per-key model of a partition log, for porcupine.
//
// State: the log's length L (its LEO). What sits at each offset is fixed by
// the history itself (the key's offset table: the first value acknowledged or
// read there), so the state need not copy the log: a step is O(1) and no
// state is ever copied.
//
//	send v at offset o   allowed iff L == o; L becomes o+1
//	poll up to offset m  allowed iff m < L (every record it returned exists)
//	fill                 an indeterminate send never seen: if nothing is known at
//	                     offset L it may be the record there (L+1); else it did
//	                     not happen. Taking the gap whenever possible is never
//	                     worse: only such sends can pass a gap.
//
// Each anomaly is reported once, by the check that names it, so this model
// takes the other checks' findings as given: sends and records that disagree
// with the offset table are left out (inconsistent-offsets), a failed send
// that was read counts as a writer (G1a), and a poll need not be gapless
// (poll-skip, lost-write). What remains is real-time order: a record read
// before it was written, a send acknowledged at an offset below one already
// acknowledged before it began, a send taking effect after a later one. A
// record no send ever wrote can never be explained and fails here.
//
// A send retried by a non-idempotent producer can appear at two offsets; each
// occurrence is its own append within the send's interval. Duplicates are
// reported by their own check, not as nonlinearizable. An occurrence other
// than an acknowledged send's own offset may also come after the
// acknowledgement: a copy of the request that was still in the network
// (delivered late, after the producer had retried on another connection:
// the delay-client nemesis) is appended whenever it arrives, so it has no
// end (occurrenceEnd). The duplicate check reports it, and only it.
//
// Windows. porcupine's cost per step grows with the number of operations it
// holds (a bitset of linearized ops is hashed and copied), so a key's history
// is split by offset into windows of about Options.Window operations. Sends
// must linearize in offset order, a poll after the send of the highest offset
// it read, and nothing else couples two offsets; so the only link between a
// window starting at offset c and the one before is "send(c-1) precedes
// send(c)". Each window therefore starts from L = c-1 with a barrier op at
// offset c-1 whose interval is the earliest instant send(c-1) can take effect
// in any linearization (computed greedily along the offset chain). It is
// exact: every linearization puts send(c-1) at or after that instant, and a
// window only gets easier the earlier its predecessor may be.
// TestWindowsAgreeWithWholeHistory compares windows with one whole-key check.
// Windows are only cut below the first offset nothing is known
// about (a gap) or that no send explains; everything from there on, with
// every indeterminate send, is one tail window.

type linKind uint8

const (
	linSend linKind = iota
	linPoll
	linFill
)

type linInput struct {
	kind   linKind
	offset int64 // send: the offset written; poll: the highest offset read
	value  int64
	call   int32 // position in calls; -1 for a barrier
}

// linOp is one element of a key's linearizability history.
type linOp struct {
	in         linInput
	start, end int64
	proc       history.Process
}

func (ix *index) logModel(k *keyIndex, init int64) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return init },
		Step: func(state, input, _ any) (bool, any) {
			l := state.(int64)
			in := input.(*linInput)
			switch in.kind {
			case linSend:
				if l == in.offset {
					return true, l + 1
				}
				return false, l
			case linPoll:
				return in.offset < l, l
			default:
				if !k.assigned(l) && l < int64(len(k.slots)) {
					return true, l + 1
				}
				return true, l
			}
		},
		Hash: func(state any) uint64 { return uint64(state.(int64)) },
		DescribeOperation: func(input, _ any) string {
			in := input.(*linInput)
			idx := "barrier"
			if in.call >= 0 {
				idx = fmt.Sprintf("op %d", ix.calls[in.call].cindex)
			}
			switch in.kind {
			case linSend:
				return fmt.Sprintf("%s: send %d -> offset %d", idx, in.value, in.offset)
			case linPoll:
				return fmt.Sprintf("%s: poll up to offset %d", idx, in.offset)
			}
			return fmt.Sprintf("%s: indeterminate send %d", idx, in.value)
		},
		DescribeState: func(state any) string { return fmt.Sprintf("LEO %d", state.(int64)) },
	}
}

// linWindow is a slice of a key's offsets checked by one porcupine call.
type linWindow struct {
	from, to int64 // offsets [from, to); to = -1 for the open tail
	// barrier stands for send(from-1) at the earliest instant it can happen;
	// nil for the window starting at offset 0.
	barrier *linOp
	ops     []linOp // shares the key's sorted elements; not copied
	init    int64   // L before the window
}

func (w *linWindow) size() int {
	if w.barrier != nil {
		return len(w.ops) + 1
	}
	return len(w.ops)
}

// keyWindows builds the windows of one key.
func (ix *index) keyWindows(k *keyIndex, window int) []linWindow {
	n := int64(len(k.slots))
	// sendAt[o]: the send whose value is the one known at o; -1 if none.
	sendAt := make([]int32, n)
	for o := range sendAt {
		sendAt[o] = -1
		if s := &k.slots[o]; s.first >= 0 {
			if si, ok := k.byValue.get(s.value); ok {
				sendAt[o] = si
			}
		}
	}
	writer := func(o int64) (int32, bool) {
		if si := sendAt[o]; si >= 0 {
			return k.sends[si].call, true
		}
		return -1, false
	}
	// occurrenceEnd: the latest instant the record at o can have been
	// appended by its writer's call ci: the call's end, except for a copy
	// of an acknowledged send at another offset than the acknowledged one,
	// which a late request can append at any time after the send began.
	occurrenceEnd := func(o int64, ci int32) int64 {
		si := sendAt[o]
		if ack := k.sends[si].ack; ack >= 0 && ack != o {
			return never
		}
		return ix.calls[ci].end
	}
	// irregular: the first offset with nothing known or no send to explain it.
	irregular, gaps := n, false
	for o := int64(0); o < n; o++ {
		if _, ok := writer(o); !ok {
			if irregular == n {
				irregular = o
			}
			if !k.assigned(o) {
				gaps = true
			}
		}
	}
	// Elements placed by offset, counting-sorted into one slice (one
	// allocation, not one per offset): offset o's are
	// sorted[starts[o]:starts[o+1]], its send first, then its polls in
	// history order.
	var fills []linOp
	for si := range k.sends {
		s := &k.sends[si]
		c := &ix.calls[s.call]
		if s.ack < 0 && !s.read && c.typ != history.Fail && gaps {
			fills = append(fills, linOp{linInput{linFill, -1, s.value, s.call}, c.start, c.end, c.proc})
		}
	}
	pollHi := make([]int64, len(k.polls)) // highest offset read consistently; -1: none
	starts := make([]int32, n+1)
	for o := int64(0); o < n; o++ {
		if sendAt[o] >= 0 {
			starts[o+1]++
		}
	}
	for pi, p := range k.polls {
		hi := int64(-1)
		for _, r := range p.recs {
			if k.slots[r.Offset].value == r.Value {
				hi = max(hi, r.Offset)
			}
		}
		pollHi[pi] = hi
		if hi >= 0 {
			starts[hi+1]++
		}
	}
	for o := int64(0); o < n; o++ {
		starts[o+1] += starts[o]
	}
	sorted := make([]linOp, starts[n])
	fill := slices.Clone(starts[:n])
	for o := int64(0); o < n; o++ {
		if ci, ok := writer(o); ok {
			c := &ix.calls[ci]
			sorted[fill[o]] = linOp{linInput{linSend, o, k.slots[o].value, ci}, c.start, occurrenceEnd(o, ci), c.proc}
			fill[o]++
		}
	}
	for pi, p := range k.polls {
		if hi := pollHi[pi]; hi >= 0 {
			c := &ix.calls[p.call]
			sorted[fill[hi]] = linOp{linInput{linPoll, hi, 0, p.call}, c.start, c.end, c.proc}
			fill[hi]++
		}
	}
	// earliest[o]: the earliest instant send(o) can take effect (greedy along the chain).
	earliest := make([]int64, irregular)
	var t int64
	for o := int64(0); o < irregular; o++ {
		ci, _ := writer(o)
		t = max(t, ix.calls[ci].start)
		earliest[o] = t
	}
	var windows []linWindow
	open := func(from int64) linWindow {
		w := linWindow{from: from}
		if from > 0 {
			ci, _ := writer(from - 1)
			at := min(earliest[from-1], occurrenceEnd(from-1, ci))
			w.init = from - 1
			w.barrier = &linOp{linInput{linSend, from - 1, k.slots[from-1].value, -1}, at, at, history.Nemesis}
		}
		return w
	}
	cur, first := open(0), int32(0)
	for o := int64(0); o < irregular; o++ {
		if end := starts[o+1]; end-first >= int32(window) && o+1 < n {
			cur.to, cur.ops = o+1, sorted[first:end]
			windows = append(windows, cur)
			cur, first = open(o+1), end
		}
	}
	if irregular < n && starts[irregular] > first {
		cur.to, cur.ops = irregular, sorted[first:starts[irregular]]
		windows = append(windows, cur)
		cur, first = open(irregular), starts[irregular]
	}
	cur.to, cur.ops = -1, sorted[first:]
	if irregular < n && len(fills) > 0 {
		cur.ops = append(slices.Clip(cur.ops), fills...) // copies: the tail alone owns the fills
	}
	if len(cur.ops) > 0 {
		windows = append(windows, cur)
	}
	return windows
}

// checkKeyLinear runs porcupine over one key's windows within budget.
func (ix *index) checkKeyLinear(k *keyIndex, opts *Options) (KeyLinearizability, []porcupine.Operation, *linWindow) {
	if k.txn {
		// The model needs every offset accounted for; a transactional
		// key's aborted records and markers take offsets no operation
		// names. Its order is judged by the dependency graph (txn.go).
		return KeyLinearizability{Status: "skipped", Note: "transactional key: aborted records and markers take offsets no operation names; its order is checked by the transaction checks (G0, G1c, G-single)"}, nil, nil
	}
	res := KeyLinearizability{Status: "ok"}
	windows := ix.keyWindows(k, opts.Window)
	res.Windows = len(windows)
	deadline := time.Now().Add(opts.KeyTimeout)
	for wi := range windows {
		w := &windows[wi]
		res.Ops += w.size()
		left := time.Until(deadline)
		if left <= 0 {
			res.Status = "unknown"
			res.Note = fmt.Sprintf("time budget of %v spent after %d of %d windows", opts.KeyTimeout, wi, len(windows))
			return res, nil, nil
		}
		if chainLinearizable(w) {
			continue
		}
		hist := toPorcupine(w)
		switch porcupine.CheckOperationsTimeout(ix.logModel(k, w.init), hist, left) {
		case porcupine.Ok:
			continue
		case porcupine.Unknown:
			res.Status = "unknown"
			res.Note = fmt.Sprintf("time budget of %v spent in window of offsets from %d (%d ops)", opts.KeyTimeout, w.from, w.size())
			return res, nil, nil
		default:
			res.Status = "illegal"
			res.FailedOffsets = []int64{w.from, w.to}
			return res, hist, w
		}
	}
	return res, nil, nil
}

// chainLinearizable decides a window without indeterminate sends (fills)
// directly, as porcupine would, in one pass: true means porcupine would
// find the window linearizable; false means "ask porcupine" (which then
// finds it illegal, or decides a window with fills).
//
// Without fills the model leaves no choice: the sends must take effect in
// offset order from w.init on (the barrier first), so their offsets must be
// init, init+1, ... each once; a poll up to offset m must come after
// send(m). porcupine's order is real time with closed intervals (an op
// whose call equals another's return overlaps it), so the window is
// linearizable iff there are points p in [start, end] for every op,
// non-decreasing along the send chain, with each poll's point at or after
// its send's. Taking every send's point as early as possible, p(o) =
// max(p(o-1), start(o)), is then optimal: it fails only if some p(o) >
// end(o), or some poll ends before p(m). TestChainAgreesWithPorcupine
// compares the two on perturbed histories.
func chainLinearizable(w *linWindow) bool {
	l := w.init
	p := int64(math.MinInt64)
	step := func(o *linOp) bool {
		switch o.in.kind {
		case linSend:
			if o.in.offset != l {
				return false
			}
			p = max(p, o.start)
			l++
			return p <= o.end
		case linPoll:
			// ops are sorted by offset, an offset's send before its polls:
			// the send just taken is send(m).
			return o.in.offset == l-1 && p <= o.end
		}
		return false
	}
	if w.barrier != nil && !step(w.barrier) {
		return false
	}
	for i := range w.ops {
		if !step(&w.ops[i]) {
			return false
		}
	}
	return true
}

// toPorcupine converts a window; inputs point into the window's elements so
// no input is copied into an interface.
func toPorcupine(w *linWindow) []porcupine.Operation {
	out := make([]porcupine.Operation, 0, w.size())
	ids := make(map[history.Process]int)
	add := func(o *linOp) {
		id, ok := ids[o.proc]
		if !ok {
			id = len(ids)
			ids[o.proc] = id
		}
		out = append(out, porcupine.Operation{ClientId: id, Input: &o.in, Call: o.start, Return: o.end})
	}
	if w.barrier != nil {
		add(w.barrier)
	}
	for i := range w.ops {
		add(&w.ops[i])
	}
	return out
}

// visualize writes porcupine's HTML for a failing window.
func (ix *index) visualize(k *keyIndex, w *linWindow, hist []porcupine.Operation, opts *Options) (string, error) {
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return "", err
	}
	model := ix.logModel(k, w.init)
	_, info := porcupine.CheckOperationsVerbose(model, hist, opts.KeyTimeout)
	name := "nonlinearizable-" + strings.NewReplacer("/", "_", "\\", "_", ":", "_", "..", "_").Replace(k.name) + ".html"
	path := filepath.Join(opts.OutDir, name)
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		return "", err
	}
	return path, nil
}

// linExample names a failing window's operations (bounded).
func (ix *index) linExample(k *keyIndex, w *linWindow, maxOps int) Example {
	ex := Example{Key: k.name, Offsets: []int64{w.from, w.to},
		Note: "no linearization of this key's sends and polls in the window of offsets [from, to) (to -1: open end)"}
	for _, o := range w.ops {
		if o.in.call < 0 {
			continue
		}
		if len(ex.Ops) >= maxOps {
			ex.Note += fmt.Sprintf("; %d more ops in the window", len(w.ops)-len(ex.Ops))
			break
		}
		c := &ix.calls[o.in.call]
		r := ref(c)
		r.Key = k.name
		if o.in.kind != linFill {
			r.Offset = i64(o.in.offset)
		}
		if o.in.kind != linPoll {
			r.Value = i64(o.in.value)
		}
		ex.Ops = append(ex.Ops, r)
	}
	slices.SortFunc(ex.Ops, func(a, b OpRef) int { return cmp.Compare(a.Index, b.Index) })
	return ex
}
