package matrix

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bootingRun stands in for `gregor run` whose cluster does not boot the
// first $FAILS times (exit 5, nothing tested), counting its attempts in
// $COUNT, then finishes as fakeRun does.
const bootingRun = `#!/bin/sh
echo x >> "$COUNT"
if [ "$(wc -l < "$COUNT")" -le "$FAILS" ]; then echo "gregor: boot: not ready" >&2; exit 5; fi
` + "exec sh -c \"$FAKE\" fake \"$@\"\n"

// TestRunnerBootsAgain: a cell whose cluster did not boot is started again,
// at most bootAttempts times in all: one that boots on its second attempt
// is judged on that run; one that never boots is crashed after exactly
// bootAttempts attempts, saying so. A run that booted and failed otherwise
// (exit 1, say) is never repeated.
func TestRunnerBootsAgain(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "gregor")
	if err := os.WriteFile(bin, []byte(bootingRun), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE", fakeRun)
	s := &Spec{Name: "m", Configs: []Settings{{Acks: "all"}}, Nemeses: []Nemesis{{Name: "none", Kinds: []string{"none"}}}, Seeds: Seeds{1}}
	cells, err := s.Cells()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fails, attempts int
		valid           string
	}{{1, 2, "true"}, {10, bootAttempts, "crashed"}} {
		count := filepath.Join(t.TempDir(), "count")
		t.Setenv("COUNT", count)
		t.Setenv("FAILS", string(rune('0'+min(tc.fails, 9))))
		out := (&Runner{Binary: bin, Out: t.TempDir(), Parallel: 1}).Run(context.Background(), cells)
		b, _ := os.ReadFile(count)
		if n := strings.Count(string(b), "x"); n != tc.attempts {
			t.Errorf("cluster failing to boot %d times: %d attempts, want %d", tc.fails, n, tc.attempts)
		}
		if out[0].Valid != tc.valid {
			t.Errorf("cluster failing to boot %d times: cell %q (%s), want %q", tc.fails, out[0].Valid, out[0].Log, tc.valid)
		}
	}
}
