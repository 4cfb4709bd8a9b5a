package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"gregor/history"
)

// Transaction checks (DESIGN.md section 5), over the txn workload's
// operations: f "txn" (a Kafka transaction of sends and polls: ok committed,
// fail aborted, info unknown), read_committed polls (f "poll"), and
// read_uncommitted polls (f "poll-uncommitted", the control: kept out of
// every check, their reads of aborted records only counted).
//
// aborted-read and lost-committed-write are found by checkWrites (a failed
// transaction's write read; a committed one's never read though later
// offsets of its key were). Here:
//
//   - torn-transaction: a transaction (ok, or info and partly read) some of
//     whose writes were read while another, at an offset below the highest
//     read of its key, never was: it was not atomic.
//   - intermediate-read: a read_committed poll returned a transaction's
//     write to a key and stopped before that transaction's later write to
//     the same key, which exists (some poll read it). A read_committed fetch
//     ends at the last stable offset, which passes a transaction only once
//     its marker is replicated, after all its records; the workload's fetch
//     size limits are far above what a test writes.
//   - G0, G1c, G-single: cycles in the dependency graph Elle builds for
//     Kafka (Jepsen's jepsen.tests.kafka): nodes are the ok and info
//     operations that sent or read; ww: per key, the writer of each
//     version to the writer of the next, in offset order (the versions are
//     the offsets some operation acknowledged or read); wr: the writer of a
//     value to each operation that read it; rw: an operation's highest
//     read of a key to the writer of the next version. G0 is a cycle of ww
//     edges, G1c one of ww and wr edges with at least one wr, G-single one
//     with exactly one rw edge. Each example lists the cycle's operations
//     and the edge between each and the next.

// Edge kinds of the dependency graph, as bits.
const (
	edgeWW uint8 = 1 << iota
	edgeWR
	edgeRW
)

func edgeName(t uint8) string {
	var n []string
	for _, e := range []struct {
		b uint8
		s string
	}{{edgeWW, "ww"}, {edgeWR, "wr"}, {edgeRW, "rw"}} {
		if t&e.b != 0 {
			n = append(n, e.s)
		}
	}
	return strings.Join(n, "+")
}

// maxGSingleVisits bounds the node visits of the G-single search over a
// whole history (each rw edge inside a strongly connected component is a
// search for a path back without rw edges): linear work, and a warning
// when the budget runs out before every rw edge was tried.
const maxGSingleVisits = 20_000_000

// txnGraph is the dependency graph in CSR form: node i's edges are
// to[off[i]:off[i+1]] with kinds kind[...]. Nodes are calls.
type txnGraph struct {
	calls []int32 // node -> call position
	node  []int32 // call position -> node, -1 when not a node
	off   []int32
	to    []int32
	kind  []uint8
}

type rawEdge struct {
	from, to int32
	kind     uint8
}

// writerNode is the graph node of the call that sent value v to k, or -1.
func (ix *index) writerNode(g *txnGraph, k *keyIndex, v int64) int32 {
	si, ok := k.byValue.get(v)
	if !ok {
		return -1
	}
	return g.node[k.sends[si].call]
}

