package reports

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"gregor/history"
)

// What each fault hit, computed after the run from the history and the
// metadata samples (never guessed): which topic partitions the nodes it hit
// led when it began, how many acknowledged records of each sat at offsets
// the ISR followers were not known to hold (the exposure: what a new leader
// may lack, so what an acks=1 failover can lose; about nothing with
// acks=all, whose acknowledgements wait for the ISR), and whether the
// leader moved.

// FaultHit is one fault (a schedule step's first operation) and what it hit.
type FaultHit struct {
	Index int64 // of the operation that began it
	Step  int   // -1: not recorded
	Kind  string
	// Phase and Round name a scenario's phase or a restart-storm's round:
	// besides a step's first operation, every later one that recorded what
	// it hit (a scenario's kill, a storm round's) is a FaultHit of its own.
	Phase string
	Round *int
	Start int64
	// End is when its ending operation came (-1: none, or instant).
	End   int64
	Nodes []int32
	// LedFrom says where Partitions came from: "nemesis" (recorded by the
	// runner just before it applied the fault, history.NemesisValue.Led),
	// "metadata" (the last sample at or before the start), "" (neither).
	LedFrom    string
	LedNote    string // why nothing is known, or the runner's led_error
	Partitions []PartitionHit
}

// PartitionHit is one partition a hit node led when the fault began.
type PartitionHit struct {
	Partition int32
	Key       string
	// Side is, for a network partition, the largest group holding the
	// leader: the nodes it could still reach.
	Side        []int32
	Leader      int32
	LeaderEpoch int32
	ISR         []int32
	// Replicated is an offset every ISR follower held the records below
	// when the fault began: a lower bound of the high watermark then, the
	// largest of the HW the runner sampled just before the fault, the end
	// of what consumers had read, and (acks=all) the offset after the last
	// acknowledged record. When the ISR was the leader alone, only
	// evidence from before the last sample that showed it larger counts.
	// ReplicatedHow says which.
	Replicated    int64
	ReplicatedHow string
	// Since is when the leader's leadership began at the latest: the last
	// sample before the start that showed an earlier leader or epoch (-1:
	// none did). Records acknowledged before it were an earlier leader's.
	Since int64
	// Acked counts the acknowledged records of the partition (ok sends
	// with an offset) completed after Since and before the fault began;
	// Exposed those at
	// offsets >= Replicated: an upper bound of what the followers lacked.
	// ExposedUnread are the exposed records no poll of the run ever read
	// (lost, or unseen).
	Acked, Exposed, ExposedUnread int
	// NoOffsets: the run acknowledges without offsets (acks=0), so there
	// is nothing to count.
	NoOffsets bool
	// Moved: a sample after the start, before the next fault began, showed
	// another leader (or none: LeaderlessAt) or a newer epoch. After is
	// the first leader sampled from then on, at AfterAt (-1: none); AfterWhy
	// says why nothing is known.
	Moved             bool
	LeaderlessAt      int64
	After, AfterEpoch int32
	AfterAt           int64
	AfterWhy          string
}

