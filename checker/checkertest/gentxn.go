package checkertest

import (
	"fmt"
	"math/rand/v2"

	"gregor/history"
)

// TxnGenOptions shape a generated txn history.
type TxnGenOptions struct {
	Seed uint64
	Ops  int // history lines before the final read (approximate)
	// Keys are partitions "t/0".. ; producer p owns the keys k with
	// k mod Producers == p, as the txn workload's producers do.
	Keys, Producers, Consumers int
	AbortRate, InfoRate        float64
	MaxMops                    int
}

// GenerateTxn simulates a correct transactional log driven by the txn
// workload's processes and returns its history: each transaction's sends
// append to its producer's keys, a commit or abort appends a marker to each
// key it wrote and makes its records visible (or never), read_committed
// polls (in transactions and by consumers) return every committed record
// past the process's position, a read_uncommitted control returns every
// record, and a final read returns everything committed. Indeterminate
// transactions (info) commit with probability one half. The checker must
// find no anomaly in it. The same seed gives the same history.
func GenerateTxn(o TxnGenOptions) []history.Op {
	o.Keys, o.Producers, o.Consumers = max(o.Keys, 1), max(o.Producers, 1), max(o.Consumers, 1)
	o.Keys = max(o.Keys, o.Producers)
	o.MaxMops = max(o.MaxMops, 1)
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x74786e))
	keys := make([]string, o.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("t/%d", i)
	}
	type rec struct {
		off, val         int64
		visible, aborted bool // committed, aborted; neither while open
	}
	logs := make([][]rec, o.Keys) // data records per key, in offset order
	leo := make([]int64, o.Keys)
	nextVal := make([]int64, o.Keys)
	nprocs := o.Producers + o.Consumers + 1 // + the read_uncommitted control
	pos := make([][]int, nprocs)            // per process, per key: index into logs
	for p := range pos {
		pos[p] = make([]int, o.Keys)
	}
	var ops []history.Op
	t := int64(0)
	emit := func(op history.Op) {
		t += 10
		op.Index, op.Time = int64(len(ops)), t
		ops = append(ops, op)
	}
	// poll returns the records of every key past p's position: committed
	// ones only, unless uncommitted.
	poll := func(p int, uncommitted bool) history.Mop {
		m := history.Mop{Kind: history.MopPoll, Polls: []history.KeyRecords{}}
		for k := range keys {
			var rs []history.Record
			i := pos[p][k]
			for ; i < len(logs[k]); i++ {
				r := logs[k][i]
				if !uncommitted && r.aborted {
					continue
				}
				if !uncommitted && !r.visible {
					break // the last stable offset: an open transaction
				}
				rs = append(rs, history.Record{Offset: r.off, Value: r.val})
			}
			pos[p][k] = i
			if len(rs) > 0 {
				m.Polls = append(m.Polls, history.KeyRecords{Key: keys[k], Records: rs})
			}
		}
		return m
	}
	for p := range nprocs {
		emit(history.Op{Process: history.Process(p), Type: history.Invoke, F: history.FAssign, Keys: keys})
		emit(history.Op{Process: history.Process(p), Type: history.OK, F: history.FAssign, Keys: keys})
	}
	for len(ops) < o.Ops {
		p := rng.IntN(nprocs)
		proc := history.Process(p)
		switch {
		case p < o.Producers:
			var owned []int
			for k := p; k < o.Keys; k += o.Producers {
				owned = append(owned, k)
			}
			n := 1 + rng.IntN(o.MaxMops)
			inv := make([]history.Mop, n)
			done := make([]history.Mop, n)
			var wrote []int
			for j := range inv {
				if rng.IntN(3) == 0 {
					inv[j] = history.Poll()
					done[j] = poll(p, false)
					continue
				}
				k := owned[rng.IntN(len(owned))]
				nextVal[k]++
				inv[j] = history.Send(keys[k], nextVal[k])
				done[j] = history.Mop{Kind: history.MopSend, Key: keys[k], Value: nextVal[k], Offset: leo[k]}
				logs[k] = append(logs[k], rec{off: leo[k], val: nextVal[k]})
				leo[k]++
				wrote = append(wrote, k)
			}
			emit(history.Op{Process: proc, Type: history.Invoke, F: history.FTxn, Mops: inv})
			typ := history.OK
			switch x := rng.Float64(); {
			case x < o.AbortRate:
				typ = history.Fail
			case x < o.AbortRate+o.InfoRate:
				typ = history.Info
			}
			commit := typ == history.OK || (typ == history.Info && rng.IntN(2) == 0)
			// Only this producer writes its keys, so its open records are
			// the tail of each.
			for _, k := range wrote {
				for i := len(logs[k]) - 1; i >= 0 && !logs[k][i].visible && !logs[k][i].aborted; i-- {
					if owner(keys[k], logs[k][i].val, done) {
						logs[k][i].visible, logs[k][i].aborted = commit, !commit
					}
				}
			}
			seen := map[int]bool{}
			for _, k := range wrote {
				if !seen[k] {
					seen[k] = true
					leo[k]++ // the marker
				}
			}
			op := history.Op{Process: proc, Type: typ, F: history.FTxn, Mops: done}
			if typ == history.Info {
				op.Error = "REQUEST_TIMED_OUT"
			}
			emit(op)
		case p < o.Producers+o.Consumers:
			emit(history.Op{Process: proc, Type: history.Invoke, F: history.FPoll, Mops: []history.Mop{history.Poll()}})
			emit(history.Op{Process: proc, Type: history.OK, F: history.FPoll, Mops: []history.Mop{poll(p, false)}})
		default:
			emit(history.Op{Process: proc, Type: history.Invoke, F: history.FPollUncommitted, Mops: []history.Mop{history.Poll()}})
			emit(history.Op{Process: proc, Type: history.OK, F: history.FPollUncommitted, Mops: []history.Mop{poll(p, true)}})
		}
	}
	final := history.Process(nprocs)
	pos = append(pos, make([]int, o.Keys))
	emit(history.Op{Process: final, Type: history.Invoke, F: history.FAssign, Keys: keys})
	emit(history.Op{Process: final, Type: history.OK, F: history.FAssign, Keys: keys})
	emit(history.Op{Process: final, Type: history.Invoke, F: history.FPoll, Mops: []history.Mop{history.Poll()}})
	emit(history.Op{Process: final, Type: history.OK, F: history.FPoll, Mops: []history.Mop{poll(nprocs, false)}})
	return ops
}

// owner reports whether value v of key was sent by one of done's send
// micro-ops.
func owner(key string, v int64, done []history.Mop) bool {
	for _, m := range done {
		if m.Kind == history.MopSend && m.Key == key && m.Value == v {
			return true
		}
	}
	return false
}
