package checker

import (
	"encoding/json"
	"fmt"
	"strings"

	"gregor/history"
)

// Exactly-once pipeline checks (the eos workload, DESIGN.md section 5):
// read from the history's eos-offsets line (the group's committed offset per
// input key, and the topics) and the final read of the output. Each output
// value maps back to its input value (history.EOSOutScale); the output key
// of input key "in/p" is "out/p".
//
//   - eos-missing: an input record below the committed offset of its key is
//     not in the output: the group moved past it without its output.
//   - eos-duplicate: an input record is in the output more than once.
//   - eos-reorder: the output of a key holds two input records in the
//     opposite of their input order.
//   - eos-offset-mismatch: an input record at or past the committed offset
//     is in the output: the output holds what the group has not committed,
//     so it will be processed again.
func checkEOS(ix *index, col *collector) []string {
	var eo *history.EOSOffsets
	var eoCall *call
	for ci := range ix.calls {
		c := &ix.calls[ci]
		if c.f != history.FEOSOffsets || c.typ != history.OK {
			continue
		}
		var v history.EOSOffsets
		if err := json.Unmarshal(c.op.Raw, &v); err != nil {
			return []string{fmt.Sprintf("op %d: eos-offsets unreadable: %v", c.cindex, err)}
		}
		eo, eoCall = &v, c
	}
	if eo == nil {
		return nil
	}
	var warnings []string
	for _, inName := range ix.order {
		rest, ok := strings.CutPrefix(inName, eo.Input+"/")
		if !ok {
			continue
		}
		in := ix.keys[inName]
		committed, ok := eo.Offsets[inName]
		if !ok {
			committed = 0 // the group never committed this key
		}
		outName := eo.Output + "/" + rest
		out := ix.keys[outName]
		// outputs[v]: the output offsets holding input value v, as read.
		outputs := map[int64][]int64{}
		type outRec struct{ off, in int64 }
		var order []outRec
		if out != nil {
			for o := range out.slots {
				s := &out.slots[o]
				if !s.read {
					continue
				}
				v := s.last / history.EOSOutScale
				outputs[v] = append(outputs[v], int64(o))
				if len(outputs[v]) == 1 {
					order = append(order, outRec{int64(o), v})
				}
			}
		}
		inOffset := map[int64]int64{}
		for o := range in.slots {
			s := &in.slots[o]
			if s.first < 0 {
				continue
			}
			v := s.value
			if s.read {
				v = s.last
			}
			inOffset[v] = int64(o)
			n := len(outputs[v])
			first := &ix.calls[s.first]
			switch {
			case int64(o) < committed && n == 0:
				col.add(EOSMissing, func() Example {
					return Example{Key: inName, Offset: i64(int64(o)), Value: i64(v),
						Note: fmt.Sprintf("committed offset %d of group %s passed it; %s never holds it", committed, eo.Group, outName),
						Ops:  []OpRef{refMop(first, inName, int64(o), v), ref(eoCall)}}
				})
			case n > 1:
				col.add(EOSDuplicate, func() Example {
					return Example{Key: outName, Value: i64(v), Offsets: outputs[v],
						Note: fmt.Sprintf("input %s offset %d is in %s %d times", inName, o, outName, n),
						Ops:  []OpRef{refMop(first, inName, int64(o), v)}}
				})
			case int64(o) >= committed && n > 0:
				col.add(EOSOffsetMismatch, func() Example {
					return Example{Key: inName, Offset: i64(int64(o)), Value: i64(v), Offsets: outputs[v],
						Note: fmt.Sprintf("in %s, but group %s's committed offset %d has not passed it", outName, eo.Group, committed),
						Ops:  []OpRef{refMop(first, inName, int64(o), v), ref(eoCall)}}
				})
			}
		}
		for i := 1; i < len(order); i++ {
			a, b := order[i-1], order[i]
			ia, oka := inOffset[a.in]
			ib, okb := inOffset[b.in]
			if oka && okb && ib < ia {
				col.add(EOSReorder, func() Example {
					sa, sb := &out.slots[a.off], &out.slots[b.off]
					return Example{Key: outName, Offsets: []int64{a.off, b.off}, Values: []int64{a.in, b.in},
						Note: fmt.Sprintf("%s offsets %d, %d hold inputs from %s offsets %d, %d", outName, a.off, b.off, inName, ia, ib),
						Ops:  []OpRef{refMop(&ix.calls[sa.first], outName, a.off, sa.last), refMop(&ix.calls[sb.first], outName, b.off, sb.last)}}
				})
			}
		}
	}
	return warnings
}
