package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
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

// FaultsInForce is how long a history's faults were in force: from a
// nemesis operation starting a fault while none was, to the next one
// ending a fault (as the reports' fault bands), or to the history's end.
func FaultsInForce(ops []Op) time.Duration {
	var total, end int64
	start := int64(-1)
	for _, op := range ops {
		end = max(end, op.Time)
		if op.Process != Nemesis {
			continue
		}
		switch {
		case IsEndVerb(op.F) && start >= 0:
			total += op.Time - start
			start = -1
		case !IsEndVerb(op.F) && start < 0 && op.Error == "":
			start = op.Time
		}
	}
	if start >= 0 {
		total += end - start
	}
	return time.Duration(total)
}