// Exposures computes what every fault of ops hit. samples may be empty
// (then only what the runner recorded is known, and no leader move).
func Exposures(ops []history.Op, samples []history.MetadataSample, cfg *history.Config) []FaultHit {
	samples = slices.Clone(samples)
	slices.SortStableFunc(samples, func(a, b history.MetadataSample) int { return cmp.Compare(a.Time, b.Time) })
	acksAll := cfg != nil && (cfg.Acks == "all" || cfg.Acks == "-1")
	noOffsets := cfg != nil && cfg.Acks == "0"
	topic := runTopic(ops)
	parts := partitionEvents(ops, topic)

	var faults []FaultHit
	openStep := map[int]bool{}
	groupsOf := map[int64][][]int32{}
	for _, op := range ops {
		if op.Process != history.Nemesis {
			continue
		}
		v, err := history.ParseNemesis(&op)
		if err != nil {
			continue
		}
		step := -1
		if v.Step != nil {
			step = *v.Step
		}
		if history.IsEndVerb(op.F) {
			for i := len(faults) - 1; i >= 0; i-- {
				f := &faults[i]
				if f.End < 0 && (f.Step == step || op.F == history.VerbHealAll) && !history.Instant(f.Kind) {
					f.End = op.Time // every row of the step: its phases' too
				}
			}
			delete(openStep, step)
			continue
		}
		recorded := len(v.Led) > 0 || v.LedError != ""
		if step >= 0 && openStep[step] && !recorded {
			continue // a scenario's next phase, a storm's next round
		}
		if step >= 0 {
			openStep[step] = true
		}
		if len(v.Groups) > 0 {
			groupsOf[op.Index] = v.Groups
		}
		f := FaultHit{Index: op.Index, Step: step, Kind: op.F, Phase: v.Phase, Round: v.Round, Start: op.Time, End: -1, Nodes: v.Nodes}
		switch {
		case recorded:
			f.LedFrom, f.LedNote = "nemesis", v.LedError
			for _, l := range v.Led {
				ph := PartitionHit{Partition: l.Partition, Leader: l.Leader, LeaderEpoch: l.LeaderEpoch, ISR: l.ISR, Replicated: -1}
				if l.HW != nil && l.At <= op.Time {
					ph.Replicated, ph.ReplicatedHow = *l.HW, fmt.Sprintf("HW %d its leader answered at %.3f s", *l.HW, float64(l.At)/1e9)
				}
				f.Partitions = append(f.Partitions, ph)
			}
			if len(v.Led) == 0 && v.LedError == "" {
				f.LedNote = "led nothing"
			}
		case len(v.Nodes) == 0:
			f.LedNote = "hit no node"
		default:
			st, at, ok := stateAt(samples, op.Time)
			if !ok {
				f.LedNote = "no metadata sample before it began"
				break
			}
			f.LedFrom = "metadata"
			f.LedNote = fmt.Sprintf("leaders as sampled at %.3f s", float64(at)/1e9)
			for _, p := range slices.Sorted(maps.Keys(st)) {
				s := st[p]
				if s.Leader >= 0 && slices.Contains(v.Nodes, s.Leader) {
					isr := slices.Clone(s.ISR)
					slices.Sort(isr)
					f.Partitions = append(f.Partitions, PartitionHit{Partition: p, Leader: s.Leader, LeaderEpoch: s.LeaderEpoch, ISR: isr, Replicated: -1})
				}
			}
			if len(f.Partitions) == 0 {
				f.LedNote += ": the nodes hit led no partition"
			}
		}
		faults = append(faults, f)
	}
	for i := range faults {
		f := &faults[i]
		if g := groupsOf[f.Index]; len(g) > 0 {
			for j := range f.Partitions {
				f.Partitions[j].Side = sideOf(g, f.Partitions[j].Leader)
			}
		}
		next := int64(-1)
		if i+1 < len(faults) {
			next = faults[i+1].Start
		}
		for j := range f.Partitions {
			ph := &f.Partitions[j]
			ph.Key = topic + "/" + strconv.Itoa(int(ph.Partition))
			ph.NoOffsets = noOffsets
			exposure(ph, parts[ph.Partition], samples, f.Start, acksAll)
			leaderAfter(ph, samples, f.Start, next)
		}
	}
	return faults
}

// sideOf is the largest group holding id (nil: none does).
func sideOf(groups [][]int32, id int32) []int32 {
	var side []int32
	for _, g := range groups {
		if slices.Contains(g, id) && len(g) > len(side) {
			side = g
		}
	}
	return side
}

// partEvents are one partition's acknowledged records and reads, in
// history order.
type partEvents struct {
	acks  []ackRec       // ok sends with an offset
	reads []readRec      // every ok poll's highest offset of the key
	read  map[int64]bool // values any poll read
}

type ackRec struct {
	at            int64 // completion time
	offset, value int64
}

type readRec struct {
	at  int64
	max int64
}

