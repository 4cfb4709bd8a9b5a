package jsonl

import (
	"os"
	"path/filepath"
	"testing"
)

type ev struct{ ID string }

// TestAppendReadSkipsATornLine: lines appended read back in order, a missing
// file has none, and a torn last line (a crash mid-write) is skipped.
func TestAppendReadSkipsATornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if got, err := Read[ev](path); err != nil || got != nil {
		t.Fatalf("missing file: %v %v, want none", got, err)
	}
	for _, id := range []string{"a", "b"} {
		if err := Append(path, ev{id}); err != nil {
			t.Fatal(err)
		}
	}
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString(`{"ID":"c`)
	fh.Close()
	got, err := Read[ev](path)
	if err != nil || len(got) != 2 || got[0].ID != "a" || got[1].ID != "b" {
		t.Fatalf("read %v %v, want a, b and the torn line skipped", got, err)
	}
}
