package nemesis

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"gregor/cluster/faultpoint"
	"gregor/history"
)

// ScheduleVersion is the format of schedule.json this code writes and reads.
const ScheduleVersion = 1

// ScheduleFile is schedule.json (history.RunDir.Schedule, DESIGN.md section
// 8): a run's fault schedule as plain records, written before the first
// fault so that a crash leaves it, read back by `gregor run --schedule` and
// `gregor shrink` to replay it. Every step names its target rule; Resolved
// is filled in once the run has resolved it (informational: a replay
// resolves the rule again, against the cluster as it is then).
type ScheduleFile struct {
	Version int `json:"version"`
	// Seed is the run's seed: the workload's choices, and, when Source is
	// "drawn", the schedule's.
	Seed int64 `json:"seed"`
	// Source says where the steps came from: SourceDrawn (from Seed and the
	// nemesis flags), SourceReplayed (another schedule.json, --schedule) or
	// SourceShrunk (gregor shrink).
	Source string `json:"source"`
	// From names the file a replayed or shrunk schedule was read from.
	From string `json:"from,omitempty"`
	// Brokers are the broker node ids of the run that recorded it, Voters
	// its controller-only voters.
	Brokers []int32      `json:"brokers"`
	Voters  []int32      `json:"voters,omitempty"`
	Steps   []StepRecord `json:"steps"`
}

// Where a schedule came from (ScheduleFile.Source).
const (
	SourceDrawn    = "drawn"
	SourceReplayed = "replayed"
	SourceShrunk   = "shrunk"
)

// StepRecord is one Step as schedule.json holds it: a plain record.
type StepRecord struct {
	// At is the start offset from the start of the fault phase.
	At   history.Duration `json:"at"`
	Kind string           `json:"kind"`
	// Target is the rule that chooses the nodes (--nemesis-target).
	Target string `json:"target,omitempty"`
	Shape  string `json:"shape,omitempty"`
	// Hold is how long the fault lasts (0 for client faults: no undo).
	Hold history.Duration `json:"hold"`
	// Pick seeds the choice of nodes and partition (Step.Pick), as a
	// decimal string: a uint64 does not survive a JSON number in every
	// reader.
	Pick string `json:"pick"`
	// Params are the kind's settings (a slow link's delay and loss), for
	// the record; a replay refuses params that differ from the run's.
	Params map[string]string `json:"params,omitempty"`
	// Resolved are the nodes the step hit in the run that wrote the file
	// (from its history), and Partition the topic partition whose leader
	// was targeted; absent until resolved.
	Resolved  []int32 `json:"resolved,omitempty"`
	Partition *int32  `json:"partition,omitempty"`
	// Groups are a resolved network partition's sides.
	Groups [][]int32 `json:"groups,omitempty"`
	// FaultPoint is a fault-points step's arming.
	FaultPoint *PointRecord `json:"fault_point,omitempty"`
}

// PointRecord is a PointArm as schedule.json holds it.
type PointRecord struct {
	Point       string           `json:"point"`
	Action      string           `json:"action"`
	Probability float64          `json:"probability"`
	Max         int              `json:"max"`
	For         history.Duration `json:"for"`
	After       history.Duration `json:"after,omitempty"`
	Aim         string           `json:"aim,omitempty"`
}

// RecordSchedule turns s into schedule.json's records. target is the run's
// target rule; params gives each kind's params (nil: none).
func RecordSchedule(s Schedule, seed int64, target Target, brokers, voters []int32, params func(Kind) map[string]string) ScheduleFile {
	f := ScheduleFile{Version: ScheduleVersion, Seed: seed, Source: SourceDrawn,
		Brokers: slices.Clone(brokers), Voters: slices.Clone(voters), Steps: []StepRecord{}}
	if f.Brokers == nil {
		f.Brokers = []int32{}
	}
	for _, st := range s {
		r := StepRecord{At: history.Duration(st.At), Kind: string(st.Kind), Shape: string(st.Shape),
			Hold: history.Duration(st.Hold), Pick: strconv.FormatUint(st.Pick, 10)}
		if !IsClientKind(st.Kind) {
			r.Target = string(target)
		}
		if params != nil {
			r.Params = params(st.Kind)
		}
		if st.Kind == FaultPoints {
			p := st.Point
			r.FaultPoint = &PointRecord{Point: string(p.Point), Action: string(p.Action), Probability: p.Probability, Max: p.Max, For: history.Duration(p.For), After: history.Duration(p.After), Aim: string(p.Aim)}
		}
		f.Steps = append(f.Steps, r)
	}
	return f
}

