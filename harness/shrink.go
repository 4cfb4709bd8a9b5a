package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"gregor/checker"
	"gregor/history"
	"gregor/nemesis"
	"gregor/runtime"
)

// ShrinkOptions are `gregor shrink`'s settings.
type ShrinkOptions struct {
	Runtime runtime.Runtime
	Binary  string
	// MaxReplays bounds the candidate schedules replayed (each run up to
	// Tries times: at most MaxReplays*Tries runs); Budget bounds the
	// wall-clock time of the search (a replay running when it ends is
	// stopped, and proves nothing).
	MaxReplays int
	Budget     time.Duration
	// Tries is how often a candidate is run before it is taken to pass
	// (one failing try counts: faults are nondeterministic); at least 1.
	Tries int
	// Tail is the fault phase left after the last fault ends: a replay's
	// --time-limit is the end of its last fault plus Tail, at most the
	// original's.
	Tail time.Duration
	// Anomalies a replay must show (any of them) to count as still
	// failing; nil: the original's forbidden anomalies.
	Anomalies []string
	// Log receives a line per replay (nil: none).
	Log          io.Writer
	CheckTimeout time.Duration
	// Started, if set, names each replay's run directory (Test.Started):
	// the sim's, whose clock is virtual.
	Started func() time.Time
}

// ShrinkDefaults are gregor shrink's defaults.
var ShrinkDefaults = ShrinkOptions{MaxReplays: 12, Budget: 15 * time.Minute, Tries: 1, Tail: 3 * time.Second}

// ShrinkReport is what a shrink found. Shrunk is "" when no smaller
// schedule failed within the budget.
type ShrinkReport struct {
	Original, Shrunk history.RunDir
	Seed             int64
	Links            history.ShrinkLinks
	// Before and After are the schedules (After: nil when none failed).
	Before, After nemesis.Schedule
}

// replay runs one candidate; a test replaces it to shrink without a
// cluster.
var replay = Run

// ErrNothingToShrink is a run that did not fail.
var ErrNothingToShrink = errors.New("nothing to shrink")

