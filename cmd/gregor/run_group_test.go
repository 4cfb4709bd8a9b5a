package main

import (
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"gregor/checker"
	"gregor/history"
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
		{[]string{"--nemesis", "pause-share-consumer"}, "acts on a share group's consumers: add --workload share"},
		{[]string{"--workload", "nope"}, "give queue, group, txn, eos, share or authz"},
		{[]string{"--workload", "group", "--commit-mode", "sometimes"}, "give auto, auto-greedy, before, after or on-revoked"},
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

// Issue 16's false alarm, on its own flags and seed: a commit-before
// consumer whose commit ended unknown (NETWORK) went on to process its batch,
// lost its partitions, was given them again and processed the same records
// a second time: "redelivered", forbidden under commit-before. The
// application commits with commitSync and processes only what it committed
// (seed 002), so that run must be valid, and must have done the work that
// made it fail: consumers crashed and records were processed.
func TestGroupCommitBeforeFalseAlarm(t *testing.T) {
	if testing.Short() {
		t.Skip("a 25 s chaos run on 3 brokers")
	}
	t.Setenv("GREGOR_BINARY", gregorBinary(t))
	store := t.TempDir()
	root := newRoot()
	var out strings.Builder
	root.SetOut(&out)
	root.SetErr(io.Discard)
	root.SetArgs(strings.Fields(`run --runtime process --nodes 3 --controllers 1 --dedicated-controllers --time-limit 25s
		--acks all --min-isr 2 --rf 3 --partitions 3 --idempotence --concurrency 16
		--nemesis kill,partition,pause,power-loss --nemesis-target leader --partition-shapes isolate-leader
		--nemesis-interval 2s --nemesis-duration 3s --lazyfs --fsync never --seed 1
		--workload group --commit-mode before --nemesis client-crash --seed 1 --store ` + store))
	err := root.Execute()
	res := readResults(t, store)
	if err != nil || res.Valid != checker.ValidTrue {
		t.Fatalf("run: %v; valid %v, forbidden %v, counts %v\n%s", err, res.Valid, res.Forbidden, res.Counts, out.String())
	}
	if n := res.Counts[checker.Redelivered]; n != 0 {
		t.Fatalf("%d redelivered under commit-before", n)
	}
	if len(res.Groups) != 1 || res.Groups[0].Processed == 0 || len(res.Groups[0].Ends) == 0 {
		t.Fatalf("the run did not exercise the group: %+v", res.Groups)
	}
}

// readResults reads the results.json of the one run under store.
func readResults(t *testing.T, store string) checker.Result {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(store, "*", history.LatestLink, history.ResultsFile))
	if len(paths) != 1 {
		t.Fatalf("%d %s under %s, want 1", len(paths), history.ResultsFile, store)
	}
	res, err := checker.ReadResultFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	return *res
}
