package matrix

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// fakeRun stands in for `gregor run`: it leaves a finished run (test.json
// with the acks it was given, results.json, report.html) in --store/run/.
const fakeRun = `#!/bin/sh
while [ $# -gt 0 ]; do
  case "$1" in --store) store=$2; shift;; --acks) acks=$2; shift;; esac
  shift
done
d="$store/run/20260101T000000"
mkdir -p "$d"
printf '{"acks":"%s"}' "$acks" > "$d/test.json"
printf '{"valid":true,"counts":{"unseen":4}}' > "$d/results.json"
echo '<html></html>' > "$d/report.html"
`

// A cell carries its run's acks from test.json, not from its label: the
// index says lost acks are n/a at acks=0 by it.
func TestRunnerCellAcks(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "gregor")
	if err := os.WriteFile(bin, []byte(fakeRun), 0o755); err != nil {
		t.Fatal(err)
	}
	s := &Spec{Name: "m", Configs: []Settings{{Acks: "0"}, {Acks: "all"}}, Nemeses: []Nemesis{{Name: "none", Kinds: []string{"none"}}}, Seeds: Seeds{1}}
	cells, err := s.Cells()
	if err != nil {
		t.Fatal(err)
	}
	cells[0].Label = "a row named without its acks"
	out := (&Runner{Binary: bin, Out: t.TempDir(), Parallel: 1}).Run(context.Background(), cells)
	if out[0].Acks != "0" || !out[0].AcksZero() || out[1].Acks != "all" || out[1].AcksZero() {
		t.Fatalf("cells' acks %q and %q (%+v), want 0 and all from test.json", out[0].Acks, out[1].Acks, out)
	}
}
