package share

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/replica"
	"gregor/cluster/storage"
)

// inflight is one record between SPSO and SPEO (Kafka's InFlightState).
type inflight struct {
	state int8
	count int16 // deliveries so far
	// member and lock are the acquisition holding the record (state
	// acquired); lock identifies it for its timer.
	member string
	lock   uint64
	// lapsed is the member whose lock on the record expired last; only the
	// planted bug AckAfterLockExpiry reads it.
	lapsed string
}

// SharePartition is one group's view of one topic partition on the
// partition's leader (Kafka's SharePartition): the in-flight records from
// the share-partition start offset (SPSO, start) to its end offset (SPEO,
// end), their states, delivery counts and locks. Offsets in [start, end)
// without an entry hold no deliverable record (a transaction marker) and
// count as archived.
type SharePartition struct {
	m        *Manager
	key      StateKey
	topic    string
	p        *replica.Partition
	leaderEp int32
	// mu is a channel lock: it is held across the state write to the share
	// coordinator, which blocks on the network.
	mu chan struct{}
	// Guarded by mu:
	loaded     bool
	stale      bool // fenced or no longer leader: the manager drops it
	stateEpoch int32
	start, end int64
	records    map[int64]*inflight
	nextLock   uint64
	// avail is closed (and replaced) when records become available again,
	// waking long polls.
	avail chan struct{}
}

