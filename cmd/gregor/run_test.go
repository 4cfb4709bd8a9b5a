package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gregor/nemesis"
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

// A --schedule that names kinds, a target or nodes the run does not have
// is refused before anything boots (exit 2), naming the flag that fixes it.
func TestRunRefusesScheduleThatDoesNotFit(t *testing.T) {
	f := nemesis.RecordSchedule(nemesis.Schedule{{At: time.Second, Kind: nemesis.Kill, Hold: time.Second, Pick: 1},
		{At: 3 * time.Second, Kind: nemesis.Pause, Hold: time.Second, Pick: 2}}, 5, nemesis.TargetLeader, []int32{1, 2, 3, 4, 5}, nil, nil)
	path := filepath.Join(t.TempDir(), "schedule.json")
	if err := os.WriteFile(path, f.JSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		fix  string
	}{
		{[]string{"--nodes", "5", "--nemesis", "kill", "--nemesis-target", "leader"}, "add it to --nemesis"},
		{[]string{"--nodes", "5", "--nemesis", "kill,pause"}, "give --nemesis-target leader"},
		{[]string{"--nemesis", "kill,pause", "--nemesis-target", "leader"}, "give --nodes 5"},
	}
	for _, c := range cases {
		root := newRoot()
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		root.SetArgs(append([]string{"run", "--runtime", "no-such-runtime", "--store", t.TempDir(), "--schedule", path}, c.args...))
		err := root.Execute()
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != checkBadInput || !strings.Contains(err.Error(), c.fix) {
			t.Errorf("%v: got %v, want exit 2 naming %q", c.args, err, c.fix)
		}
	}
	// The same file with the flags it fits gets past validation: the
	// error is the made-up runtime's.
	root := newRoot()
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	root.SetArgs([]string{"run", "--runtime", "no-such-runtime", "--store", t.TempDir(), "--schedule", path,
		"--nodes", "5", "--nemesis", "kill,pause", "--nemesis-target", "leader"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "no-such-runtime") {
		t.Errorf("a fitting schedule: got %v, want the runtime's error", err)
	}
}
