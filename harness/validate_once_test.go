package harness

import (
	"os"
	"testing"

	"gregor/history"
	"gregor/nemesis"
)

// A run validates its settings once and reads --schedule once: the
// schedule Validate read is the one the run replays, and a Config that
// Validate passed is not validated again by Run's Test.Validate.
func TestScheduleReadOnce(t *testing.T) {
	c := DefaultConfig()
	c.Nemeses = []string{"kill"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	_, drawn, err := c.schedule()
	if err != nil {
		t.Fatal(err)
	}
	dir := history.RunDir(t.TempDir())
	if err := writeSchedule(dir, drawn); err != nil {
		t.Fatal(err)
	}
	c.Schedule = dir.Schedule()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if !c.validated {
		t.Fatal("a Config Validate passed is not marked validated")
	}
	if err := os.Remove(dir.Schedule()); err != nil {
		t.Fatal(err)
	}
	s, f, err := c.schedule()
	if err != nil {
		t.Fatalf("the run read --schedule again: %v", err)
	}
	if f.Source != nemesis.SourceReplayed || len(s) != len(drawn.Steps) {
		t.Fatalf("replayed %d steps (source %s), drew %d", len(s), f.Source, len(drawn.Steps))
	}
	// Validating again reads the file again: it is gone.
	if err := c.Validate(); err == nil {
		t.Fatal("Validate did not read --schedule")
	}
}
