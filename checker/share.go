package checker

import (
	"fmt"
	"slices"

	"gregor/history"
)

// Share groups (KIP-932): each record's fate from the share workload's
// share-fetch and share-ack lines (DESIGN.md sections 4 and 5).
//
// What the history proves, and only that: a share-fetch returning a record
// at delivery count c means the broker acquired it for that consumer at
// some time no later than the poll's return (kgo may have fetched it
// earlier), under a lock that ended no later than that return plus the
// lock duration; a share-ack taken by the broker (ok) means the consumer
// still held the record when the broker processed it, at or after the
// ack's invoke. Delivery counts order a record's acquisitions: a broker
// persists them before any release or acknowledgement it answers, so a
// later acquisition never has a lower count than an earlier one, and one
// with a higher count came later. Timing is the harness's clock against
// the broker's, both monotonic on one machine; shareSlack absorbs their
// rates.
const (
	// ShareDoubleAcquire: a record acquired by a second consumer while the
	// first still held its lock (the first's later acknowledgement was
	// taken).
	ShareDoubleAcquire = "share-double-acquire"
	// ShareAcceptedRedelivered: a record delivered again after an accept
	// the broker took (accept is final).
	ShareAcceptedRedelivered = "share-accepted-redelivered"
	// ShareSkip: an acknowledged, readable record the share group never
	// delivered, although it delivered a later record of the key.
	ShareSkip = "share-skip"
	// ShareOverLimit: a delivery count beyond group.share.delivery.count.limit.
	ShareOverLimit = "share-over-limit"
	// ShareReleaseLost: a record released, or whose lock expired, below
	// the delivery limit, never delivered again although the final drain
	// completed.
	ShareReleaseLost = "share-release-lost"
	// ShareLateAck: an acknowledgement taken after the consumer's lock had
	// certainly expired (KIP-932: the record is no longer the consumer's).
	ShareLateAck = "share-late-ack"
)

// ShareAnomalies are the share checks' anomalies, in table order.
var ShareAnomalies = []string{ShareDoubleAcquire, ShareAcceptedRedelivered, ShareSkip, ShareOverLimit, ShareReleaseLost, ShareLateAck}

// shareSlack is how much later than lock expiry an acknowledgement must be
// sent to count as certainly late, and covers the clocks' rates.
const shareSlackNs = int64(250e6)

type shareRec struct {
	group, key string
	offset     int64
}

// acquisition is one delivery of a record to a process.
type acquisition struct {
	call   int32
	proc   history.Process
	count  int16
	value  int64
	end    int64 // the poll's return
	lockNs int64
	// acks are the acknowledgements of this delivery the broker took
	// (type and the ack's call); unknown: one whose answer never came.
	acks    []shareAckRec
	unknown bool
}

type shareAckRec struct {
	typ  string
	call int32
}

// shareIndex is the share lines of a history.
type shareIndex struct {
	recs    map[shareRec][]*acquisition
	order   []shareRec
	limit   int16
	drained bool
	// lastOp is each share process's last share line: a process alive at
	// or after a delivery may close (crash or the run's end) with the
	// record fetched by its client but not yet returned to it; the close
	// releases it with its count raised unseen.
	lastOp map[history.Process]int64
}

func buildShareIndex(ix *index) (*shareIndex, error) {
	si := &shareIndex{recs: map[shareRec][]*acquisition{}, lastOp: map[history.Process]int64{}}
	// latest[proc][rec] is the process's latest delivery of rec.
	latest := map[history.Process]map[shareRec]*acquisition{}
	for ci := range ix.calls {
		c := &ix.calls[ci]
		if c.f == history.FShareFetch || c.f == history.FShareAck {
			si.lastOp[c.proc] = max(si.lastOp[c.proc], c.endSeen)
		}
		switch {
		case c.f == history.FShareDrain:
			var d history.ShareDrain
			if err := history.ParseShare(c.op, &d); err != nil {
				return nil, err
			}
			si.drained = si.drained || d.Complete
		case c.f == history.FShareFetch && c.typ == history.OK:
			var f history.ShareFetch
			if err := history.ParseShare(c.op, &f); err != nil {
				return nil, err
			}
			si.limit = max(si.limit, f.Limit)
			for _, r := range f.Acquired {
				k := shareRec{c.op.Group, r.Key, r.Offset}
				a := &acquisition{call: int32(ci), proc: c.proc, count: r.Count, value: r.Value, end: c.end, lockNs: f.LockMs * 1e6}
				if _, seen := si.recs[k]; !seen {
					si.order = append(si.order, k)
				}
				si.recs[k] = append(si.recs[k], a)
				if latest[c.proc] == nil {
					latest[c.proc] = map[shareRec]*acquisition{}
				}
				latest[c.proc][k] = a
			}
		case c.f == history.FShareAck && c.typ != history.Fail:
			if err := si.addAcks(c, int32(ci), latest[c.proc]); err != nil {
				return nil, err
			}
		}
	}
	return si, nil
}