// Shrink replays a failing run's fault schedule with faults removed and
// shortened (nemesis.Shrink: ddmin over the steps, then halving holds and
// quiet times), each replay a full run with the original's settings and
// seed (run.json) and the candidate schedule (--schedule), until the
// replay budget or the time budget is spent. A replay still fails when its
// result shows one of the anomalies (forbidden). The smallest failing
// replay is stored as a new run, <store>/<test>-shrunk/<timestamp>, beside
// the original, and both runs' shrink.json and reports link each other.
// Replays run in a hidden directory of the store, removed at the end.
func Shrink(ctx context.Context, dir history.RunDir, o ShrinkOptions) (*ShrinkReport, error) {
	if o.Runtime == nil || o.MaxReplays < 1 || o.Tries < 1 || o.Budget <= 0 || o.Tail <= 0 {
		return nil, fmt.Errorf("shrink: a runtime, --max-replays >= 1, --tries >= 1, a positive --budget and --tail are needed")
	}
	dir = history.RunDir(filepath.Clean(string(dir)))
	settings, err := ReadSettings(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s has no %s: it was recorded before runs kept their settings, and cannot be replayed; run it again with this gregor", dir, history.SettingsFile)
	}
	if err != nil {
		return nil, err
	}
	sf, err := nemesis.ReadScheduleFile(dir.Schedule())
	if err != nil {
		return nil, fmt.Errorf("%w (a run recorded before schedule.json cannot be shrunk)", err)
	}
	orig, err := sf.Schedule()
	if err != nil {
		return nil, err
	}
	res, err := checker.ReadResultFile(dir.Results())
	if err != nil {
		return nil, fmt.Errorf("%w (a run without a result was not checked: nothing to shrink)", err)
	}
	anomalies, err := shrinkAnomalies(res, o.Anomalies)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	base := settings.Config
	test := filepath.Base(filepath.Dir(string(dir)))
	store := filepath.Dir(filepath.Dir(string(dir)))
	rep := &ShrinkReport{Original: dir, Seed: base.Seed, Before: orig, Links: history.ShrinkLinks{Anomalies: anomalies,
		Before: scheduleSize(orig, base.TimeLimit)}}
	ops, _, _, err := history.ReadFile(dir.History())
	if err != nil {
		return nil, err
	}
	rep.Links.Before.InForce = history.Duration(history.FaultsInForce(ops))
	// A replay's fault phase ends Tail after its last fault ends, as long
	// as that fault took in the original: a scenario's story outlasts its
	// hold (it waits for the cluster), and a phase cut short would cut the
	// story, not test it.
	over := overruns(orig, ops)
	limit := func(s nemesis.Schedule) time.Duration {
		var end time.Duration
		for _, st := range s {
			end = max(end, st.At+st.Hold+over[st.Pick])
		}
		return min(base.TimeLimit, end+o.Tail)
	}

	work, err := os.MkdirTemp(store, ".shrink-")
	if err != nil {
		return nil, storeErr(store, err)
	}
	defer os.RemoveAll(work)
	brokers, voters := base.nodeIDs()
	type kept struct {
		dir    string
		faults string
	}
	failing := map[string]kept{} // candidate -> its failing run
	n := 0
	oracle := func(ctx context.Context, cand nemesis.Schedule) (bool, error) {
		n++
		path := filepath.Join(work, fmt.Sprintf("schedule-%03d.json", n))
		f := nemesis.RecordSchedule(cand, base.Seed, nemesis.Target(base.Target), brokers, voters, base.stepParams)
		f.Source, f.From = nemesis.SourceShrunk, absPath(dir.Schedule())
		if err := os.WriteFile(path, f.JSON(), 0o644); err != nil {
			return false, storeErr(path, err)
		}
		cfg := base
		// Each replay its own name, so its cluster's too (a runtime may
		// keep a cluster's directory by name); short, as cluster names
		// must be. The one kept is moved to <test>-shrunk.
		cfg.Store, cfg.Name, cfg.Schedule, cfg.TimeLimit = work, fmt.Sprintf("shrink-r%d", n), path, limit(cand)
		var lastErr error
		for range o.Tries {
			// Bounded: boot, the phases' own bounds, the check, teardown.
			bound := cfg.WarmUp + cfg.TimeLimit + cfg.RecoveryTimeout + cfg.FinalReadTimeout + 4*time.Minute
			rctx, cancel := context.WithTimeout(ctx, bound)
			t := Test{Config: cfg, Runtime: o.Runtime, Binary: o.Binary, CheckTimeout: o.CheckTimeout}
			if o.Started != nil {
				t.Started = o.Started()
			}
			r, err := replay(rctx, t)
			cancel()
			if err == nil && r.Checked && showsAny(r.Result, anomalies) {
				failing[fmt.Sprint(cand)] = kept{r.Dir, r.Faults}
				return true, nil
			}
			if r != nil && r.Dir != "" {
				os.RemoveAll(r.Dir)
			}
			if err != nil {
				lastErr = err
			}
			if ctx.Err() != nil {
				break
			}
		}
		return false, lastErr
	}
	logf := func(s string) {
		if o.Log != nil {
			fmt.Fprintln(o.Log, "gregor shrink:", s)
		}
	}
	bctx, cancel := context.WithTimeout(ctx, o.Budget)
	defer cancel()
	found, err := nemesis.Shrink(bctx, orig, oracle, nemesis.ShrinkOptions{MaxReplays: o.MaxReplays, Log: logf})
	if err != nil {
		return nil, err
	}
	rep.Links.Replays, rep.Links.Exhausted = found.Replays, found.Exhausted
	if !found.Found {
		return rep, nil
	}
	best := failing[fmt.Sprint(found.Schedule)]
	rep.After = found.Schedule
	rep.Links.After = scheduleSize(found.Schedule, limit(found.Schedule))
	return rep, rep.store(best.dir, best.faults, store, test+"-shrunk")
}

