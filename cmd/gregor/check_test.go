package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gregor check reads a run directory by the one policy (history.ReadRun): a
// torn last line of metadata.jsonl is a warning and the check goes on; a
// damaged line before it is exit 2 naming the file and the line, as a
// damaged history line is.
func TestCheckDamagedRunFiles(t *testing.T) {
	hist, err := os.ReadFile(filepath.Join("..", "..", "checker", "testdata", "clean.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	sample := `{"time":1,"broker":1,"controller":1,"partitions":[{"partition":0,"leader":1,"leader_epoch":0,"replicas":[1],"isr":[1]}]}` + "\n"
	lines := strings.SplitAfter(string(hist), "\n")
	cases := []struct {
		name      string
		history   string
		metadata  string
		code      int
		naming    string // in the error (exit 2) or a warning
		wantError bool
	}{
		{"torn metadata tail", string(hist), sample + `{"time":2,"bro`, checkValid, "metadata.jsonl: line 2: truncated last line", false},
		{"damaged metadata line", string(hist), sample + "garbage\n" + sample, checkBadInput, "metadata.jsonl: line 2", true},
		{"torn history tail", string(hist) + `{"index":13,"ti`, sample, checkValid, "history.jsonl: line 14: truncated last line", false},
		{"damaged history line", lines[0] + "garbage\n" + strings.Join(lines[1:], ""), "", checkBadInput, "history.jsonl: line 2", true},
	}
	for _, c := range cases {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(c.history), 0o644); err != nil {
			t.Fatal(err)
		}
		if c.metadata != "" {
			if err := os.WriteFile(filepath.Join(dir, "metadata.jsonl"), []byte(c.metadata), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		root := newRoot()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs([]string{"check", filepath.Join(dir, "history.jsonl")})
		err := root.Execute()
		code := checkValid
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		if code != c.code {
			t.Errorf("%s: exit %d (%v), want %d", c.name, code, err, c.code)
			continue
		}
		said := errOut.String()
		if c.wantError {
			said = err.Error()
		}
		if !strings.Contains(said, c.naming) {
			t.Errorf("%s: %q does not name %q", c.name, said, c.naming)
		}
	}
}
