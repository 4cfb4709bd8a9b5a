package reports

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"gregor/history"
)

// Limits on the metadata chart, so a long run with a flapping ISR still
// renders: beyond them the chart stops drawing and says so.
const (
	maxMetadataLanes   = 64   // partitions drawn
	maxMetadataShapes  = 6000 // leader rects + ISR steps + marks, over all lanes
	maxMetadataChanges = 400  // rows of the changes table
	metadataLaneH      = 80.0
	metadataTopH       = 14.0 // the sampler row: failed samples
	metadataAxisH      = 14.0
	leaderColours      = 8 // CSS classes ldr-0 .. ldr-7 in templates/metadata.html
)

type mark struct {
	X, Y  float64
	Title string
}

type leaderRect struct {
	X, Y, W float64
	Class   string
	Label   string // the leader id, drawn when the rect is wide enough
	Show    bool
	Title   string
}

type lane struct {
	Label   string
	Y       float64 // top of the lane
	ISRPath string  // step line of the ISR size
	FullY   float64 // y of ISR size = RF
	MinY    float64 // y of ISR size = min ISR; 0: no min ISR known
	RF      int
	MinISR  int
}

type legendItem struct {
	Class, Label string
}

type changeRow struct {
	Time      int64
	Partition int32
	What      string
	Broker    int32
}

// metadataView is the "Partition leaders and ISR" section.
type metadataView struct {
	Width, Height float64
	OuterWidth    float64 // Width plus the lane labels' margin
	Bands         []band
	Lanes         []lane
	Leaders       []leaderRect
	Failed        []mark // samples no broker answered
	Stale         []mark // answers behind a leader epoch already seen
	XTicks        []tick
	AxisY         float64
	Legend        []legendItem
	Summary       string
	Note          string // why nothing or not everything is drawn
	Empty         bool
	Changes       []changeRow
	ChangesNote   string
}

// pstate is one partition's state as one accepted answer showed it.
type pstate struct {
	leader, epoch int32
	isr           []int32
	replicas      int
}

func (a pstate) same(b pstate) bool {
	return a.leader == b.leader && a.epoch == b.epoch && slices.Equal(a.isr, b.isr)
}

// segment is a stretch of time over which the accepted answers agreed.
type segment struct {
	start, end int64
	st         pstate
	broker     int32 // answered when the segment began
}