// runTopic is the topic of the run's first send (the topic the metadata
// sampler watches: the workload's, or an eos run's input).
func runTopic(ops []history.Op) string {
	for _, op := range ops {
		if op.F != history.FSend && op.F != history.FTxn {
			continue
		}
		for _, m := range op.Mops {
			if m.Kind == history.MopSend {
				if t, _, ok := splitKey(m.Key); ok {
					return t
				}
			}
		}
	}
	return ""
}

func splitKey(key string) (topic string, part int32, ok bool) {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return "", 0, false
	}
	p, err := strconv.ParseInt(key[i+1:], 10, 32)
	if err != nil {
		return "", 0, false
	}
	return key[:i], int32(p), true
}

func partitionEvents(ops []history.Op, topic string) map[int32]*partEvents {
	out := map[int32]*partEvents{}
	get := func(key string) *partEvents {
		t, p, ok := splitKey(key)
		if !ok || t != topic {
			return nil
		}
		e := out[p]
		if e == nil {
			e = &partEvents{read: map[int64]bool{}}
			out[p] = e
		}
		return e
	}
	for _, op := range ops {
		if op.Type != history.OK {
			continue
		}
		switch op.F {
		case history.FSend, history.FTxn, history.FPoll, history.FPollUncommitted:
		default:
			continue
		}
		for _, m := range op.Mops {
			switch m.Kind {
			case history.MopSend:
				if e := get(m.Key); e != nil && m.Offset >= 0 {
					e.acks = append(e.acks, ackRec{at: op.Time, offset: m.Offset, value: m.Value})
				}
			case history.MopPoll:
				for _, kr := range m.Polls {
					e := get(kr.Key)
					if e == nil || len(kr.Records) == 0 {
						continue
					}
					hi := int64(-1)
					for _, r := range kr.Records {
						hi = max(hi, r.Offset)
						e.read[r.Value] = true
					}
					e.reads = append(e.reads, readRec{at: op.Time, max: hi})
				}
			}
		}
	}
	return out
}

// exposure fills ph's replicated bound and counts from the partition's
// events before start.
func exposure(ph *PartitionHit, e *partEvents, samples []history.MetadataSample, start int64, acksAll bool) {
	if e == nil {
		e = &partEvents{read: map[int64]bool{}}
	}
	evidenceBefore := start
	alone := len(ph.ISR) == 1 && ph.ISR[0] == ph.Leader
	var why []string
	if alone {
		// The HW of a leader alone in its ISR is its own log end: it says
		// nothing of the followers. Only what was known replicated while
		// the ISR was larger counts.
		ph.Replicated, ph.ReplicatedHow = -1, ""
		evidenceBefore = -1
		for _, s := range samples {
			if s.Time > start {
				break
			}
			for _, p := range s.Partitions {
				if p.Partition == ph.Partition && len(p.ISR) > 1 {
					evidenceBefore = s.Time
				}
			}
		}
		if evidenceBefore < 0 {
			why = append(why, "the ISR was the leader alone and no sample showed it larger: nothing known replicated")
			evidenceBefore = 0
		} else {
			why = append(why, fmt.Sprintf("the ISR was the leader alone: evidence from before %.3f s, the last sample that showed it larger", float64(evidenceBefore)/1e9))
		}
	}
	if ph.ReplicatedHow != "" {
		why = append(why, ph.ReplicatedHow)
	}
	readEnd := int64(-1)
	for _, r := range e.reads {
		if r.at < evidenceBefore {
			readEnd = max(readEnd, r.max+1)
		}
	}
	if readEnd > ph.Replicated {
		ph.Replicated = readEnd
		why = append(why, fmt.Sprintf("offsets below %d read by consumers", readEnd))
	}
	if acksAll {
		ackEnd := int64(-1)
		for _, a := range e.acks {
			if a.at < evidenceBefore {
				ackEnd = max(ackEnd, a.offset+1)
			}
		}
		if ackEnd > ph.Replicated {
			ph.Replicated = ackEnd
			why = append(why, fmt.Sprintf("offsets below %d acknowledged with acks=all", ackEnd))
		}
	}
	if ph.Replicated < 0 {
		ph.Replicated = 0
		why = append(why, "no evidence: from offset 0")
	}
	ph.ReplicatedHow = strings.Join(why, "; ")
	ph.Since = leadingSince(ph, samples, start)
	for _, a := range e.acks {
		if a.at >= start || a.at <= ph.Since {
			continue
		}
		ph.Acked++
		if a.offset >= ph.Replicated {
			ph.Exposed++
			if !e.read[a.value] {
				ph.ExposedUnread++
			}
		}
	}
}

