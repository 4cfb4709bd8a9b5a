package harness

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gregor/checker"
	"gregor/history"
)

// CheckRun, as the harness calls it after a run, reads the stored run by
// the one policy (history.ReadRun): a torn last line of metadata.jsonl is
// tolerated, the results and report are written, and the warning names the
// file; a damaged line before it fails the check with a *history.ParseError
// naming file and line, and nothing is written (a note, as it was, would
// hide that the under-min-isr-ack check lost its input).
func TestCheckRunDamagePolicy(t *testing.T) {
	hist, err := os.ReadFile(filepath.Join("..", "checker", "testdata", "clean.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	sample := `{"time":1,"broker":1,"controller":1,"partitions":[{"partition":0,"leader":1,"leader_epoch":0,"replicas":[1],"isr":[1]}]}` + "\n"
	write := func(metadata string) history.RunDir {
		d := history.RunDir(t.TempDir())
		if err := os.WriteFile(d.History(), hist, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(d.Metadata(), []byte(metadata), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}

	d := write(sample + `{"time":2,"bro`)
	_, res, err := CheckRun(d.History(), CheckOptions{Store: true})
	if err != nil || res.Valid != checker.ValidTrue {
		t.Fatalf("torn metadata tail: %v, valid %s", err, res.Valid)
	}
	if len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], history.MetadataFile+": line 2") {
		t.Errorf("warnings %q do not name the torn line", res.Warnings)
	}
	for _, f := range []string{d.Results(), d.Report()} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}

	d = write(sample + "garbage\n" + sample)
	_, _, err = CheckRun(d.History(), CheckOptions{Store: true})
	if pe, ok := errors.AsType[*history.ParseError](err); !ok || pe.Line != 2 || filepath.Base(pe.File) != history.MetadataFile {
		t.Fatalf("damaged metadata line: %v, want a ParseError naming %s line 2", err, history.MetadataFile)
	}
	if _, err := os.Stat(d.Results()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a damaged run got a results.json (%v)", err)
	}
}
