package main

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// Impossible configurations are refused before anything boots (the runtime
// named does not exist, so reaching it would be a different error), with
// exit status 2 and the fix in the message.
func TestRunRefusesImpossibleConfigs(t *testing.T) {
	cases := []struct {
		args []string
		fix  string
	}{
		{[]string{"--rf", "2", "--min-isr", "3"}, "lower --min-isr"},
		{[]string{"--nodes", "3", "--rf", "4"}, "raise --nodes"},
		{[]string{"--acks", "0", "--idempotence"}, "use --acks all or drop --idempotence"},
		{[]string{"--acks", "1", "--idempotence"}, "requires acks=all"},
		{[]string{"--nemesis", "kill,explode"}, "choose from kill"},
		{[]string{"--nemesis-target", "leeder"}, "choose from random"},
		{[]string{"--nemesis", "power-loss"}, "add --lazyfs"},
		{[]string{"--nemesis-target", "coordinator"}, "add --workload group"},
		{[]string{"--acks", "2"}, "give 0, 1 or all"},
		{[]string{"--partition-shapes", "isolate-leader,triangle"}, "choose from isolate-one"},
		{[]string{"--link-delay", "2s"}, "give 0 to 500ms"},
		{[]string{"--dedicated-controllers"}, "add --controllers 1"},
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