// leadingSince is the time of the last sample before start that showed
// ph's partition under an earlier leader or epoch (stale answers skipped):
// its leader's leadership began after it. -1: no sample did.
func leadingSince(ph *PartitionHit, samples []history.MetadataSample, start int64) int64 {
	since := int64(-1)
	maxEpoch := int32(-1 << 31)
	for _, s := range samples {
		if s.Time > start {
			break
		}
		if s.Broker < 0 || s.Error != "" {
			continue
		}
		for _, p := range s.Partitions {
			if p.Partition != ph.Partition || p.LeaderEpoch < maxEpoch {
				continue
			}
			maxEpoch = p.LeaderEpoch
			if p.Leader != ph.Leader || p.LeaderEpoch < ph.LeaderEpoch {
				since = s.Time
			}
		}
	}
	return since
}

// leaderAfter finds the first sample after start, before next (-1: the
// run's end), that shows another leader or a newer epoch of ph's partition,
// and the first real leader from then on (a leader's death shows as no
// leader until one is elected). Stale answers (an epoch below one already
// seen) are skipped, as the metadata chart does.
func leaderAfter(ph *PartitionHit, samples []history.MetadataSample, start, next int64) {
	maxEpoch := ph.LeaderEpoch
	seen := false
	ph.After, ph.AfterAt, ph.LeaderlessAt = -1, -1, -1
	for _, s := range samples {
		if s.Broker < 0 || s.Error != "" {
			continue
		}
		if next >= 0 && s.Time >= next {
			if !ph.Moved {
				ph.AfterWhy = fmt.Sprintf("no other leader sampled before the next fault at %.3f s", float64(next)/1e9)
			} else {
				ph.AfterWhy = fmt.Sprintf("no leader sampled before the next fault at %.3f s", float64(next)/1e9)
			}
			return
		}
		for _, p := range s.Partitions {
			if p.Partition != ph.Partition || p.LeaderEpoch < maxEpoch {
				continue
			}
			maxEpoch = p.LeaderEpoch
			if s.Time <= start {
				continue
			}
			seen = true
			if !ph.Moved && (p.Leader != ph.Leader || p.LeaderEpoch > ph.LeaderEpoch) {
				ph.Moved = true
				if p.Leader < 0 {
					ph.LeaderlessAt = s.Time
				}
			}
			if ph.Moved && p.Leader >= 0 {
				ph.After, ph.AfterEpoch, ph.AfterAt = p.Leader, p.LeaderEpoch, s.Time
				return
			}
		}
	}
	switch {
	case len(samples) == 0:
		ph.AfterWhy = "no metadata samples"
	case !seen:
		ph.AfterWhy = "no sample after it began"
	case ph.Moved:
		ph.AfterWhy = "no leader sampled up to the run's end"
	default:
		ph.AfterWhy = "no other leader sampled up to the run's end"
	}
}

// stateAt is each partition's state as the last answered sample at or
// before t showed it (answers behind an epoch already seen are skipped),
// and the time of the latest sample used.
func stateAt(samples []history.MetadataSample, t int64) (map[int32]history.PartitionState, int64, bool) {
	st := map[int32]history.PartitionState{}
	var at int64
	ok := false
	for _, s := range samples {
		if s.Time > t {
			break
		}
		if s.Broker < 0 || s.Error != "" {
			continue
		}
		for _, p := range s.Partitions {
			if old, had := st[p.Partition]; had && p.LeaderEpoch < old.LeaderEpoch {
				continue
			}
			st[p.Partition] = p
			at, ok = s.Time, true
		}
	}
	return st, at, ok
}