// metadataChart draws the samples: per partition a lane with the leader as
// coloured bands (one colour per broker id) and the ISR size as a step
// line, fault bands shaded as in the other charts. Leader epochs only grow,
// so an answer with a smaller epoch than one already seen for the partition
// is a stale view (a broker cut off from the controller): it is marked, not
// drawn as the state. A stale view with the same epoch (an old ISR) cannot
// be told apart and is drawn. A sample no broker answered ends every lane's
// state: nothing is known until the next answer.
func metadataChart(samples []history.MetadataSample, nemesis []band, histEnd int64, minISR int, note string) metadataView {
	v := metadataView{Width: chartWidth, OuterWidth: chartWidth + 40, Note: note}
	if len(samples) == 0 {
		v.Empty = true
		v.Height = 40
		return v
	}
	samples = slices.Clone(samples)
	slices.SortStableFunc(samples, func(a, b history.MetadataSample) int { return cmp.Compare(a.Time, b.Time) })
	end := max(histEnd, samples[len(samples)-1].Time)

	var parts []int32
	seen := map[int32]bool{}
	for _, s := range samples {
		for _, p := range s.Partitions {
			if !seen[p.Partition] {
				seen[p.Partition] = true
				parts = append(parts, p.Partition)
			}
		}
	}
	slices.Sort(parts)
	if len(parts) > maxMetadataLanes {
		v.Note = joinNote(v.Note, fmt.Sprintf("showing %d of %d partitions", maxMetadataLanes, len(parts)))
		parts = parts[:maxMetadataLanes]
	}
	laneOf := map[int32]int{}
	for i, p := range parts {
		laneOf[p] = i
	}

	// Walk the samples once, building each partition's segments.
	segs := make([][]segment, len(parts))
	open := make([]*segment, len(parts))
	maxEpoch := make([]int32, len(parts))
	for i := range maxEpoch {
		maxEpoch[i] = math.MinInt32
	}
	closeAll := func(t int64) {
		for i, o := range open {
			if o != nil {
				o.end = t
				segs[i] = append(segs[i], *o)
				open[i] = nil
			}
		}
	}
	answered := map[int32]int{}
	failedSamples, failedAttempts, staleAnswers := 0, 0, 0
	shapes := 0
	budget := func() bool {
		if shapes >= maxMetadataShapes {
			return false
		}
		shapes++
		return true
	}
	var intervals []int64
	for i, s := range samples {
		if i > 0 {
			intervals = append(intervals, s.Time-samples[i-1].Time)
		}
		failedAttempts += len(s.Failed)
		if s.Broker < 0 || s.Error != "" {
			failedSamples++
			closeAll(s.Time)
			if budget() {
				v.Failed = append(v.Failed, mark{X: xOf(s.Time, end), Y: 2, Title: fmt.Sprintf("%.2f s: %s%s", float64(s.Time)/1e9, s.Error, attempts(s.Failed))})
			}
			continue
		}
		answered[s.Broker]++
		got := map[int32]history.PartitionState{}
		for _, p := range s.Partitions {
			got[p.Partition] = p
		}
		for li, part := range parts {
			p, ok := got[part]
			laneY := metadataTopH + float64(li)*metadataLaneH
			if !ok || p.LeaderEpoch < maxEpoch[li] {
				staleAnswers++
				why := fmt.Sprintf("broker %d did not list partition %d", s.Broker, part)
				if s.TopicError != "" {
					why = fmt.Sprintf("broker %d answered %s", s.Broker, s.TopicError)
				}
				if ok {
					why = fmt.Sprintf("broker %d: stale view, leader %d at epoch %d < epoch %d already seen", s.Broker, p.Leader, p.LeaderEpoch, maxEpoch[li])
				}
				if budget() {
					v.Stale = append(v.Stale, mark{X: xOf(s.Time, end), Y: laneY + 19, Title: fmt.Sprintf("%.2f s: %s", float64(s.Time)/1e9, why)})
				}
				continue
			}
			maxEpoch[li] = p.LeaderEpoch
			isr := slices.Clone(p.ISR)
			slices.Sort(isr)
			st := pstate{leader: p.Leader, epoch: p.LeaderEpoch, isr: isr, replicas: len(p.Replicas)}
			if o := open[li]; o != nil && o.st.same(st) {
				o.end = s.Time
				continue
			}
			if o := open[li]; o != nil {
				o.end = s.Time
				segs[li] = append(segs[li], *o)
			}
			open[li] = &segment{start: s.Time, end: s.Time, st: st, broker: s.Broker}
		}
	}
	closeAll(samples[len(samples)-1].Time)

	// Draw: lanes, leader rects, ISR step lines; the changes table.
	v.Height = metadataTopH + float64(len(parts))*metadataLaneH + metadataAxisH
	v.AxisY = v.Height - 3
	v.Bands = scaleBands(nemesis, end)
	v.XTicks = ticks(end)
	leaders := map[int32]bool{}
	truncated := false
	for li, part := range parts {
		y := metadataTopH + float64(li)*metadataLaneH
		rf := 0
		for _, sg := range segs[li] {
			rf = max(rf, sg.st.replicas, len(sg.st.isr))
		}
		rf = max(rf, 1)
		ln := lane{Label: fmt.Sprintf("p%d", part), Y: y, RF: rf, MinISR: minISR}
		isrTop, isrH := y+25, metadataLaneH-30
		yOf := func(n int) float64 { return isrTop + isrH - float64(n)/float64(rf)*isrH }
		ln.FullY = yOf(rf)
		if minISR > 0 && minISR <= rf {
			ln.MinY = yOf(minISR)
		}
		var path strings.Builder
		var prev *segment
		for si := range segs[li] {
			sg := &segs[li][si]
			if !budget() {
				truncated = true
				break
			}
			x0, x1 := xOf(sg.start, end), xOf(sg.end, end)
			// Leader rects merge with the previous one when nothing but the
			// ISR changed and no gap lies between.
			if prev != nil && prev.end == sg.start && prev.st.leader == sg.st.leader && prev.st.epoch == sg.st.epoch && len(v.Leaders) > 0 {
				r := &v.Leaders[len(v.Leaders)-1]
				r.W = math.Max(1, x1-r.X)
			} else {
				leaders[sg.st.leader] = true
				v.Leaders = append(v.Leaders, leaderRect{X: x0, Y: y + 4, W: math.Max(1, x1-x0), Class: leaderClass(sg.st.leader),
					Label: leaderLabel(sg.st.leader), Title: fmt.Sprintf("p%d %s, leader epoch %d, from %.2f s (broker %d answered)",
						part, leaderName(sg.st.leader), sg.st.epoch, float64(sg.start)/1e9, sg.broker)})
			}
			yy := yOf(len(sg.st.isr))
			if prev != nil && prev.end == sg.start {
				fmt.Fprintf(&path, " V%.1f H%.1f", yy, math.Max(x1, x0+0.5))
			} else {
				fmt.Fprintf(&path, "M%.1f %.1f H%.1f", x0, yy, math.Max(x1, x0+0.5))
			}
			if prev != nil && len(v.Changes) < maxMetadataChanges {
				var what []string
				if prev.st.leader != sg.st.leader || prev.st.epoch != sg.st.epoch {
					what = append(what, fmt.Sprintf("leader %s → %s (epoch %d → %d)", leaderName(prev.st.leader), leaderName(sg.st.leader), prev.st.epoch, sg.st.epoch))
				}
				if !slices.Equal(prev.st.isr, sg.st.isr) {
					what = append(what, fmt.Sprintf("ISR %v → %v", prev.st.isr, sg.st.isr))
				}
				if len(what) > 0 {
					v.Changes = append(v.Changes, changeRow{Time: sg.start, Partition: part, What: strings.Join(what, "; "), Broker: sg.broker})
				}
			} else if prev != nil {
				v.ChangesNote = fmt.Sprintf("the first %d changes", maxMetadataChanges)
			}
			prev = sg
		}
		ln.ISRPath = path.String()
		v.Lanes = append(v.Lanes, ln)
	}
	for i := range v.Leaders {
		v.Leaders[i].Show = v.Leaders[i].W >= 12
	}
	if truncated {
		v.Note = joinNote(v.Note, fmt.Sprintf("more than %d shapes: the chart stops there", maxMetadataShapes))
	}
	// Read beside the chart, the changes go in time order across lanes.
	slices.SortStableFunc(v.Changes, func(a, b changeRow) int { return cmp.Compare(a.Time, b.Time) })
	for _, id := range slices.Sorted(maps.Keys(leaders)) {
		v.Legend = append(v.Legend, legendItem{Class: leaderClass(id), Label: leaderName(id)})
	}
	v.Summary = metadataSummary(len(samples), samples[0].Time, samples[len(samples)-1].Time, intervals, answered, failedSamples, failedAttempts, staleAnswers)
	return v
}

