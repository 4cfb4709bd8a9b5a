package history

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"
)

// ShrinkLinks is shrink.json (RunDir.Shrink): what `gregor shrink` found
// for a failing run, written in both runs: the original names the shrunk
// run (ShrunkTo), the shrunk run its original (ShrunkFrom). Paths are
// relative to the run directory holding the file, slash-separated, so the
// reports' links survive moving the store.
type ShrinkLinks struct {
	ShrunkFrom string `json:"shrunk_from,omitempty"`
	ShrunkTo   string `json:"shrunk_to,omitempty"`
	// Anomalies are the forbidden anomalies a replay had to show (any of
	// them) to count as still failing.
	Anomalies []string `json:"anomalies"`
	// Before is the original schedule, After the smallest failing one.
	Before ScheduleSize `json:"before"`
	After  ScheduleSize `json:"after"`
	// Replays is how many runs the search took; Exhausted says its budget
	// ended it (a smaller schedule may exist).
	Replays   int  `json:"replays"`
	Exhausted bool `json:"exhausted"`
}

// ScheduleSize is a schedule's size as shrinking measures it.
type ScheduleSize struct {
	Faults int `json:"faults"`
	// FaultTime is the sum of the faults' holds; End is when the last
	// fault ends; TimeLimit the run's fault phase.
	FaultTime Duration `json:"fault_time"`
	End       Duration `json:"end"`
	TimeLimit Duration `json:"time_limit"`
	// InForce is how long faults were in force in the run, from its
	// history (a scenario's story lasts longer than its hold).
	InForce Duration `json:"in_force"`
}

// ReadShrinkLinks reads a run directory's shrink.json; nil, nil when it has
// none.
func ReadShrinkLinks(dir RunDir) (*ShrinkLinks, error) {
	b, err := os.ReadFile(dir.Shrink())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var l ShrinkLinks
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("%s: %w", dir.Shrink(), err)
	}
	return &l, nil
}

// WriteShrinkLinks writes a run directory's shrink.json.
func WriteShrinkLinks(dir RunDir, l *ShrinkLinks) error {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(dir.Shrink(), append(b, '\n'), 0o644)
}

// FaultsInForce is how long a history's faults were in force, overlapping
// faults counted once: each schedule step from its first nemesis operation
// to its end, or, never ended, to the heal-all (or the history's end); an
// instant fault (Instant) that writes no end takes no time.
func FaultsInForce(ops []Op) time.Duration {
	type span struct {
		kind       string
		start, end int64
		ended      bool
	}
	steps := map[int]*span{}
	var order []int
	var last, healAll int64 = 0, -1
	for _, op := range ops {
		last = max(last, op.Time)
		if op.Process != Nemesis {
			continue
		}
		if op.F == VerbHealAll && healAll < 0 {
			healAll = op.Time
		}
		v, err := ParseNemesis(&op)
		if err != nil || v.Step == nil {
			continue
		}
		sp, ok := steps[*v.Step]
		switch {
		case !ok && !IsEndVerb(op.F) && op.Error == "":
			steps[*v.Step] = &span{kind: op.F, start: op.Time}
			order = append(order, *v.Step)
		case ok && IsEndVerb(op.F) && !sp.ended:
			sp.end, sp.ended = op.Time, true
		}
	}
	var spans [][2]int64
	for _, i := range order {
		sp := steps[i]
		switch {
		case sp.ended:
		case Instant(sp.kind):
			continue
		case healAll >= sp.start:
			sp.end = healAll
		default:
			sp.end = last
		}
		spans = append(spans, [2]int64{sp.start, sp.end})
	}
	slices.SortFunc(spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	var total, upTo int64
	upTo = -1
	for _, sp := range spans {
		from := max(sp[0], upTo)
		if sp[1] > from {
			total += sp[1] - from
		}
		upTo = max(upTo, sp[1])
	}
	return time.Duration(total)
}
