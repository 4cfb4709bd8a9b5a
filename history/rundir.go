package history

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A run directory, as `gregor run` leaves it (DESIGN.md section 8). Every
// file name is spelled here and nowhere else:
//
//	<store>/<test>/<timestamp>/history.jsonl    the history, written as it happens
//	                          /test.json        the configuration (Config)
//	                          /metadata.jsonl   partition state samples (MetadataSample)
//	                          /results.json     the checker's result
//	                          /report.html      the run report
//	                          /schedule.json    the fault schedule, written before the faults
//	                          /run.json         the run's settings, to run it again (gregor shrink)
//	                          /shrink.json      links between a run and its shrunk form
//	                          /logs/node-N.log  every node's output
//	<store>/<test>/latest -> <timestamp>
const (
	HistoryFile  = "history.jsonl"
	ConfigFile   = "test.json"
	MetadataFile = "metadata.jsonl"
	ResultsFile  = "results.json"
	ReportFile   = "report.html"
	ScheduleFile = "schedule.json"
	SettingsFile = "run.json"
	ShrinkFile   = "shrink.json"
	LogsDir      = "logs"
	LatestLink   = "latest"
)

// RunDir is one run's directory; its methods name the files in it.
type RunDir string

func (d RunDir) file(name string) string { return filepath.Join(string(d), name) }

// History is the history's path.
func (d RunDir) History() string { return d.file(HistoryFile) }

// Config is test.json's path.
func (d RunDir) Config() string { return d.file(ConfigFile) }

// Metadata is metadata.jsonl's path.
func (d RunDir) Metadata() string { return d.file(MetadataFile) }

// Results is results.json's path.
func (d RunDir) Results() string { return d.file(ResultsFile) }

// Report is report.html's path.
func (d RunDir) Report() string { return d.file(ReportFile) }

// Schedule is schedule.json's path: the run's fault schedule
// (nemesis.ScheduleFile), written before the first fault.
func (d RunDir) Schedule() string { return d.file(ScheduleFile) }

// Settings is run.json's path: every setting of the run (harness.Config),
// so that gregor shrink can run it again.
func (d RunDir) Settings() string { return d.file(SettingsFile) }

// Shrink is shrink.json's path: the links between a failing run and the
// smallest schedule gregor shrink found for it (ShrinkLinks).
func (d RunDir) Shrink() string { return d.file(ShrinkFile) }

// Logs is the directory of the nodes' logs.
func (d RunDir) Logs() string { return d.file(LogsDir) }

// NodeLog is node id's log.
func (d RunDir) NodeLog(id int32) string {
	return filepath.Join(string(d), LogsDir, fmt.Sprintf("node-%d.log", id))
}

// LatestRun is the newest run directory under testDir (<store>/<test>):
// the one its latest link names, else the greatest timestamp (the link is
// best effort: a filesystem without symlinks has none).
func LatestRun(testDir string) (RunDir, error) {
	if target, err := os.Readlink(filepath.Join(testDir, LatestLink)); err == nil {
		if st, err := os.Stat(filepath.Join(testDir, target)); err == nil && st.IsDir() {
			return RunDir(filepath.Join(testDir, target)), nil
		}
	}
	entries, err := os.ReadDir(testDir)
	if err != nil {
		return "", err
	}
	latest := ""
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && e.Name() > latest {
			latest = e.Name()
		}
	}
	if latest == "" {
		return "", fmt.Errorf("no run directory under %s", testDir)
	}
	return RunDir(filepath.Join(testDir, latest)), nil
}

// Run is a stored run as the checker and the report read it.
type Run struct {
	// Dir holds the history; test.json and metadata.jsonl are read beside it.
	Dir RunDir
	Ops []Op
	// Lines[i] is the history line of Ops[i].
	Lines []int
	// Config is nil when there is none: every anomaly is then forbidden.
	Config *Config
	// ConfigNote says where Config came from, or why there is none.
	ConfigNote string
	// Metadata is nil without metadata.jsonl; MetadataNote then says why,
	// and otherwise what was tolerated in it (for the report).
	Metadata     []MetadataSample
	MetadataNote string
	// Warnings are what was tolerated, each naming its file and line.
	Warnings []string
}

// ReadRun reads a history and what lies beside it: test.json (configPath
// instead, when given) and metadata.jsonl. It is the one reader of a run
// directory (the harness's check, `gregor check` and the matrix use it), and
// its policy for a damaged file is the same for every file:
//
//   - the LAST line of history.jsonl or metadata.jsonl, when it has no
//     newline and does not parse, is a write a crash cut short: it is
//     dropped with a warning naming the file and the line;
//   - any other line that does not parse, an index that does not increase,
//     or an unreadable test.json is damage: a *ParseError (or, for
//     test.json, an error) naming the file and the line. Nothing after
//     damage can be trusted, so nothing is checked;
//   - a missing test.json or metadata.jsonl beside the history is no damage
//     (a bare history checked by hand; runs recorded before the sampler):
//     Run says so in ConfigNote or MetadataNote. A missing history, or a
//     missing configPath that was asked for, is an error.
func ReadRun(historyPath, configPath string) (*Run, error) {
	r := &Run{Dir: RunDir(filepath.Dir(historyPath))}
	ops, lines, warnings, err := ReadFile(historyPath)
	if err != nil {
		return nil, err
	}
	r.Ops, r.Lines, r.Warnings = ops, lines, warnings
	switch {
	case configPath != "":
		if r.Config, err = ReadConfig(configPath); err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		r.ConfigNote = "from " + configPath
	default:
		cfg, err := ReadConfig(r.Dir.Config())
		switch {
		case errors.Is(err, fs.ErrNotExist):
			r.ConfigNote = "none: no --config and no " + ConfigFile + " beside the history; every anomaly is treated as forbidden"
		case err != nil:
			return nil, fmt.Errorf("config: %w", err)
		default:
			r.Config, r.ConfigNote = cfg, "from "+ConfigFile+" beside the history"
		}
	}
	md, note, mdWarnings, err := readRunMetadata(r.Dir)
	if err != nil {
		return nil, err
	}
	r.Metadata, r.MetadataNote = md, note
	r.Warnings = append(r.Warnings, mdWarnings...)
	return r, nil
}

// ReadRunMetadata reads a run directory's metadata.jsonl by ReadRun's
// policy: a missing file gives no samples and a note saying so; a torn last
// line is dropped and noted; damage elsewhere is a *ParseError.
func ReadRunMetadata(dir RunDir) ([]MetadataSample, string, error) {
	md, note, _, err := readRunMetadata(dir)
	return md, note, err
}

func readRunMetadata(dir RunDir) (samples []MetadataSample, note string, warnings []string, err error) {
	samples, warnings, err = ReadMetadataFile(dir.Metadata())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, MetadataFile + " not found beside the history", nil, nil
	}
	if err != nil {
		return nil, "", nil, fmt.Errorf("%w (move it away to check the history without it)", err)
	}
	return samples, strings.Join(warnings, "; "), warnings, nil
}
