package matrix

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A matrix on two runtimes runs each runtime's cells in a lane of its own:
// with one worker each (-j 1), a sim cell and a process cell run at once,
// each waiting (bounded) to see the other start; the sim's at nice +10.
func TestRunnerLanesRunSideBySide(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "gregor")
	script := `#!/bin/sh
d=` + dir + `
case "$*" in *"--runtime sim"*) me=sim; other=process;; *) me=process; other=sim;; esac
touch "$d/$me"
i=0
while [ ! -e "$d/$other" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done
[ -e "$d/$other" ] && touch "$d/$me-saw"
nice > "$d/$me-nice"
exit 2
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := loadBody(t, "name: m\nconfigs: [{acks: all}]\nnemeses: [{name: none, kinds: [none]}]\nruntimes: {sim: 1, process: 1}\n")
	if err != nil {
		t.Fatal(err)
	}
	cells, err := s.Cells()
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Binary: fake, Out: filepath.Join(dir, "out"), Parallel: 1}
	out := r.Run(context.Background(), cells)
	for i, c := range out {
		if c.Runtime != cells[i].Runtime || c.Valid != "crashed" {
			t.Fatalf("cell %d: runtime %q valid %q, want %q and crashed (the fake exits 2)", i, c.Runtime, c.Valid, cells[i].Runtime)
		}
	}
	for _, rt := range []string{"sim", "process"} {
		if _, err := os.Stat(filepath.Join(dir, rt+"-saw")); err != nil {
			t.Errorf("the %s cell never saw the other runtime's running: the lanes ran one after the other", rt)
		}
	}
	prio, _ := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	own := 20 - prio
	for rt, want := range map[string]int{"sim": min(19, own+simNiceness), "process": own} {
		b, err := os.ReadFile(filepath.Join(dir, rt+"-nice"))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := strconv.Atoi(strings.TrimSpace(string(b))); got != want {
			t.Errorf("%s cell at nice %d, want %d", rt, got, want)
		}
	}
}
