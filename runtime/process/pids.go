package process

import (
	"os"
	"path/filepath"
	"strings"
)

// ProcessesMentioning lists the pids whose command line contains s: a
// broker's command line names its data directory, which holds the
// cluster's name, so tests use it to show that nothing a run started is
// left. Zombies (an empty cmdline) and processes gone meanwhile are
// skipped; an unreadable /proc is an error, never an empty answer.
func ProcessesMentioning(s string) ([]string, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range procs {
		b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue // not a pid, gone, or a zombie
		}
		if strings.Contains(string(b), s) {
			out = append(out, p.Name())
		}
	}
	return out, nil
}