// addAcks attaches an ack line's outcomes to the deliveries they answer.
func (si *shareIndex) addAcks(c *call, ci int32, latest map[shareRec]*acquisition) error {
	var taken, sent history.ShareAck
	if c.typ == history.OK {
		if err := history.ParseShare(c.op, &taken); err != nil {
			return err
		}
	}
	if c.inv != nil {
		if err := history.ParseShare(c.inv, &sent); err != nil {
			return err
		}
	}
	unknown := taken.Unknown
	if c.typ == history.Info {
		unknown = sent.Acks
	}
	for _, it := range taken.Acks {
		if a := latest[shareRec{c.op.Group, it.Key, it.Offset}]; a != nil {
			a.acks = append(a.acks, shareAckRec{it.Type, ci})
		}
	}
	for _, it := range unknown {
		if a := latest[shareRec{c.op.Group, it.Key, it.Offset}]; a != nil {
			a.unknown = true
		}
	}
	return nil
}

// checkShare finds the share anomalies.
func checkShare(ix *index, col *collector) error {
	si, err := buildShareIndex(ix)
	if err != nil || len(si.recs) == 0 {
		return err
	}
	for _, k := range si.order {
		as := si.recs[k]
		slices.SortStableFunc(as, func(a, b *acquisition) int { return int(a.count) - int(b.count) })
		si.checkRecord(ix, col, k, as)
	}
	si.checkSkips(ix, col)
	return nil
}

func (si *shareIndex) checkRecord(ix *index, col *collector, k shareRec, as []*acquisition) {
	ex := func(note string, calls ...int32) Example {
		e := Example{Key: k.key, Group: k.group, Offset: i64(k.offset), Note: note}
		for _, c := range calls {
			e.Ops = append(e.Ops, refMop(&ix.calls[c], k.key, k.offset, as[0].value))
		}
		return e
	}
	for _, x := range as {
		if si.limit > 0 && x.count > si.limit {
			col.add(ShareOverLimit, func() Example {
				return ex(fmt.Sprintf("delivered at count %d, past the delivery count limit %d", x.count, si.limit), x.call)
			})
		}
		for _, ack := range x.acks {
			if sent := ix.calls[ack.call].start; sent > x.end+x.lockNs+shareSlackNs && !si.reacquired(as, x) {
				col.add(ShareLateAck, func() Example {
					return ex(fmt.Sprintf("%s taken though sent %d ms after the poll returned the record, past its %d ms lock", ack.typ, (sent-x.end)/1e6, x.lockNs/1e6), x.call, ack.call)
				})
			}
		}
		for _, y := range as {
			if later(ix, x, y) {
				si.checkLater(ix, col, ex, x, y)
			}
		}
	}
	si.checkRedelivered(col, ex, as)
}

// later reports whether y is certainly a later delivery of the record
// than x: its delivery count is higher (the order one leader acquires in)
// and the times do not say otherwise. Where they do (x's poll was sent
// after y's returned), the pair's order is unknown and neither is checked
// against the other: across a share-partition leader's failover the new
// leader starts from the durable state, which need not hold the last
// acquisitions (an acquisition is not written, and a write may fail), so a
// later delivery can carry a lower count (KIP-932: the delivery count
// "cannot be relied upon to be precise in all situations"); and a client
// returns records it fetched before, so a poll can hand over a record
// acquired at a lower count long after another delivery at a higher one.
func later(ix *index, x, y *acquisition) bool {
	return y.count > x.count && ix.calls[x.call].start <= y.end
}

// reacquired reports whether x's process got the record again later (a
// higher count): its client may have fetched it again while the consumer
// stalled, and a late acknowledgement then answers that delivery, which a
// correct broker takes (an acknowledgement names a member and an offset).
func (si *shareIndex) reacquired(as []*acquisition, x *acquisition) bool {
	for _, y := range as {
		if y.proc == x.proc && y.count > x.count {
			return true
		}
	}
	return false
}