// store moves the smallest failing replay into the store, links the two
// runs both ways (shrink.json) and writes both reports again with the
// links.
func (rep *ShrinkReport) store(src, faults, store, test string) error {
	base := filepath.Join(store, test)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return storeErr(base, err)
	}
	dst := history.RunDir(filepath.Join(base, filepath.Base(src)))
	if err := os.Rename(src, string(dst)); err != nil {
		return storeErr(string(dst), err)
	}
	pointLatest(base, filepath.Base(src))
	rep.Shrunk = dst
	// Its settings name itself: run again, it replays its own schedule.
	st, err := ReadSettings(dst)
	if err != nil {
		return err
	}
	st.Config.Store, st.Config.Name, st.Config.Schedule = store, test, absPath(dst.Schedule())
	if err := writeSettings(dst, &st.Config, st.Runtime); err != nil {
		return err
	}
	rel := func(from, to history.RunDir) string {
		r, err := filepath.Rel(absPath(string(from)), absPath(string(to)))
		if err != nil {
			return absPath(string(to))
		}
		return filepath.ToSlash(r)
	}
	if ops, _, _, err := history.ReadFile(dst.History()); err == nil {
		rep.Links.After.InForce = history.Duration(history.FaultsInForce(ops))
	}
	to, from := rep.Links, rep.Links
	to.ShrunkTo, from.ShrunkFrom = rel(rep.Original, dst), rel(dst, rep.Original)
	if err := history.WriteShrinkLinks(rep.Original, &to); err != nil {
		return storeErr(rep.Original.Shrink(), err)
	}
	if err := history.WriteShrinkLinks(dst, &from); err != nil {
		return storeErr(dst.Shrink(), err)
	}
	// The shrunk run is checked again where it now lies (its result names
	// files in its directory), which writes its report with the link.
	if _, _, err := CheckRun(dst.History(), CheckOptions{Store: true, Faults: faults}); err != nil {
		return fmt.Errorf("check of the shrunk run: %w", err)
	}
	// The original keeps its result; only its report is written again. Its
	// runtime's fault line is the replays' (the same runtime on this host).
	run, err := history.ReadRun(rep.Original.History(), "")
	if err != nil {
		return err
	}
	res, err := checker.ReadResultFile(rep.Original.Results())
	if err != nil {
		return err
	}
	return WriteRunReport(run, res, reportTitle(rep.Original), faults)
}

// shrinkAnomalies are the anomalies a replay must show: want, each
// forbidden in the original's result, else all the original's forbidden
// anomalies.
func shrinkAnomalies(res *checker.Result, want []string) ([]string, error) {
	if res.Valid != checker.ValidFalse || len(res.Forbidden) == 0 {
		return nil, fmt.Errorf("%w: the run is valid %s, with no forbidden anomaly", ErrNothingToShrink, res.Valid)
	}
	var forbidden []string
	for _, a := range checker.AnomalyNames {
		if _, ok := res.Forbidden[a]; ok {
			forbidden = append(forbidden, a)
		}
	}
	if len(want) == 0 {
		return forbidden, nil
	}
	for _, a := range want {
		if !slices.Contains(forbidden, a) {
			return nil, fmt.Errorf("--anomaly %s: the run's forbidden anomalies are %v; choose from them", a, forbidden)
		}
	}
	return want, nil
}

// showsAny reports whether res shows one of anomalies, forbidden.
func showsAny(res checker.Result, anomalies []string) bool {
	for _, a := range anomalies {
		if _, ok := res.Forbidden[a]; ok && res.Counts[a] > 0 {
			return true
		}
	}
	return false
}

func scheduleSize(s nemesis.Schedule, limit time.Duration) history.ScheduleSize {
	z := s.Size()
	return history.ScheduleSize{Faults: z.Faults, FaultTime: history.Duration(z.FaultTime),
		End: history.Duration(min(z.End, limit)), TimeLimit: history.Duration(limit)}
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// overruns are, by step pick, how much longer than its hold each step of
// sched took in the run whose history is ops: from its first nemesis
// operation to its end.
func overruns(sched nemesis.Schedule, ops []history.Op) map[uint64]time.Duration {
	start := map[int]int64{}
	out := map[uint64]time.Duration{}
	for _, op := range ops {
		if op.Process != history.Nemesis {
			continue
		}
		v, err := history.ParseNemesis(&op)
		if err != nil || v.Step == nil || *v.Step < 0 || *v.Step >= len(sched) {
			continue
		}
		i := *v.Step
		if _, ok := start[i]; !ok {
			start[i] = op.Time
		}
		if history.IsEndVerb(op.F) {
			st := sched[i]
			out[st.Pick] = max(0, time.Duration(op.Time-start[i])-st.Hold)
		}
	}
	return out
}
