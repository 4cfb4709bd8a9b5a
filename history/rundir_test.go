package history

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	rdOp0   = `{"index":0,"time":1,"process":0,"type":"invoke","f":"poll","value":[["poll"]]}` + "\n"
	rdOp1   = `{"index":1,"time":2,"process":0,"type":"ok","f":"poll","value":[["poll",{}]]}` + "\n"
	rdMd    = `{"time":1,"broker":1,"controller":1,"partitions":[{"partition":0,"leader":1,"leader_epoch":0,"replicas":[1],"isr":[1]}]}` + "\n"
	rdTorn  = `{"index":2,"ti`
	rdConf  = `{"acks":"-1","min_isr":1,"rf":1,"nemeses":[]}` + "\n"
	rdWreck = "not json\n"
)

func writeRun(t *testing.T, files map[string]string) RunDir {
	t.Helper()
	d := RunDir(t.TempDir())
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(string(d), name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// ReadRun's one policy for a damaged file, the same for the history and
// metadata.jsonl: a torn last line is dropped with a warning naming the
// file and line; damage anywhere else is a *ParseError naming both; a
// missing test.json or metadata.jsonl is a note.
func TestReadRunDamagePolicy(t *testing.T) {
	// Whole files: everything read, nothing to warn about.
	d := writeRun(t, map[string]string{HistoryFile: rdOp0 + rdOp1, ConfigFile: rdConf, MetadataFile: rdMd + rdMd})
	r, err := ReadRun(d.History(), "")
	if err != nil || len(r.Ops) != 2 || r.Config == nil || r.Config.Acks != "all" || len(r.Metadata) != 2 ||
		len(r.Warnings) != 0 || r.MetadataNote != "" || !strings.Contains(r.ConfigNote, ConfigFile) {
		t.Fatalf("whole run: %+v, %v", r, err)
	}

	// Torn last lines in both files: tolerated, each warning names its file.
	d = writeRun(t, map[string]string{HistoryFile: rdOp0 + rdOp1 + rdTorn, ConfigFile: rdConf, MetadataFile: rdMd + `{"time":2,"bro`})
	r, err = ReadRun(d.History(), "")
	if err != nil || len(r.Ops) != 2 || len(r.Metadata) != 1 || len(r.Warnings) != 2 {
		t.Fatalf("torn last lines: %+v, %v", r, err)
	}
	for i, want := range []string{HistoryFile + ": line 3", MetadataFile + ": line 2"} {
		if !strings.Contains(r.Warnings[i], want) {
			t.Errorf("warning %q does not name %q", r.Warnings[i], want)
		}
	}
	if !strings.Contains(r.MetadataNote, "truncated last line") {
		t.Errorf("metadata note %q does not tell the report about the torn line", r.MetadataNote)
	}

	// Damage before the last line: an error naming the file and the line.
	for _, c := range []struct {
		name  string
		files map[string]string
		file  string
		line  int
	}{
		{"history", map[string]string{HistoryFile: rdOp0 + rdWreck + rdOp1, ConfigFile: rdConf}, HistoryFile, 2},
		{"history, broken last line with its newline", map[string]string{HistoryFile: rdOp0 + rdTorn + "\n"}, HistoryFile, 2},
		{"metadata", map[string]string{HistoryFile: rdOp0, MetadataFile: rdMd + rdWreck + rdMd}, MetadataFile, 2},
	} {
		d := writeRun(t, c.files)
		_, err := ReadRun(d.History(), "")
		pe, ok := errors.AsType[*ParseError](err)
		if !ok || pe.Line != c.line || filepath.Base(pe.File) != c.file || !strings.Contains(err.Error(), c.file+": line") {
			t.Errorf("%s: got %v, want a ParseError naming %s line %d", c.name, err, c.file, c.line)
		}
	}

	// A damaged test.json is an error naming it; a missing one is a note.
	d = writeRun(t, map[string]string{HistoryFile: rdOp0, ConfigFile: "{"})
	if _, err := ReadRun(d.History(), ""); err == nil || !strings.Contains(err.Error(), ConfigFile) {
		t.Errorf("damaged test.json: %v", err)
	}
	d = writeRun(t, map[string]string{HistoryFile: rdOp0})
	r, err = ReadRun(d.History(), "")
	if err != nil || r.Config != nil || !strings.Contains(r.ConfigNote, "forbidden") || !strings.Contains(r.MetadataNote, "not found") {
		t.Fatalf("bare history: %+v, %v", r, err)
	}
	// A configuration asked for and missing is an error.
	if _, err := ReadRun(d.History(), filepath.Join(string(d), "nope.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing --config: %v", err)
	}
}

// LatestRun follows the latest link, and without one finds the newest
// timestamp directory.
func TestLatestRun(t *testing.T) {
	test := t.TempDir()
	for _, stamp := range []string{"20240101T000000.000Z", "20250101T000000.000Z"} {
		if err := os.Mkdir(filepath.Join(test, stamp), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if d, err := LatestRun(test); err != nil || filepath.Base(string(d)) != "20250101T000000.000Z" {
		t.Fatalf("without a link: %s, %v", d, err)
	}
	if err := os.Symlink("20240101T000000.000Z", filepath.Join(test, LatestLink)); err != nil {
		t.Fatal(err)
	}
	if d, err := LatestRun(test); err != nil || filepath.Base(string(d)) != "20240101T000000.000Z" {
		t.Fatalf("with a link: %s, %v", d, err)
	}
	if _, err := LatestRun(t.TempDir()); err == nil {
		t.Fatal("an empty test directory has no run")
	}
}