// buildTxnGraph derives the ww, wr and rw edges.
func buildTxnGraph(ix *index) *txnGraph {
	g := &txnGraph{node: make([]int32, len(ix.calls))}
	for ci := range ix.calls {
		g.node[ci] = -1
		c := &ix.calls[ci]
		if c.event || c.proc == history.Nemesis || c.f == history.FPollUncommitted || (c.typ != history.OK && c.typ != history.Info) {
			continue
		}
		if len(c.mops()) == 0 {
			continue
		}
		g.node[ci] = int32(len(g.calls))
		g.calls = append(g.calls, int32(ci))
	}
	var edges []rawEdge
	// stamp[w] == group: the operation whose reads of the current key are
	// being walked read a write of w there.
	stamp := make([]int32, len(g.calls))
	group := int32(0)
	add := func(a, b int32, t uint8) {
		if a >= 0 && b >= 0 && a != b {
			edges = append(edges, rawEdge{a, b, t})
		}
	}
	for _, name := range ix.order {
		k := ix.keys[name]
		// Versions in offset order, with their writers.
		var verOff []int64
		var verW []int32
		prev := int32(-1)
		for o := range k.slots {
			s := &k.slots[o]
			if s.first < 0 {
				continue
			}
			v := s.value
			if s.read {
				v = s.last
			}
			w := ix.writerNode(g, k, v)
			verOff = append(verOff, int64(o))
			verW = append(verW, w)
			add(prev, w, edgeWW)
			if w >= 0 {
				prev = w
			}
		}
		// rw: an operation's highest read of the key (over all its polls:
		// a key's polls of one call are consecutive in k.polls) to the
		// writer of the next version.
		// No rw edge to a writer the operation read on this key: it read
		// part of that transaction's writes here, which intermediate-read
		// reports.
		rw := func(r int32, high int64) {
			if i, _ := slices.BinarySearch(verOff, high+1); r >= 0 && i < len(verOff) && (verW[i] < 0 || stamp[verW[i]] != group) {
				add(r, verW[i], edgeRW)
			}
		}
		cur, high := int32(-1), int64(-1)
		for _, p := range k.polls {
			r := g.node[p.call]
			if r < 0 {
				continue
			}
			if r != cur {
				rw(cur, high)
				cur, high = r, -1
				group++
			}
			last := int32(-2)
			for _, rec := range p.recs {
				if w := ix.writerNode(g, k, rec.Value); w != last {
					add(w, r, edgeWR)
					if w >= 0 {
						stamp[w] = group
					}
					last = w
				}
				high = max(high, rec.Offset)
			}
		}
		rw(cur, high)
	}
	// CSR, edges merged per (from, to).
	slices.SortFunc(edges, func(a, b rawEdge) int {
		if c := cmp.Compare(a.from, b.from); c != 0 {
			return c
		}
		return cmp.Compare(a.to, b.to)
	})
	n := len(g.calls)
	g.off = make([]int32, n+1)
	for i := 0; i < len(edges); {
		j := i
		t := uint8(0)
		for j < len(edges) && edges[j].from == edges[i].from && edges[j].to == edges[i].to {
			t |= edges[j].kind
			j++
		}
		g.to = append(g.to, edges[i].to)
		g.kind = append(g.kind, t)
		g.off[edges[i].from+1]++
		i = j
	}
	for i := range n {
		g.off[i+1] += g.off[i]
	}
	return g
}

// sccs labels each node with its strongly connected component over the
// edges whose kind intersects mask (iterative Tarjan); comp[i] = -1 for a
// node alone in its component without a self-loop. It returns the number
// of components of two or more nodes.
func (g *txnGraph) sccs(mask uint8) ([]int32, int) {
	n := len(g.calls)
	index := make([]int32, n)
	low := make([]int32, n)
	comp := make([]int32, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i], comp[i] = -1, -1
	}
	var stack []int32
	type frame struct{ v, e int32 }
	var call []frame
	next, ncomp := int32(0), 0
	for s := range int32(n) {
		if index[s] >= 0 {
			continue
		}
		call = append(call, frame{s, g.off[s]})
		index[s], low[s] = next, next
		next++
		stack = append(stack, s)
		onStack[s] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			v := f.v
			if f.e < g.off[v+1] {
				e := f.e
				f.e++
				if g.kind[e]&mask == 0 {
					continue
				}
				w := g.to[e]
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, g.off[w]})
				} else if onStack[w] {
					low[v] = min(low[v], index[w])
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				u := call[len(call)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] == index[v] {
				size := 0
				for i := len(stack) - 1; ; i-- {
					size++
					if stack[i] == v {
						break
					}
				}
				members := stack[len(stack)-size:]
				stack = stack[:len(stack)-size]
				for _, m := range members {
					onStack[m] = false
				}
				if size > 1 {
					for _, m := range members {
						comp[m] = int32(ncomp)
					}
					ncomp++
				}
			}
		}
	}
	return comp, ncomp
}

// path finds a shortest path from a to b over edges of mask inside
// component c (BFS), visiting at most budget nodes; nil when none.
// parent is scratch of len(nodes), every entry -1 on entry and on return.
func (g *txnGraph) path(a, b int32, mask uint8, comp []int32, c int32, parent []int32, budget *int) []int32 {
	if a == b {
		return []int32{a}
	}
	queue := []int32{a}
	parent[a] = a
	var found bool
	for qi := 0; qi < len(queue) && !found; qi++ {
		v := queue[qi]
		*budget--
		if *budget < 0 {
			break
		}
		for e := g.off[v]; e < g.off[v+1]; e++ {
			w := g.to[e]
			if g.kind[e]&mask == 0 || comp[w] != c || parent[w] >= 0 {
				continue
			}
			parent[w] = v
			queue = append(queue, w)
			if w == b {
				found = true
				break
			}
		}
	}
	var p []int32
	if found {
		for v := b; v != a; v = parent[v] {
			p = append(p, v)
		}
		p = append(p, a)
		slices.Reverse(p)
	}
	for _, v := range queue {
		parent[v] = -1
	}
	return p
}

// kindBetween is the kind of edge a->b (0 when none).
func (g *txnGraph) kindBetween(a, b int32) uint8 {
	for e := g.off[a]; e < g.off[a+1]; e++ {
		if g.to[e] == b {
			return g.kind[e]
		}
	}
	return 0
}

