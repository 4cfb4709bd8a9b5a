package harness

import (
	"errors"
	"io"
	"path/filepath"

	"gregor/checker"
	"gregor/history"
	"gregor/reports"
)

// CheckOptions tune CheckRun.
type CheckOptions struct {
	// Config is a test.json to use instead of the one beside the history.
	Config string
	// Checker tunes the check; its ConfigNote and Metadata come from the
	// run, and an empty OutDir is the run directory.
	Checker checker.Options
	// Store writes results.json and report.html into the run directory.
	Store bool
	// Faults says how the runtime made each fault, for the report.
	Faults string
	// Warnings of the run (a schedule not applied as drawn) join the
	// result's warnings.
	Warnings []string
}

// CheckRun checks a stored run: it reads the history and what lies beside
// it (history.ReadRun: one policy for a damaged file, for every file),
// checks the history under the run's configuration and metadata, and, with
// Store, writes results.json and report.html into the run directory. The
// harness (after a run) and `gregor check` use it; a line the checker
// cannot accept is named as "FILE: line N". Warnings of what was tolerated
// lead the result's warnings.
func CheckRun(historyPath string, o CheckOptions) (*history.Run, checker.Result, error) {
	run, err := history.ReadRun(historyPath, o.Config)
	if err != nil {
		return nil, checker.Result{}, err
	}
	opts := o.Checker
	opts.ConfigNote, opts.Metadata = run.ConfigNote, run.Metadata
	if opts.OutDir == "" {
		opts.OutDir = string(run.Dir)
	}
	res, err := checker.Check(run.Ops, run.Config, opts)
	if ie, ok := errors.AsType[*checker.InputError](err); ok {
		line := 0
		if ie.Pos >= 0 && ie.Pos < len(run.Lines) {
			line = run.Lines[ie.Pos]
		}
		return run, res, &history.ParseError{File: historyPath, Line: line, Msg: ie.Error()}
	}
	if err != nil {
		return run, res, err
	}
	aw, err := readAwaited(run.Dir)
	if err != nil {
		return run, res, err
	}
	applyAwaited(&res, aw)
	res.Warnings = append(append(append([]string(nil), run.Warnings...), o.Warnings...), res.Warnings...)
	if !o.Store {
		return run, res, nil
	}
	if err := writeFileAtomic(run.Dir.Results(), func(w io.Writer) error {
		_, err := w.Write(append(res.JSON(), '\n'))
		return err
	}); err != nil {
		return run, res, err
	}
	return run, res, WriteRunReport(run, &res, reportTitle(run.Dir), o.Faults)
}

// reportTitle is "<test> <timestamp>" of a run directory.
func reportTitle(dir history.RunDir) string {
	return filepath.Base(filepath.Dir(string(dir))) + " " + filepath.Base(string(dir))
}

// WriteRunReport writes the run's report.html from a run read by
// history.ReadRun and its checker result.
// A shrink.json beside the history links the report to the run's shrunk
// form, or to its original.
func WriteRunReport(run *history.Run, res *checker.Result, title, faults string) error {
	links, err := history.ReadShrinkLinks(run.Dir)
	if err != nil {
		return err
	}
	return writeFileAtomic(run.Dir.Report(), func(w io.Writer) error {
		return reports.WriteRun(w, reports.RunInput{Title: title, Config: run.Config, Ops: run.Ops, Result: res,
			HistoryFile: history.HistoryFile, Runtime: faults, Metadata: run.Metadata, MetadataNote: run.MetadataNote,
			Shrink: links})
	})
}
