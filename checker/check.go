package checker

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"gregor/history"
)

// Options tune a check. The zero value is usable.
type Options struct {
	// MaxExamples per anomaly (default 8); counts are always complete.
	MaxExamples int
	// KeyTimeout is porcupine's time budget per key (default 30s). A key that
	// runs out is "unknown", never a pass.
	KeyTimeout time.Duration
	// Window is the target number of operations per porcupine window
	// (default 256). See linear.go.
	Window int
	// OutDir receives porcupine's HTML visualization of each failing key;
	// empty skips them.
	OutDir string
	// Workers checking keys in parallel (default GOMAXPROCS).
	Workers int
	// ConfigNote overrides the result's note on where the configuration came
	// from (the CLI names the file).
	ConfigNote string
	// Metadata are the run's metadata.jsonl samples, if any: the
	// under-min-isr-ack check needs them (and is skipped without).
	Metadata []history.MetadataSample
}

func (o *Options) defaults() {
	if o.MaxExamples <= 0 {
		o.MaxExamples = 8
	}
	if o.KeyTimeout <= 0 {
		o.KeyTimeout = 30 * time.Second
	}
	if o.Window <= 0 {
		o.Window = 256
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
}

// Check checks a history recorded under cfg (nil: unknown configuration,
// every anomaly forbidden). The error is an *InputError when the history
// breaks the format's rules so that no verdict is possible.
//
// valid is false when a forbidden anomaly was found; "unknown" when none was
// but a check could not finish (porcupine's budget) or no poll returned a
// record (a checker that never saw a read must not say true); true
// otherwise.
func Check(ops []history.Op, cfg *history.Config, opts Options) (Result, error) {
	opts.defaults()
	calls, err := pair(ops)
	if err != nil {
		return Result{}, err
	}
	ix, err := buildIndex(calls, opts.Workers)
	if err != nil {
		return Result{}, err
	}
	ix.stats.Ops = len(ops)
	col := newCollector(opts.MaxExamples)
	// porcupine's per-key checks run on their workers meanwhile: they only
	// read the index, and their findings join the collector afterwards, in
	// key order, where they always did.
	linear := ix.startLinear(&opts)
	// So do the figures, which read the index and report nothing to col.
	var avail Availability
	var groups []GroupFigures
	figures := make(chan struct{})
	go func() {
		defer close(figures)
		avail, groups = availability(ix), groupFigures(ix)
	}()
	// And checkOrder, whose anomalies (nonmonotonic-send, nonmonotonic-poll,
	// poll-skip) no other check reports: its own collector joins col whole.
	orderCol := newCollector(opts.MaxExamples)
	order := make(chan struct{})
	go func() {
		defer close(order)
		checkOrder(ix, orderCol)
	}()
	checkWrites(ix, col)
	checkGroups(ix, col)
	checkCommitRegression(ix, col)
	checkMinISR(ix, col, cfg, opts.Metadata)
	txnWarnings := append(checkTxns(ix, col), checkEOS(ix, col)...)
	if err := checkShare(ix, col); err != nil {
		return Result{}, &InputError{-1, -1, err.Error()}
	}
	authzRecords, err := checkAuthz(ix, col)
	if err != nil {
		return Result{}, &InputError{-1, -1, err.Error()}
	}
	<-order
	col.merge(orderCol)
	<-figures
	ix.stats.Records += authzRecords // after the figures, which read the index
	lin, warnings := linear(col)
	warnings = append(warnings, txnWarnings...)

	res := Result{
		Anomalies:       col.examples,
		Counts:          col.counts,
		Evidence:        col.evidence,
		Forbidden:       map[string]string{},
		Allowed:         map[string]string{},
		Expected:        Expect(cfg),
		Linearizability: lin,
		Availability:    avail,
		Groups:          groups,
		Stats:           ix.stats,
		Warnings:        warnings,
	}
	switch {
	case opts.ConfigNote != "":
		res.ConfigNote = opts.ConfigNote
	case cfg == nil:
		res.ConfigNote = "none: every anomaly is treated as forbidden"
	default:
		res.ConfigNote = "given"
	}
	if cfg != nil {
		res.PlantedBugs = cfg.PlantedBugs
	}
	for name := range res.Counts {
		v := res.Expected[name]
		if v.Allowed {
			res.Allowed[name] = "unsafe configuration demonstrated: " + v.Reason
		} else {
			res.Forbidden[name] = v.Reason
		}
	}
	for _, k := range slices.Sorted(mapKeys(lin)) {
		if lin[k].Status == "unknown" {
			res.UnknownReasons = append(res.UnknownReasons, fmt.Sprintf("key %s: linearizability unknown: %s", k, lin[k].Note))
		}
	}
	if ix.stats.Records == 0 {
		res.UnknownReasons = append(res.UnknownReasons, "no poll returned a record: nothing was read, so nothing could be checked")
	}
	switch {
	case len(res.Forbidden) > 0:
		res.Valid = ValidFalse
	case len(res.UnknownReasons) > 0:
		res.Valid = ValidUnknown
	default:
		res.Valid = ValidTrue
	}
	return res, nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// startLinear runs porcupine on every key, Workers at a time; the function
// it returns waits for them and adds their findings to col in key order.
func (ix *index) startLinear(opts *Options) func(col *collector) (map[string]KeyLinearizability, []string) {
	outcomes := make([]linOutcome, len(ix.order))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(opts.Workers, max(len(ix.order), 1)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				k := ix.keys[ix.order[i]]
				res, hist, win := ix.checkKeyLinear(k, opts)
				o := linOutcome{res: res}
				if win != nil {
					ex := ix.linExample(k, win, 32)
					if opts.OutDir != "" {
						path, err := ix.visualize(k, win, hist, opts)
						o.err = err
						ex.Visualization, o.res.Visualization = path, path
					}
					o.ex = &ex
				}
				outcomes[i] = o
			}
		}()
	}
	go func() {
		for i := range ix.order {
			next <- i
		}
		close(next)
	}()
	return func(col *collector) (map[string]KeyLinearizability, []string) {
		wg.Wait()
		return ix.mergeLinear(col, outcomes)
	}
}

// linOutcome is one key's porcupine verdict.
type linOutcome struct {
	res KeyLinearizability
	ex  *Example
	err error
}

// mergeLinear adds the keys' outcomes to col in key order.
func (ix *index) mergeLinear(col *collector, outcomes []linOutcome) (map[string]KeyLinearizability, []string) {
	lin := make(map[string]KeyLinearizability, len(ix.order))
	var warnings []string
	for i, name := range ix.order {
		o := outcomes[i]
		lin[name] = o.res
		if o.ex != nil {
			ex := *o.ex
			col.add(Nonlinearizable, func() Example { return ex })
		}
		if o.err != nil {
			warnings = append(warnings, fmt.Sprintf("key %s: visualization not written: %v", name, o.err))
		}
	}
	return lin, warnings
}