// cycleExample names a cycle's operations and prints it: "op 3 -ww-> op 9
// -wr-> op 3". first is the edge kind to show for the cycle's first edge
// (the one the search started from), 0 to show every kind of each edge
// restricted to mask.
func (ix *index) cycleExample(g *txnGraph, cyc []int32, mask uint8, first uint8) Example {
	var b strings.Builder
	ex := Example{}
	for i, v := range cyc {
		c := &ix.calls[g.calls[v]]
		ex.Ops = append(ex.Ops, ref(c))
		w := cyc[(i+1)%len(cyc)]
		t := g.kindBetween(v, w) & mask
		if i == 0 && first != 0 {
			t = first
		}
		fmt.Fprintf(&b, "op %d -%s-> ", c.cindex, edgeName(t))
	}
	fmt.Fprintf(&b, "op %d", ix.calls[g.calls[cyc[0]]].cindex)
	ex.Note = b.String()
	return ex
}

// checkCycles finds G0, G1c and G-single.
func checkCycles(ix *index, col *collector) []string {
	g := buildTxnGraph(ix)
	n := len(g.calls)
	if n == 0 || len(g.to) == 0 {
		return nil
	}
	parent := make([]int32, n)
	for i := range parent {
		parent[i] = -1
	}
	var warnings []string
	unlimited := 1 << 62
	// G0: cycles of ww edges; one example per component.
	comp, _ := g.sccs(edgeWW)
	seen := map[int32]bool{}
	for v := range int32(n) {
		c := comp[v]
		if c < 0 || seen[c] {
			continue
		}
		seen[c] = true
		for e := g.off[v]; e < g.off[v+1]; e++ {
			w := g.to[e]
			if g.kind[e]&edgeWW == 0 || comp[w] != c {
				continue
			}
			if p := g.path(w, v, edgeWW, comp, c, parent, &unlimited); p != nil {
				cyc := append([]int32{v}, p[:len(p)-1]...)
				col.add(G0, func() Example { return ix.cycleExample(g, cyc, edgeWW, edgeWW) })
				break
			}
		}
	}
	// G1c: cycles of ww and wr edges with a wr edge; one per component.
	comp, _ = g.sccs(edgeWW | edgeWR)
	clear(seen)
	for v := range int32(n) {
		c := comp[v]
		if c < 0 || seen[c] {
			continue
		}
		for e := g.off[v]; e < g.off[v+1]; e++ {
			w := g.to[e]
			if g.kind[e]&edgeWR == 0 || comp[w] != c {
				continue
			}
			if p := g.path(w, v, edgeWW|edgeWR, comp, c, parent, &unlimited); p != nil {
				seen[c] = true
				cyc := append([]int32{v}, p[:len(p)-1]...)
				col.add(G1c, func() Example { return ix.cycleExample(g, cyc, edgeWW|edgeWR, edgeWR) })
				break
			}
		}
	}
	// G-single: an rw edge a->b and a path b ->* a without rw edges, inside
	// one component of the whole graph; one per component.
	comp, _ = g.sccs(edgeWW | edgeWR | edgeRW)
	clear(seen)
	budget := maxGSingleVisits
	for v := range int32(n) {
		c := comp[v]
		if c < 0 || seen[c] || budget <= 0 {
			continue
		}
		for e := g.off[v]; e < g.off[v+1] && budget > 0; e++ {
			w := g.to[e]
			if g.kind[e]&edgeRW == 0 || g.kind[e]&(edgeWW|edgeWR) != 0 || comp[w] != c {
				continue
			}
			if p := g.path(w, v, edgeWW|edgeWR, comp, c, parent, &budget); p != nil {
				seen[c] = true
				cyc := append([]int32{v}, p[:len(p)-1]...)
				col.add(GSingle, func() Example { return ix.cycleExample(g, cyc, edgeWW|edgeWR, edgeRW) })
				break
			}
		}
	}
	if budget <= 0 {
		warnings = append(warnings, fmt.Sprintf("G-single search stopped after %d node visits: some rw edges were not tried", maxGSingleVisits))
	}
	return warnings
}

// checkTxns runs the transaction checks; it returns warnings.
func checkTxns(ix *index, col *collector) []string {
	anyTxn := false
	for ci := range ix.calls {
		c := &ix.calls[ci]
		if c.f != history.FTxn || c.event {
			continue
		}
		anyTxn = true
		switch c.typ {
		case history.OK:
			ix.stats.TxnCommitted++
		case history.Fail:
			ix.stats.TxnAborted++
		default:
			ix.stats.TxnUnknown++
		}
	}
	if !anyTxn {
		return nil
	}
	countUncommittedAborted(ix)
	checkTorn(ix, col)
	checkIntermediate(ix, col)
	return checkCycles(ix, col)
}

