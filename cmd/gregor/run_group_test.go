package main

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// Group settings without the group workload, and impossible group settings,
// are refused before anything boots, with the fix.
func TestRunRefusesBadGroupSettings(t *testing.T) {
	cases := []struct {
		args []string
		fix  string
	}{
		{[]string{"--commit-mode", "after"}, "needs --workload group"},
		{[]string{"--static"}, "needs --workload group"},
		{[]string{"--nemesis", "consumer-join"}, "add --workload group"},
		{[]string{"--workload", "nope"}, "give queue or group"},
		{[]string{"--workload", "group", "--commit-mode", "sometimes"}, "give auto, before, after or on-revoked"},
		{[]string{"--workload", "group", "--assignor", "roundrobin"}, "give range, sticky or cooperative-sticky"},
		{[]string{"--workload", "group", "--failure-handling", "ignore"}, "give swallow or retry"},
		{[]string{"--workload", "group", "--failure-rate", "1.5"}, "probability"},
		{[]string{"--workload", "group", "--consumers", "0"}, "at least 1 consumer"},
	}
	for _, c := range cases {
		root := newRoot()
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		root.SetArgs(append([]string{"run", "--runtime", "no-such-runtime", "--store", t.TempDir()}, c.args...))
		err := root.Execute()
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != checkBadInput || !strings.Contains(err.Error(), c.fix) {
			t.Errorf("%v: got %v, want exit 2 naming %q", c.args, err, c.fix)
		}
	}
}