func metadataSummary(n int, first, last int64, intervals []int64, answered map[int32]int, failedSamples, failedAttempts, stale int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d samples from %.2f s to %.2f s", n, float64(first)/1e9, float64(last)/1e9)
	if len(intervals) > 0 {
		slices.Sort(intervals)
		fmt.Fprintf(&b, ", median interval %.0f ms", float64(intervals[len(intervals)/2])/1e6)
	}
	var by []string
	for _, id := range slices.Sorted(maps.Keys(answered)) {
		by = append(by, fmt.Sprintf("%d: %d", id, answered[id]))
	}
	if len(by) > 0 {
		fmt.Fprintf(&b, "; answered by broker %s", strings.Join(by, ", "))
	}
	fmt.Fprintf(&b, "; %d samples no broker answered, %d requests to a broker that did not answer; %d stale or partial answers", failedSamples, failedAttempts, stale)
	return b.String()
}

func attempts(a []history.MetadataAttempt) string {
	var parts []string
	for _, x := range a {
		parts = append(parts, fmt.Sprintf("broker %d: %s", x.Broker, x.Error))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

func leaderClass(id int32) string {
	if id < 0 {
		return "ldr ldr-none"
	}
	return fmt.Sprintf("ldr ldr-%d", id%leaderColours)
}

func leaderLabel(id int32) string {
	if id < 0 {
		return "–"
	}
	return fmt.Sprint(id)
}

func leaderName(id int32) string {
	if id < 0 {
		return "no leader"
	}
	return fmt.Sprintf("broker %d", id)
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func configMinISR(c *history.Config) int {
	if c == nil {
		return 0
	}
	return c.MinISR
}