// Schedule turns the records back into a Schedule, checking each: a known
// kind, a known shape for a partition, a parseable pick, and the schedule's
// own invariants (Schedule.Check).
func (f *ScheduleFile) Schedule() (Schedule, error) {
	if f.Version != ScheduleVersion {
		return nil, fmt.Errorf("schedule version %d: this gregor reads version %d", f.Version, ScheduleVersion)
	}
	var s Schedule
	for i, r := range f.Steps {
		k := Kind(r.Kind)
		if !slices.Contains(Kinds, k) {
			return nil, fmt.Errorf("schedule step %d: unknown nemesis kind %q: choose from %s", i, r.Kind, joinKinds())
		}
		st := Step{At: time.Duration(r.At), Kind: k, Hold: time.Duration(r.Hold)}
		if k == Partition {
			sh := Shape(r.Shape)
			if !slices.Contains(Shapes, sh) {
				return nil, fmt.Errorf("schedule step %d: partition shape %q unknown", i, r.Shape)
			}
			st.Shape = sh
		}
		pick, err := strconv.ParseUint(r.Pick, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("schedule step %d: pick %q: want a decimal uint64", i, r.Pick)
		}
		st.Pick = pick
		if k == FaultPoints {
			p := r.FaultPoint
			if p == nil {
				return nil, fmt.Errorf("schedule step %d: a fault-points step without its fault_point", i)
			}
			st.Point = PointArm{Point: faultpoint.Point(p.Point), Action: faultpoint.Action(p.Action), Probability: p.Probability, Max: p.Max, For: time.Duration(p.For), After: time.Duration(p.After), Aim: faultpoint.Aim(p.Aim)}
			if err := st.Point.Check(); err != nil {
				return nil, fmt.Errorf("schedule step %d: %w", i, err)
			}
		}
		s = append(s, st)
	}
	return s, s.Check()
}

// Fits checks that f can be replayed by a run with the given kinds,
// target, brokers and voters: every step's kind among the run's kinds (the
// checker's theory reads the run's kinds), its target the run's, and every
// node it names (its recording run's brokers, its resolved nodes) one the
// run has. Each error names the step and the fix.
func (f *ScheduleFile) Fits(kinds []Kind, target Target, brokers, voters []int32) error {
	nodes := append(slices.Clone(brokers), voters...)
	var errs []error
	for _, id := range f.Brokers {
		if !slices.Contains(brokers, id) {
			errs = append(errs, fmt.Errorf("the schedule was recorded with broker %d, which this run does not have (brokers %v): give --nodes %d", id, brokers, slices.Max(f.Brokers)))
			break
		}
	}
	for i, r := range f.Steps {
		if !slices.Contains(kinds, Kind(r.Kind)) {
			errs = append(errs, fmt.Errorf("schedule step %d is %s, which --nemesis does not name: add it to --nemesis (the checker's theory reads the run's fault kinds)", i, r.Kind))
		}
		if r.Target != "" && Target(r.Target) != target {
			errs = append(errs, fmt.Errorf("schedule step %d targets %s, the run %s: give --nemesis-target %s", i, r.Target, target, r.Target))
		}
		for _, id := range r.Resolved {
			if !slices.Contains(nodes, id) {
				errs = append(errs, fmt.Errorf("schedule step %d hit node %d, which this run does not have (nodes %v)", i, id, nodes))
			}
		}
	}
	if len(errs) > 3 {
		errs = append(errs[:3], fmt.Errorf("and %d more", len(errs)-3))
	}
	return errors.Join(errs...)
}

// ReadScheduleFile reads a schedule.json; the error names the file.
func ReadScheduleFile(path string) (*ScheduleFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f ScheduleFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := f.Schedule(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &f, nil
}

// JSON renders f indented.
func (f *ScheduleFile) JSON() []byte {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		panic(err) // plain records: cannot fail
	}
	return append(b, '\n')
}

// Resolve fills each step's Resolved nodes and targeted partition from a
// run's nemesis operations (Runner writes the step index and the nodes in
// each fault's start). A step the run never reached stays unresolved.
func (f *ScheduleFile) Resolve(ops []history.Op) {
	for _, op := range ops {
		if op.Process != history.Nemesis || history.IsEndVerb(op.F) || op.Error != "" {
			continue
		}
		v, err := history.ParseNemesis(&op)
		if err != nil || v.Step == nil || *v.Step < 0 || *v.Step >= len(f.Steps) {
			continue
		}
		r := &f.Steps[*v.Step]
		if r.Kind != op.F || r.Resolved != nil {
			continue // a scenario's later phases repeat the kind
		}
		r.Resolved = slices.Clone(v.Nodes)
		if r.Resolved == nil {
			r.Resolved = []int32{}
		}
		r.Groups = v.Groups
		if v.Partition >= 0 {
			p := v.Partition
			r.Partition = &p
		}
	}
}

// Size is what shrinking reduces: the number of faults, their total hold,
// and when the last one ends.
type Size struct {
	Faults int
	// FaultTime is the sum of the holds; End the end of the last fault.
	FaultTime, End time.Duration
}

// Size measures s.
func (s Schedule) Size() Size {
	z := Size{Faults: len(s)}
	for _, st := range s {
		z.FaultTime += st.Hold
		z.End = max(z.End, st.At+st.Hold)
	}
	return z
}

// Steps describes s's steps, one a line: start, kind (and shape), hold.
func (s Schedule) Steps() []string {
	var out []string
	for _, st := range s {
		k := string(st.Kind)
		if st.Shape != "" {
			k += " " + string(st.Shape)
		}
		if st.Kind == FaultPoints {
			k += " " + string(st.Point.Point) + " " + string(st.Point.Action)
		}
		out = append(out, fmt.Sprintf("at %6.2f s  %-28s for %.2f s", st.At.Seconds(), k, st.Hold.Seconds()))
	}
	return out
}

func (z Size) String() string {
	return fmt.Sprintf("%d faults, %.1f s of faults, the last ending at %.1f s", z.Faults, z.FaultTime.Seconds(), z.End.Seconds())
}
