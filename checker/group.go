package checker

import (
	"slices"
	"strconv"
	"strings"

	"gregor/history"
)

// groupKey is one consumer group's view of one key.
type groupKey struct {
	group string
	key   string
}

// processed is a record a group finished processing, first time seen.
type processed struct {
	value int64
	call  int32
}

// checkGroups finds committed-skip and redelivered from "process" events and
// ok commits.
//
// redelivered: the same record (key, offset) in two process events of one
// group. committed-skip: a group's highest ok commit of a key is C (the next
// offset to consume), yet an offset below C that some poll read was never
// processed by the group. Group consumers are taken to start from the
// earliest offset (auto.offset.reset=earliest), as the group workload does.
func checkGroups(ix *index, col *collector) {
	done := make(map[groupKey]map[int64]processed)
	type commit struct {
		offset int64
		call   int32
	}
	commits := make(map[groupKey]commit)
	var order []groupKey // first-seen, for deterministic output
	for ci := range ix.calls {
		c := &ix.calls[ci]
		switch {
		case c.f == history.FProcess && c.typ == history.OK:
			for _, kr := range c.op.Records {
				gk := groupKey{c.op.Group, kr.Key}
				m, ok := done[gk]
				if !ok {
					m = make(map[int64]processed)
					done[gk] = m
					if _, seen := commits[gk]; !seen {
						order = append(order, gk)
					}
				}
				for _, r := range kr.Records {
					first, again := m[r.Offset]
					if !again {
						m[r.Offset] = processed{r.Value, int32(ci)}
						continue
					}
					col.add(Redelivered, func() Example {
						return Example{Key: kr.Key, Group: gk.group, Offset: i64(r.Offset), Value: i64(r.Value),
							Ops: []OpRef{refMop(&ix.calls[first.call], kr.Key, r.Offset, first.value), refMop(c, kr.Key, r.Offset, r.Value)}}
					})
				}
			}
		case c.f == history.FCommit && c.typ == history.OK:
			g := c.op.Group
			offsets := c.op.Offsets
			if offsets == nil && c.inv != nil {
				offsets = c.inv.Offsets
				g = c.inv.Group
			}
			for _, ko := range offsets {
				gk := groupKey{g, ko.Key}
				prev, ok := commits[gk]
				if !ok {
					if _, seen := done[gk]; !seen {
						order = append(order, gk)
					}
				}
				if !ok || ko.Offset > prev.offset {
					commits[gk] = commit{ko.Offset, int32(ci)}
				}
			}
		}
	}
	for _, gk := range order {
		cm, ok := commits[gk]
		k := ix.keys[gk.key]
		if !ok || k == nil {
			continue
		}
		m := done[gk]
		hi := min(cm.offset, int64(len(k.slots)))
		var skipped []int64
		for o := int64(0); o < hi; o++ {
			if !k.slots[o].read {
				continue // never shown to exist: a loss, not a skip
			}
			if _, ok := m[o]; !ok {
				skipped = append(skipped, o)
			}
		}
		if len(skipped) == 0 {
			continue
		}
		col.add(CommittedSkip, func() Example {
			c := &ix.calls[cm.call]
			r := ref(c)
			r.Key, r.Offset = gk.key, i64(cm.offset)
			ex := Example{Key: gk.key, Group: gk.group, Offset: i64(cm.offset),
				Note: strconv.Itoa(len(skipped)) + " records below the committed offset never processed", Ops: []OpRef{r}}
			ex.Offsets = slices.Clone(skipped[:min(len(skipped), 16)])
			for _, o := range ex.Offsets {
				ex.Values = append(ex.Values, k.slots[o].value)
			}
			return ex
		})
	}
}

func fmtInts(xs []int64) string {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(x, 10))
	}
	return b.String()
}