// lock takes sp.mu, or fails when ctx ends first.
func (sp *SharePartition) lock(ctx context.Context) bool {
	select {
	case sp.mu <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (sp *SharePartition) unlock() { <-sp.mu }

// trace is the node log's debug line for a share-partition state change:
// which member acquired, acknowledged or lost which offsets, at which
// delivery counts, so that a history's anomaly can be laid against what
// the broker did (issue 30). Free when the log is above debug.
func (sp *SharePartition) trace(msg string, args ...any) {
	l := sp.m.cfg.Logger
	if !l.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	l.Debug("share partition: "+msg, append([]any{"group", sp.key.Group, "topic", sp.topic, "partition", sp.key.Partition, "leader_epoch", sp.leaderEp}, args...)...)
}

// runsText spells acquired runs as first-last@count.
func runsText(runs []Acquired) string {
	var b strings.Builder
	for i, r := range runs {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d-%d@%d", r.First, r.Last, r.Count)
	}
	return b.String()
}

// leading reports whether this broker still leads the partition in the
// epoch the share partition was loaded in.
func (sp *SharePartition) leading() bool {
	st := sp.p.State()
	return st.Leader == sp.m.env.NodeID() && st.LeaderEpoch == sp.leaderEp
}

// load reads the durable state from the share coordinator, initializing it
// from share.auto.offset.reset when there is none (Kafka's
// SharePartition.maybeInitialize). Acquired records come back available:
// their locks died with the old leader, which ends them as an elapsed lock
// does (KIP-932's state machine): one already delivered DeliveryLimit
// times is archived, never delivered past the limit. Caller holds mu.
func (sp *SharePartition) load(ctx context.Context) *kerr.Error {
	st, e := sp.m.env.ReadState(ctx, sp.key, sp.leaderEp)
	if e != nil {
		return e
	}
	logStart, hw, _ := sp.p.Offsets()
	sp.records = map[int64]*inflight{}
	if st.StartOffset < 0 {
		start := hw
		if sp.m.cfg.settings(sp.m.env.GroupConfig(sp.key.Group)).earliest {
			start = logStart
		}
		init := PartitionState{StateEpoch: st.StateEpoch, LeaderEpoch: sp.leaderEp, StartOffset: start}
		if e := sp.m.env.WriteState(ctx, sp.key, init); e != nil {
			return e
		}
		st = init
	}
	sp.stateEpoch, sp.start, sp.end = st.StateEpoch, st.StartOffset, st.StartOffset
	for _, b := range st.Batches {
		for o := b.First; o <= b.Last; o++ {
			r := &inflight{state: b.State, count: b.Count}
			if r.state == stateAcquired || r.state == stateAvailable {
				sp.release(r)
			}
			sp.records[o] = r
		}
		sp.end = max(sp.end, b.Last+1)
	}
	sp.trimBelow(logStart)
	sp.loaded = true
	sp.trace("loaded", "state_epoch", sp.stateEpoch, "spso", sp.start, "speo", sp.end, "batches", len(st.Batches))
	return nil
}

// trimBelow drops what the log no longer holds (retention, DeleteRecords):
// the SPSO moves to the log start, as Kafka's does.
func (sp *SharePartition) trimBelow(logStart int64) {
	if sp.start >= logStart {
		return
	}
	for o := range sp.records {
		if o < logStart {
			delete(sp.records, o)
		}
	}
	sp.start, sp.end = logStart, max(sp.end, logStart)
}

// advance moves the SPSO past terminal records (acknowledged, archived,
// markers), dropping them (SharePartition.maybeUpdateCachedStateAndOffsets).
func (sp *SharePartition) advance() {
	for sp.start < sp.end {
		r := sp.records[sp.start]
		if r != nil && r.state != stateAcknowledged && r.state != stateArchived {
			return
		}
		delete(sp.records, sp.start)
		sp.start++
	}
}

// snapshot is the durable state as it stands (acquired persisted as
// available), with runs of equal state and count merged.
func (sp *SharePartition) snapshot() PartitionState {
	st := PartitionState{StateEpoch: sp.stateEpoch, LeaderEpoch: sp.leaderEp, StartOffset: sp.start}
	for o := sp.start; o < sp.end; o++ {
		state, count := stateArchived, int16(0)
		if r := sp.records[o]; r != nil {
			state, count = r.state, r.count
			if state == stateAcquired {
				state = stateAvailable
			}
		}
		if n := len(st.Batches); n > 0 && st.Batches[n-1].Last == o-1 && st.Batches[n-1].State == state && st.Batches[n-1].Count == count {
			st.Batches[n-1].Last = o
			continue
		}
		st.Batches = append(st.Batches, StateBatch{First: o, Last: o, State: state, Count: count})
	}
	return st
}

// persist writes the state to the share coordinator and waits for it
// (acks=all on __share_group_state). A fenced write makes the share
// partition stale: a newer leader or an initialization owns the state.
func (sp *SharePartition) persist(ctx context.Context) *kerr.Error {
	ctx, cancel := context.WithTimeout(ctx, writeBound)
	defer cancel()
	e := sp.m.env.WriteState(ctx, sp.key, sp.snapshot())
	if e == kerr.FencedStateEpoch || e == kerr.FencedLeaderEpoch {
		sp.stale = true
	}
	return e
}

// writeBound bounds one state write (a retry is the client's).
const writeBound = 10 * time.Second

// notifyAvailable wakes long polls waiting for released records. Caller
// holds mu.
func (sp *SharePartition) notifyAvailable() {
	close(sp.avail)
	sp.avail = make(chan struct{})
}

// release makes an acquired record available again, or archives it once
// it has been delivered DeliveryLimit times (KIP-932's delivery count
// limit).
func (sp *SharePartition) release(r *inflight) {
	r.state, r.member, r.lock = stateAvailable, "", 0
	if r.count >= sp.m.cfg.DeliveryLimit {
		r.state = stateArchived
	}
}

// Acquired is a run of acquired offsets with one delivery count.
type Acquired struct {
	First, Last int64
	Count       int16
}

// acquire hands member up to max records under a lock of d: available
// in-flight records first (redeliveries), then new ones from the log up to
// the high watermark, whole batches at a time and no more than
// MaxRecordLocks in flight. It returns the runs and the batches holding
// them. Caller holds mu.
func (sp *SharePartition) acquire(member string, max int, d time.Duration) ([]Acquired, []byte, *kerr.Error) {
	logStart, hw, _ := sp.p.Offsets()
	sp.trimBelow(logStart)
	sp.advance()
	var got []int64
	for _, o := range slices.Sorted(maps.Keys(sp.records)) {
		if len(got) >= max {
			break
		}
		if sp.records[o].state == stateAvailable {
			got = append(got, o)
		}
	}
	fresh, e := sp.scanNew(max-len(got), hw)
	if e != nil {
		return nil, nil, e
	}
	got = append(got, fresh...)
	if len(got) == 0 {
		return nil, nil, nil
	}
	sp.nextLock++
	lock := sp.nextLock
	var runs []Acquired
	for _, o := range got {
		r := sp.records[o]
		r.state, r.member, r.lock = stateAcquired, member, lock
		r.count++
		if n := len(runs); n > 0 && runs[n-1].Last == o-1 && runs[n-1].Count == r.count {
			runs[n-1].Last = o
			continue
		}
		runs = append(runs, Acquired{First: o, Last: o, Count: r.count})
	}
	sp.m.cfg.Clock.AfterFunc(d, func() { sp.expire(lock) })
	sp.trace("acquired", "member", member, "lock", lock, "runs", runsText(runs))
	raw, e := sp.batchesFor(got)
	return runs, raw, e
}

// scanNew takes new records from the SPEO: the offsets of whole data
// batches below hw, skipping control batches. Caller holds mu.
func (sp *SharePartition) scanNew(want int, hw int64) ([]int64, *kerr.Error) {
	var got []int64
	// Bound: each read advances end by at least one batch, or stops.
	for want > 0 && sp.end < hw && int(sp.end-sp.start) < sp.m.cfg.MaxRecordLocks {
		res := sp.p.ReadForConsumer(sp.end, readBytes, sp.leaderEp, replica.ReadUncommitted)
		if res.Err != nil {
			return got, res.Err
		}
		if len(res.Records) == 0 {
			break
		}
		before := sp.end
		err := storage.ForEachBatch(res.Records, func(h storage.BatchHeader, _ []byte) error {
			if h.NextOffset() <= sp.end || want <= 0 || int(sp.end-sp.start) >= sp.m.cfg.MaxRecordLocks {
				return nil
			}
			if !h.IsControl() {
				for o := max(h.BaseOffset, sp.end); o <= h.LastOffset(); o++ {
					sp.records[o] = &inflight{state: stateAvailable}
					got = append(got, o)
				}
				want -= int(h.NextOffset() - max(h.BaseOffset, sp.end))
			}
			sp.end = h.NextOffset()
			return nil
		})
		if err != nil {
			return got, kerr.CorruptMessage
		}
		if sp.end == before {
			break
		}
	}
	return got, nil
}

// readBytes bounds one log read of a share fetch.
const readBytes = 1 << 20

// batchesFor returns the log's batches that hold the offsets, in offset
// order, each once: the client keeps only the acquired records of them.
func (sp *SharePartition) batchesFor(offs []int64) ([]byte, *kerr.Error) {
	offs = slices.Clone(offs)
	slices.Sort(offs)
	var out []byte
	i := 0
	// Bound: each read takes at least one batch, holding at least one offset.
	for reads := 0; i < len(offs) && reads <= len(offs); reads++ {
		res := sp.p.ReadForConsumer(offs[i], readBytes, sp.leaderEp, replica.ReadUncommitted)
		if res.Err != nil {
			return out, res.Err
		}
		took := false
		_ = storage.ForEachBatch(res.Records, func(h storage.BatchHeader, b []byte) error {
			for i < len(offs) && offs[i] < h.BaseOffset {
				i++ // gone from the log since it was acquired
			}
			if i >= len(offs) || h.LastOffset() < offs[i] {
				return nil
			}
			out = append(out, b...)
			took = true
			for i < len(offs) && offs[i] <= h.LastOffset() {
				i++
			}
			return nil
		})
		if !took {
			break
		}
	}
	return out, nil
}

// expire ends acquisition lock: its records still held by it are released
// (or archived at the delivery limit) and the state written (Kafka's
// SharePartition.releaseAcquisitionLockOnTimeout).
func (sp *SharePartition) expire(lock uint64) {
	if sp.m.isClosed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeBound)
	defer cancel()
	if !sp.lock(ctx) {
		return
	}
	defer sp.unlock()
	if sp.stale || !sp.loaded {
		return
	}
	var lapsed []int64
	for o, r := range sp.records {
		if r.state == stateAcquired && r.lock == lock {
			member := r.member
			sp.release(r)
			r.lapsed = member
			lapsed = append(lapsed, o)
		}
	}
	if len(lapsed) == 0 {
		return
	}
	sp.trace("lock expired", "lock", lock, "runs", sp.runsOf(lapsed))
	sp.advance()
	sp.notifyAvailable()
	if e := sp.persist(ctx); e != nil {
		sp.m.cfg.Logger.Warn("share partition: writing expired locks", "group", sp.key.Group, "topic", sp.topic, "partition", sp.key.Partition, "err", e)
	}
}

// Acknowledgement types (KIP-932; renew is KIP-1222's).
const (
	ackGap     int8 = 0
	ackAccept  int8 = 1
	ackRelease int8 = 2
	ackReject  int8 = 3
	ackRenew   int8 = 4
)

// AckBatch is one acknowledgement batch of a request.
type AckBatch struct {
	First, Last int64
	// Types has one type for the whole batch, or one per offset.
	Types []int8
}

// acknowledge applies member's acknowledgements (carried by via: a
// ShareAcknowledge or a ShareFetch's piggyback) and traces what they met
// and what they got. Caller holds mu.
func (sp *SharePartition) acknowledge(ctx context.Context, member, via string, batches []AckBatch, renewLock time.Duration) *kerr.Error {
	met := ""
	if sp.m.cfg.Logger.Enabled(ctx, slog.LevelDebug) {
		met = sp.holdersText(member, batches)
	}
	e := sp.applyAcks(ctx, member, batches, renewLock)
	errName := "none"
	if e != nil {
		errName = e.Message
	}
	sp.trace("acknowledgements", "member", member, "via", via, "acks", acksText(batches), "met", met, "err", errName)
	return e
}

// applyAcks applies member's acknowledgements all or nothing, writes the
// state and only then keeps it: a failed write leaves the records as they
// were. An acknowledgement names a member and offsets, not a delivery:
// Kafka's SharePartition.acknowledge (validateAcknowledgementBatchMemberId)
// takes it from the member holding the record in the acquired state,
// whichever of its acquisitions it was sent for, and answers
// INVALID_RECORD_STATE for a record the member does not hold. Caller
// holds mu.
func (sp *SharePartition) applyAcks(ctx context.Context, member string, batches []AckBatch, renewLock time.Duration) *kerr.Error {
	saved := make(map[int64]inflight, len(sp.records))
	for o, r := range sp.records {
		saved[o] = *r
	}
	savedStart := sp.start
	released, renewed := false, false
	for _, b := range batches {
		if b.Last < b.First || len(b.Types) != 1 && int64(len(b.Types)) != b.Last-b.First+1 {
			return kerr.InvalidRequest
		}
		for o := b.First; o <= b.Last; o++ {
			t := b.Types[0]
			if len(b.Types) > 1 {
				t = b.Types[o-b.First]
			}
			r := sp.records[o]
			if t == ackGap && (r == nil || o < sp.start) {
				continue
			}
			if r == nil || !sp.holds(r, member) {
				sp.restore(saved, savedStart)
				return kerr.InvalidRecordState
			}
			switch t {
			case ackAccept:
				r.state = stateAcknowledged
			case ackRelease:
				sp.release(r)
				released = true
				continue
			case ackReject, ackGap:
				r.state = stateArchived
			case ackRenew:
				renewed = true
				continue
			default:
				sp.restore(saved, savedStart)
				return kerr.InvalidRequest
			}
			r.member, r.lock = "", 0
		}
	}
	sp.advance()
	if e := sp.persist(ctx); e != nil {
		sp.restore(saved, savedStart)
		return e
	}
	if renewed {
		sp.renew(member, batches, renewLock)
	}
	if released {
		sp.notifyAvailable()
	}
	return nil
}

// holds reports whether member may acknowledge r: it holds r's lock. The
// planted bug also takes the member whose lock lapsed, while the record
// waits for its next delivery.
func (sp *SharePartition) holds(r *inflight, member string) bool {
	if r.state == stateAcquired && r.member == member {
		return true
	}
	return sp.m.cfg.Bugs.AckAfterLockExpiry && r.state == stateAvailable && r.lapsed == member
}

func (sp *SharePartition) restore(saved map[int64]inflight, start int64) {
	sp.records = make(map[int64]*inflight, len(saved))
	for o, r := range saved {
		sp.records[o] = &r
	}
	sp.start = start
}

// renew gives the renewed records a fresh lock (KIP-1222).
func (sp *SharePartition) renew(member string, batches []AckBatch, d time.Duration) {
	sp.nextLock++
	lock := sp.nextLock
	for _, b := range batches {
		for o := b.First; o <= b.Last; o++ {
			t := b.Types[0]
			if len(b.Types) > 1 {
				t = b.Types[o-b.First]
			}
			if r := sp.records[o]; t == ackRenew && r != nil && r.state == stateAcquired && r.member == member {
				r.lock = lock
			}
		}
	}
	sp.m.cfg.Clock.AfterFunc(d, func() { sp.expire(lock) })
}

// releaseMember releases every record member holds (its share session
// closed: KIP-932's ShareFetch with epoch -1) and writes the state.
// Caller holds mu.
func (sp *SharePartition) releaseMember(ctx context.Context, member string) *kerr.Error {
	var released []int64
	for o, r := range sp.records {
		if r.state == stateAcquired && r.member == member {
			sp.release(r)
			released = append(released, o)
		}
	}
	if len(released) == 0 {
		return nil
	}
	sp.trace("session closed", "member", member, "runs", sp.runsOf(released))
	sp.advance()
	sp.notifyAvailable()
	return sp.persist(ctx)
}

// runsOf spells offsets as runsText does, with their counts now; "" when
// the log is above debug (the sort is for the trace only).
func (sp *SharePartition) runsOf(offs []int64) string {
	if !sp.m.cfg.Logger.Enabled(context.Background(), slog.LevelDebug) {
		return ""
	}
	slices.Sort(offs)
	var runs []Acquired
	for _, o := range offs {
		c := sp.records[o].count
		if n := len(runs); n > 0 && runs[n-1].Last == o-1 && runs[n-1].Count == c {
			runs[n-1].Last = o
			continue
		}
		runs = append(runs, Acquired{First: o, Last: o, Count: c})
	}
	return runsText(runs)
}

// acksText spells acknowledgement batches as first-last:types.
func acksText(batches []AckBatch) string {
	var b strings.Builder
	for i, ab := range batches {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d-%d:%v", ab.First, ab.Last, ab.Types)
	}
	return b.String()
}

// holdersText spells what the acknowledged offsets were before the
// acknowledgements: runs of first-last=state@count, the state "held" (by
// member), "other" (acquired by another member), "available",
// "acknowledged", "archived", "done" (terminal and dropped below the
// SPSO) or "none".
func (sp *SharePartition) holdersText(member string, batches []AckBatch) string {
	type run struct {
		first, last int64
		state       string
		count       int16
	}
	var runs []run
	for _, ab := range batches {
		for o := ab.First; o <= ab.Last && o-ab.First < 10_000; o++ {
			state, count := "none", int16(0)
			switch r := sp.records[o]; {
			case r != nil:
				state, count = stateText(r, member), r.count
			case o < sp.start:
				state = "done" // acknowledged or archived, below the SPSO
			}
			if n := len(runs); n > 0 && runs[n-1].last == o-1 && runs[n-1].state == state && runs[n-1].count == count {
				runs[n-1].last = o
				continue
			}
			runs = append(runs, run{o, o, state, count})
		}
	}
	var b strings.Builder
	for i, r := range runs {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d-%d=%s@%d", r.first, r.last, r.state, r.count)
	}
	return b.String()
}

func stateText(r *inflight, member string) string {
	switch r.state {
	case stateAcquired:
		if r.member == member {
			return "held"
		}
		return "other"
	case stateAvailable:
		return "available"
	case stateAcknowledged:
		return "acknowledged"
	case stateArchived:
		return "archived"
	}
	return fmt.Sprintf("state%d", r.state)
}