// faultsView is the "What the faults hit" section: one row per partition a
// fault's nodes led (one row for a fault that led none).
type faultsView struct {
	Rows    []faultRow
	AcksAll bool
	Acks    string
	Total   int // exposed records over every fault
	Unread  int // of them, never read
	// LostAcks is the checker's count of acknowledged records gone
	// (-1: no result).
	LostAcks int
	Note     string
}

type faultRow struct {
	First bool // the fault's first row: it carries the fault's cells
	Span  int  // rows of the fault
	ID    string
	Fault string
	Start int64
	End   string
	Nodes string
	From  string
	Note  string
	Hit   *PartitionHit
	ISR   string
	Side  string
	After string
}

// maxFaultRows bounds the fault table (a long storm run has thousands of
// rounds); the totals still count every fault.
const maxFaultRows = 500

func faultsSection(ops []history.Op, samples []history.MetadataSample, cfg *history.Config) *faultsView {
	hits := Exposures(ops, samples, cfg)
	if len(hits) == 0 {
		return nil
	}
	v := &faultsView{LostAcks: -1}
	defer func() {
		if len(v.Rows) > maxFaultRows {
			cut := maxFaultRows
			for cut > 0 && !v.Rows[cut].First {
				cut-- // whole faults only
			}
			v.Note = fmt.Sprintf("showing the first %d of %d rows; the totals count every fault", cut, len(v.Rows))
			v.Rows = v.Rows[:cut]
		}
	}()
	if cfg != nil {
		v.Acks = cfg.Acks
		v.AcksAll = cfg.Acks == "all" || cfg.Acks == "-1"
	}
	for _, f := range hits {
		base := faultRow{First: true, Span: max(1, len(f.Partitions)), ID: fmt.Sprintf("fault-%d", f.Index), Fault: f.Kind, Start: f.Start,
			Nodes: joinIDs(f.Nodes), Note: f.LedNote}
		var what []string
		if f.Step >= 0 {
			what = append(what, fmt.Sprintf("step %d", f.Step))
		}
		if f.Round != nil {
			what = append(what, fmt.Sprintf("round %d", *f.Round))
		}
		if f.Phase != "" {
			what = append(what, f.Phase)
		}
		if len(what) > 0 {
			base.Fault = fmt.Sprintf("%s (%s)", f.Kind, strings.Join(what, ", "))
		}
		switch {
		case f.End >= 0:
			base.End = fmt.Sprintf("%.2f s", float64(f.End)/1e9)
		case history.Instant(f.Kind):
			base.End = "instant"
		default:
			base.End = "not ended"
		}
		switch f.LedFrom {
		case "nemesis":
			base.From = "leaders as the nemesis recorded them"
		case "metadata":
			base.From = "from metadata samples"
		}
		if len(f.Partitions) == 0 {
			v.Rows = append(v.Rows, base)
			continue
		}
		for i := range f.Partitions {
			ph := &f.Partitions[i]
			r := base
			if i > 0 {
				r = faultRow{}
			}
			r.Hit = ph
			r.ISR = "[" + joinIDs(ph.ISR) + "]"
			if ph.Side != nil {
				r.Side = "its side of the partition: " + joinIDs(ph.Side)
			}
			r.After = afterText(ph, f.End)
			v.Total += ph.Exposed
			v.Unread += ph.ExposedUnread
			v.Rows = append(v.Rows, r)
		}
	}
	return v
}

func afterText(ph *PartitionHit, end int64) string {
	if !ph.Moved {
		return "stayed: " + ph.AfterWhy
	}
	var b strings.Builder
	if ph.LeaderlessAt >= 0 {
		fmt.Fprintf(&b, "no leader at %.2f s; ", float64(ph.LeaderlessAt)/1e9)
	}
	if ph.After >= 0 {
		fmt.Fprintf(&b, "broker %d (epoch %d) at %.2f s", ph.After, ph.AfterEpoch, float64(ph.AfterAt)/1e9)
		if end >= 0 && ph.AfterAt > end && ph.LeaderlessAt < 0 {
			b.WriteString(", after the fault ended (no change sampled while it lasted)")
		}
	} else {
		b.WriteString(ph.AfterWhy)
	}
	return b.String()
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ", ")
}