// countUncommittedAborted counts the aborted transactions' records that
// read_uncommitted polls returned.
func countUncommittedAborted(ix *index) {
	for ci := range ix.calls {
		c := &ix.calls[ci]
		if c.f != history.FPollUncommitted || c.typ != history.OK {
			continue
		}
		for _, m := range c.op.Mops {
			for _, kr := range m.Polls {
				k := ix.keys[kr.Key]
				if k == nil {
					continue
				}
				for _, r := range kr.Records {
					if si, ok := k.byValue.get(r.Value); ok && ix.calls[k.sends[si].call].typ == history.Fail {
						ix.stats.UncommittedAbortedReads++
					}
				}
			}
		}
	}
}

// checkTorn finds transactions some of whose writes were read while
// another provably never was.
func checkTorn(ix *index, col *collector) {
	for ci := range ix.calls {
		c := &ix.calls[ci]
		if c.f != history.FTxn || c.event || (c.typ != history.OK && c.typ != history.Info) {
			continue
		}
		mops := c.mops()
		var read, missing []OpRef
		var missingOffs []int64
		for _, m := range mops {
			if m.Kind != history.MopSend {
				continue
			}
			k := ix.keys[m.Key]
			if k == nil {
				continue
			}
			si, ok := k.byValue.get(m.Value)
			if !ok {
				continue
			}
			s := &k.sends[si]
			switch {
			case s.read:
				read = append(read, refMop(&ix.calls[s.reader], m.Key, s.offsets[len(s.offsets)-1], m.Value))
			case m.Offset >= 0 && m.Offset < k.maxRead:
				missing = append(missing, refMop(c, m.Key, m.Offset, m.Value))
				missingOffs = append(missingOffs, m.Offset)
			}
		}
		if len(read) == 0 || len(missing) == 0 {
			continue
		}
		col.add(TornTransaction, func() Example {
			ex := Example{Process: proc(c.proc), Offsets: missingOffs,
				Note: fmt.Sprintf("%s transaction op %d: %d of its writes read, %d never read though later offsets of their keys were", c.typ, c.cindex, len(read), len(missing))}
			ex.Ops = append(append([]OpRef{ref(c)}, missing...), read...)
			return ex
		})
	}
}

// checkIntermediate finds read_committed polls that returned a
// transaction's write to a key and stopped before its later write there.
func checkIntermediate(ix *index, col *collector) {
	// lastRead[call] is the highest offset of the current key at which a
	// poll read a write of the transaction call, -1 if none; stamp[call]
	// marks the writers of the poll being walked. Both are reset per key
	// for the calls touched only.
	lastRead := make([]int64, len(ix.calls))
	stamp := make([]int32, len(ix.calls))
	for i := range lastRead {
		lastRead[i] = -1
	}
	poll := int32(0)
	var touched []int32
	for _, name := range ix.order {
		k := ix.keys[name]
		if !k.txn {
			continue
		}
		for _, c := range touched {
			lastRead[c] = -1
		}
		touched = touched[:0]
		for si := range k.sends {
			s := &k.sends[si]
			if !s.read || ix.calls[s.call].f != history.FTxn {
				continue
			}
			for _, o := range s.offsets {
				if sl := k.slotAt(o); sl != nil && sl.read && sl.last == s.value && o > lastRead[s.call] {
					if lastRead[s.call] < 0 {
						touched = append(touched, s.call)
					}
					lastRead[s.call] = o
				}
			}
		}
		for _, p := range k.polls {
			poll++
			end := int64(-1)
			for _, r := range p.recs {
				end = max(end, r.Offset)
			}
			for _, r := range p.recs {
				si, ok := k.byValue.get(r.Value)
				if !ok {
					continue
				}
				w := k.sends[si].call
				if stamp[w] == poll {
					continue
				}
				stamp[w] = poll
				later := lastRead[w]
				if later <= end {
					continue
				}
				pc := &ix.calls[p.call]
				wc := &ix.calls[w]
				laterVal := k.slots[later].last
				col.add(IntermediateRead, func() Example {
					return Example{Key: name, Offsets: []int64{r.Offset, end, later},
						Note: fmt.Sprintf("op %d read op %d's write at offset %d and stopped at offset %d, before op %d's write at offset %d", pc.cindex, wc.cindex, r.Offset, end, wc.cindex, later),
						Ops:  []OpRef{refMop(pc, name, r.Offset, r.Value), refMop(wc, name, r.Offset, r.Value), refMop(wc, name, later, laterVal)}}
				})
			}
		}
	}
}
