package checker

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gregor/history"
)

// UnderMinISRAck: an acks=all send acknowledged while its partition's ISR
// was below min.insync.replicas. It is not one of DESIGN.md section 5's
// original names; it extends the table (min ISR is the setting users rely
// on for durability, and a broker that ignores it loses data only under a
// second fault, so the loss checks alone rarely see it).
const UnderMinISRAck = "under-min-isr-ack"

// minISRWindow bounds the time between the two metadata samples that
// bracket an acknowledgement. Within it an ISR cannot grow back to min ISR
// and shrink again: a member leaves the ISR after replica.lag.time.max.ms
// without catching up, or when its session (broker.session.timeout.ms)
// lapses, both seconds in every configuration the harness runs (it checks
// the lag: see checkMinISR). A controlled shutdown (the stop nemesis) can
// remove a member at once; a member would have to rejoin and be stopped
// again within the window, which the stop nemesis's intervals rule out.
const minISRWindow = time.Second

// leaderView is a partition as its own leader reported it in one sample:
// what that leader's min ISR check reads (both come from its metadata).
type leaderView struct {
	t             int64
	leader, epoch int32
	isr           []int32
}

// checkMinISR finds UnderMinISRAck from metadata.jsonl samples: an ok
// acks=all send whose partition's leader, in the last sample it answered
// before the send's invoke and the first after its completion (at most
// minISRWindow apart, same leader and leader epoch, every leader sample
// between them agreeing), reported an ISR smaller than min ISR. Only the
// leader's own answers count: another broker's view may be stale.
func checkMinISR(ix *index, col *collector, cfg *history.Config, samples []history.MetadataSample) {
	if cfg == nil || cfg.Acks != "all" || cfg.MinISR < 2 || len(samples) == 0 {
		return
	}
	if lag := time.Duration(cfg.ReplicaLagMax); lag > 0 && lag < minISRWindow {
		return // an ISR could shrink and grow within the window: no proof
	}
	views := map[int32][]leaderView{}
	for _, s := range samples {
		if s.Error != "" || s.Broker < 0 {
			continue
		}
		for _, p := range s.Partitions {
			if p.Error == "" && p.Leader == s.Broker {
				views[p.Partition] = append(views[p.Partition], leaderView{s.Time, p.Leader, p.LeaderEpoch, p.ISR})
			}
		}
	}
	for _, vs := range views {
		slices.SortStableFunc(vs, func(a, b leaderView) int { return int(a.t - b.t) })
	}
	for _, name := range ix.order {
		part, ok := partitionOf(name)
		vs := views[part]
		if !ok || len(vs) < 2 {
			continue
		}
		k := ix.keys[name]
		for si := range k.sends {
			s := &k.sends[si]
			c := &ix.calls[s.call]
			if c.typ != history.OK {
				continue
			}
			i := sort.Search(len(vs), func(i int) bool { return vs[i].t > c.start }) - 1
			j := sort.Search(len(vs), func(j int) bool { return vs[j].t >= c.end })
			if i < 0 || j >= len(vs) || time.Duration(vs[j].t-vs[i].t) > minISRWindow {
				continue
			}
			under := true
			for m := i; m <= j && under; m++ {
				under = vs[m].leader == vs[i].leader && vs[m].epoch == vs[i].epoch && len(vs[m].isr) < cfg.MinISR
			}
			if !under {
				continue
			}
			a, b := vs[i], vs[j]
			// Proven by the sample after the acknowledgement.
			col.addAt(UnderMinISRAck, max(c.endSeen, b.t), func() Example {
				ex := Example{Key: name, Value: i64(s.value), Ops: []OpRef{refMop(c, name, s.ack, s.value)},
					Note: fmt.Sprintf("leader %d (epoch %d) reported ISR %v at %.3fs and %v at %.3fs, before and after this acks=all send; min ISR is %d",
						a.leader, a.epoch, a.isr, float64(a.t)/1e9, b.isr, float64(b.t)/1e9, cfg.MinISR)}
				if s.ack >= 0 {
					ex.Offset = i64(s.ack)
				}
				return ex
			})
		}
	}
}

// partitionOf parses the partition of a "topic/partition" key.
func partitionOf(key string) (int32, bool) {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return 0, false
	}
	p, err := strconv.ParseInt(key[i+1:], 10, 32)
	return int32(p), err == nil && p >= 0
}
