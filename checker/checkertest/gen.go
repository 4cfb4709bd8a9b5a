// Package checkertest generates histories of a correct replicated log, for
// tests: a queue of sends and polls (Generate), the txn workload's
// transactions (GenerateTxn), and the edits that plant an anomaly in one
// (RemoveFromReads). The checker's tests and benchmarks, and the tests of
// the history codec and the reports, check them; only tests import it, the
// checker itself never does.
package checkertest

import (
	"fmt"
	"math/rand/v2"

	"gregor/history"
)

// GenOptions shape a generated history.
type GenOptions struct {
	Seed      uint64
	Ops       int // history lines before the final reads (approximate, >= 10)
	Keys      int // partitions, named "t/0", "t/1", ...
	Producers int // processes that send
	Consumers int // processes that assign every key and poll
	// FailRate and InfoRate are the shares of sends that end fail (never
	// applied) and info (applied with probability one half, unseen by the
	// producer). These are the only faults: they drop unacknowledged writes.
	FailRate, InfoRate float64
	// NemesisEvery inserts a nemesis kill/start pair every so many lines
	// (0: none); they are decoration for availability, the log stays correct.
	NemesisEvery int
	// MaxPoll bounds the records a poll returns per key.
	MaxPoll int
}

func (o *GenOptions) defaults() {
	o.Ops = max(o.Ops, 10)
	o.Keys = max(o.Keys, 1)
	o.Producers = max(o.Producers, 1)
	o.Consumers = max(o.Consumers, 1)
	if o.MaxPoll <= 0 {
		o.MaxPoll = 8
	}
}

// Generate simulates a correct replicated log (one in-memory log per key,
// appends take effect atomically within the send's interval, polls read
// contiguous runs from each consumer's position) driven by concurrent
// producers and consumers, and returns its history. Every acknowledged write
// is kept and read by the final reads, so the checker must find no anomaly.
// The same seed gives the same history.
func Generate(o GenOptions) []history.Op {
	o.defaults()
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	keys := make([]string, o.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("t/%d", i)
	}
	logs := make([][]int64, o.Keys) // logs[k][offset] = value
	nextValue := make([]int64, o.Keys)
	type proc struct {
		busy   bool
		inv    history.Op
		key    int
		value  int64
		fate   history.Type
		pos    []int64 // consumer position per key
		consum bool
	}
	nprocs := o.Producers + o.Consumers
	procs := make([]proc, nprocs)
	var ops []history.Op
	var now int64
	emit := func(op history.Op) {
		op.Index = int64(len(ops))
		op.Time = now
		ops = append(ops, op)
	}
	for p := o.Producers; p < nprocs; p++ {
		procs[p].consum = true
		procs[p].pos = make([]int64, o.Keys)
		emit(history.Op{Process: history.Process(p), Type: history.OK, F: history.FAssign, Keys: keys})
	}
	for len(ops) < o.Ops {
		now += 1 + rng.Int64N(1000)
		if o.NemesisEvery > 0 && len(ops)%o.NemesisEvery == 0 {
			emit(history.Op{Process: history.Nemesis, Type: history.Info, F: history.NemesisKill, Raw: []byte(`{"nodes":[1]}`)})
			now++
			emit(history.Op{Process: history.Nemesis, Type: history.Info, F: history.VerbStart, Raw: []byte(`{"nodes":[1]}`)})
			continue
		}
		p := rng.IntN(nprocs)
		pr := &procs[p]
		if !pr.busy {
			pr.busy = true
			if pr.consum {
				pr.inv = history.Op{Process: history.Process(p), Type: history.Invoke, F: history.FPoll, Mops: []history.Mop{history.Poll()}}
			} else {
				k := rng.IntN(o.Keys)
				v := nextValue[k]
				nextValue[k]++
				pr.key, pr.value = k, v
				pr.fate = history.OK
				switch x := rng.Float64(); {
				case x < o.FailRate:
					pr.fate = history.Fail
				case x < o.FailRate+o.InfoRate:
					pr.fate = history.Info
				}
				pr.inv = history.Op{Process: history.Process(p), Type: history.Invoke, F: history.FSend, Mops: []history.Mop{history.Send(keys[k], v)}}
			}
			emit(pr.inv)
			continue
		}
		pr.busy = false
		if pr.consum {
			var krs []history.KeyRecords
			for k := range keys {
				avail := int64(len(logs[k])) - pr.pos[k]
				if avail <= 0 || rng.IntN(2) == 0 {
					continue
				}
				n := min(avail, 1+rng.Int64N(int64(o.MaxPoll)))
				recs := make([]history.Record, n)
				for i := range recs {
					off := pr.pos[k] + int64(i)
					recs[i] = history.Record{Offset: off, Value: logs[k][off]}
				}
				pr.pos[k] += n
				krs = append(krs, history.KeyRecords{Key: keys[k], Records: recs})
			}
			if krs == nil {
				krs = []history.KeyRecords{}
			}
			emit(history.Op{Process: history.Process(p), Type: history.OK, F: history.FPoll,
				Mops: []history.Mop{{Kind: history.MopPoll, Polls: krs}}})
			continue
		}
		m := history.Send(keys[pr.key], pr.value)
		switch pr.fate {
		case history.OK:
			m.Offset = int64(len(logs[pr.key]))
			logs[pr.key] = append(logs[pr.key], pr.value)
			emit(history.Op{Process: history.Process(p), Type: history.OK, F: history.FSend, Mops: []history.Mop{m}})
		case history.Fail:
			emit(history.Op{Process: history.Process(p), Type: history.Fail, F: history.FSend, Mops: []history.Mop{m}, Error: "NOT_ENOUGH_REPLICAS"})
		default:
			if rng.IntN(2) == 0 {
				logs[pr.key] = append(logs[pr.key], pr.value)
			}
			emit(history.Op{Process: history.Process(p), Type: history.Info, F: history.FSend, Mops: []history.Mop{m}, Error: "REQUEST_TIMED_OUT"})
		}
	}
	// Open operations end indeterminate (the harness stopped waiting), as a
	// real run's would. A pending send then may or may not take effect.
	for p := range procs {
		pr := &procs[p]
		if !pr.busy {
			continue
		}
		now++
		op := pr.inv
		op.Type = history.Info
		if !pr.consum && rng.IntN(2) == 0 {
			logs[pr.key] = append(logs[pr.key], pr.value)
		}
		emit(op)
	}
	// Final reads: a fresh process assigns every key and reads from offset 0.
	final := history.Process(nprocs)
	now++
	emit(history.Op{Process: final, Type: history.Invoke, F: history.FAssign, Keys: keys})
	now++
	emit(history.Op{Process: final, Type: history.OK, F: history.FAssign, Keys: keys})
	const chunk = 1024
	for start := 0; ; start += chunk {
		var krs []history.KeyRecords
		for k := range keys {
			if start >= len(logs[k]) {
				continue
			}
			end := min(start+chunk, len(logs[k]))
			recs := make([]history.Record, 0, end-start)
			for off := start; off < end; off++ {
				recs = append(recs, history.Record{Offset: int64(off), Value: logs[k][off]})
			}
			krs = append(krs, history.KeyRecords{Key: keys[k], Records: recs})
		}
		if krs == nil {
			break
		}
		now++
		emit(history.Op{Process: final, Type: history.Invoke, F: history.FPoll, Mops: []history.Mop{history.Poll()}})
		now++
		emit(history.Op{Process: final, Type: history.OK, F: history.FPoll, Mops: []history.Mop{{Kind: history.MopPoll, Polls: krs}}})
	}
	return ops
}