// checkLater compares a delivery x with a later one y (higher count).
//
// An accept of x taken, then y to the same process, is no anomaly by
// itself: the client fetches ahead, so a record whose lock lapsed while it
// waited in the client's buffer (the consumer stalled) can be acquired
// again by the same client, at a higher count, before the consumer
// acknowledges x; the broker takes that acknowledgement for the new
// acquisition (an acknowledgement names a member and offsets, not a
// delivery: Kafka's SharePartition.acknowledge checks the member and the
// acquired state only), and the poll returns y after (issue 30's false
// alarm, 2 of 120 runs, seen in the node logs' share-partition traces:
// the accept met the record "held" at the higher count). What proves the
// accept was not final is y's own acknowledgement taken: the record was
// acquired again after it.
func (si *shareIndex) checkLater(ix *index, col *collector, ex func(string, ...int32) Example, x, y *acquisition) {
	for _, ack := range x.acks {
		sent := ix.calls[ack.call].start
		switch {
		case sent > y.end && y.proc == x.proc:
			// The ack may answer y, the process's own later delivery.
		case sent > y.end:
			col.add(ShareDoubleAcquire, func() Example {
				return ex(fmt.Sprintf("delivered to process %v (count %d) while process %v still held it: its %s, sent after, was taken", y.proc, y.count, x.proc, ack.typ), x.call, y.call, ack.call)
			})
		case y.proc == x.proc && len(y.acks) == 0:
			// The accept may have answered y, acquired ahead by the client.
		case ack.typ == history.ShareAccept:
			col.add(ShareAcceptedRedelivered, func() Example {
				calls := []int32{x.call, ack.call, y.call}
				note := fmt.Sprintf("accepted by process %v, then delivered again (count %d)", x.proc, y.count)
				if y.proc == x.proc && len(y.acks) > 0 {
					note += fmt.Sprintf(" and its %s of that delivery taken", y.acks[0].typ)
					calls = append(calls, y.acks[0].call)
				}
				return ex(note, calls...)
			})
		}
	}
}

// checkRedelivered: the last delivery of a record that was released, or
// whose lock lapsed, below the limit must be followed by another once the
// final drain completed. The count may rise unseen once per process alive
// after the delivery (a consumer closing with the record fetched but not
// polled releases it), so only a count below the limit by more than those
// is owed a delivery.
func (si *shareIndex) checkRedelivered(col *collector, ex func(string, ...int32) Example, as []*acquisition) {
	if !si.drained || si.limit == 0 {
		return
	}
	last := as[len(as)-1]
	if last.unknown {
		return
	}
	// Any delivery's accept or reject ends the record: the highest count
	// need not be the last delivery (later).
	for _, x := range as {
		for _, a := range x.acks {
			if a.typ == history.ShareAccept || a.typ == history.ShareReject {
				return
			}
		}
	}
	unseen := 0
	for _, t := range si.lastOp {
		if t >= last.end {
			unseen++
		}
	}
	if int(last.count)+unseen >= int(si.limit) {
		return // archived at the limit, as it should be
	}
	col.add(ShareReleaseLost, func() Example {
		how := "its lock expired"
		if len(last.acks) > 0 {
			how = "released"
		}
		return ex(fmt.Sprintf("%s at delivery count %d (limit %d), never delivered again though the final drain completed", how, last.count, si.limit), last.call)
	})
}

// checkSkips: an acknowledged record some poll read (the final read) that
// the group never delivered, while it delivered a later offset of the key.
func (si *shareIndex) checkSkips(ix *index, col *collector) {
	groups := map[string]bool{}
	highest := map[shareRec]int64{} // (group, key, -1) -> highest delivered offset
	firstCall := map[shareRec]int32{}
	for _, k := range si.order {
		groups[k.group] = true
		gk := shareRec{k.group, k.key, -1}
		if o, ok := highest[gk]; !ok || k.offset > o {
			highest[gk], firstCall[gk] = k.offset, si.recs[k][0].call
		}
	}
	for _, name := range ix.order {
		key := ix.keys[name]
		for g := range groups {
			top, ok := highest[shareRec{g, name, -1}]
			if !ok {
				continue
			}
			for i := range key.sends {
				s := &key.sends[i]
				if ix.calls[s.call].typ != history.OK || s.ack < 0 || !s.read || s.ack >= top {
					continue
				}
				if _, got := si.recs[shareRec{g, name, s.ack}]; got {
					continue
				}
				col.add(ShareSkip, func() Example {
					return Example{Key: name, Group: g, Offset: i64(s.ack), Value: i64(s.value),
						Note: fmt.Sprintf("never delivered to the share group, which delivered offset %d", top),
						Ops:  []OpRef{refMop(&ix.calls[s.call], name, s.ack, s.value), refMop(&ix.calls[firstCall[shareRec{g, name, -1}]], name, top, -1)}}
				})
			}
		}
	}
}