// AckedSends lists (key, value) of every ok send in ops.
func AckedSends(ops []history.Op) [][2]any {
	var out [][2]any
	for i := range ops {
		if ops[i].Type != history.OK || ops[i].F != history.FSend {
			continue
		}
		for _, m := range ops[i].Mops {
			if m.Kind == history.MopSend {
				out = append(out, [2]any{m.Key, m.Value})
			}
		}
	}
	return out
}

// RemoveFromReads returns a copy of ops in which no poll returns the record
// holding value on key: as if the log had lost it. ops is not modified.
func RemoveFromReads(ops []history.Op, key string, value int64) []history.Op {
	out := make([]history.Op, len(ops))
	copy(out, ops)
	for i := range out {
		op := &out[i]
		if op.Type != history.OK || op.F != history.FPoll {
			continue
		}
		touched := false
		for _, m := range op.Mops {
			for _, kr := range m.Polls {
				if kr.Key != key {
					continue
				}
				for _, r := range kr.Records {
					touched = touched || r.Value == value
				}
			}
		}
		if !touched {
			continue
		}
		mops := make([]history.Mop, len(op.Mops))
		for mi, m := range op.Mops {
			mops[mi] = m
			if m.Polls == nil {
				continue
			}
			krs := make([]history.KeyRecords, 0, len(m.Polls))
			for _, kr := range m.Polls {
				if kr.Key == key {
					var recs []history.Record
					for _, r := range kr.Records {
						if r.Value != value {
							recs = append(recs, r)
						}
					}
					if recs == nil {
						recs = []history.Record{}
					}
					kr = history.KeyRecords{Key: kr.Key, Records: recs}
				}
				krs = append(krs, kr)
			}
			mops[mi].Polls = krs
		}
		op.Mops = mops
	}
	return out
}
