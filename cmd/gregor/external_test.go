package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gregor/history"
)

// upCluster starts `gregor up --name NAME` in another process, as a user
// would, and returns its cluster.json once it is written; the cluster is
// stopped (SIGINT) at the end of the test.
func upCluster(t *testing.T, bin, name string, args ...string) upState {
	t.Helper()
	path := filepath.Join(controlDir(name), controlFile)
	var st upState
	startUp(t, bin, name, args, "wrote no "+path, func(string) bool {
		b, err := os.ReadFile(path)
		return err == nil && json.Unmarshal(b, &st) == nil && len(st.Nodes) == 3
	})
	return st
}

// startUp starts `gregor up` with args in another process, stopped
// (SIGINT) at the test's end, and waits up to 60 s until ready says so of
// its output so far (missing names what never came).
func startUp(t *testing.T, bin, name string, args []string, missing string, ready func(out string) bool) *syncBuffer {
	t.Helper()
	out := &syncBuffer{}
	cmd := exec.Command(bin, append([]string{"up", "--name", name, "--runtime", "process", "--nodes", "3"}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	deadline := time.After(60 * time.Second)
	for !ready(out.String()) {
		select {
		case err := <-exited:
			t.Fatalf("gregor up exited (%v):\n%s", err, out.String())
		case <-deadline:
			t.Fatalf("gregor up %s within 60s:\n%s", missing, out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return out
}

// faultFile writes a fault file for an up cluster: kill by pid, the rest
// through gregor node.
func faultFile(t *testing.T, bin, name string) string {
	t.Helper()
	node := fmt.Sprintf("%s node %%s {{.NodeID}} --cluster %s", bin, name)
	body := fmt.Sprintf(`timeout: 30s
commands:
  kill: "kill -9 $(%s)"
  start: "%s"
  pause: "%s"
  resume: "%s"
  isolate: "%s --from {{.Peers}}"
  heal: "%s"
`, fmt.Sprintf(node, "pid"), fmt.Sprintf(node, "start"), fmt.Sprintf(node, "pause"), fmt.Sprintf(node, "resume"),
		fmt.Sprintf(node, "isolate"), fmt.Sprintf(node, "heal"))
	p := filepath.Join(t.TempDir(), "faults.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func execGregor(args ...string) (string, error) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(io.Discard)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return -1
}

// The leader isolated from its followers (isolate-leader, leader-targeted:
// the probe validate uses for this bug), with acks=all, min ISR 2: a
// correct cluster loses nothing; ack-before-isr acknowledges what the
// deposed leader alone holds. A hold is drawn from 4 to 12 s, past the
// cluster's 2 s session (upArgs): the majority elects a new leader while
// the old one still acknowledges.
var isolateLeaderRun = []string{"--nemesis", "partition", "--partition-shapes", "isolate-leader", "--nemesis-target", "leader",
	"--nemesis-interval", "2s", "--nemesis-duration", "8s", "--time-limit", "12s", "--warm-up", "1s",
	"--min-isr", "2", "--idempotence", "--concurrency", "16", "--rate", "300"}

// upArgs are the up clusters' timeouts: faults take effect within a hold.
var upArgs = []string{"--replica-lag-max", "2s", "--session-timeout", "2s"}

// gregor run --runtime external against a cluster `gregor up` started in
// another process with ack-before-isr planted: nothing is booted, faults
// are the fault file's commands (kill by pid, the rest through gregor
// node), recorded with their exit status in the history, and the run
// catches the bug; a 2-cell matrix through the same target shows the fault
// cell invalid and the fault-free cell valid. The refusals that need a
// cluster (a node it does not have, a nemesis without commands) exit 2
// before anything runs.
func TestExternalRuntimeCatchesAckBeforeISR(t *testing.T) {
	if testing.Short() {
		t.Skip("boots clusters")
	}
	bin := gregorBinary(t)
	t.Setenv("GREGOR_BINARY", bin)
	name := fmt.Sprintf("xt-bug-%d", os.Getpid())
	st := upCluster(t, bin, name, append([]string{"--bug", "ack-before-isr"}, upArgs...)...)
	faults := faultFile(t, bin, name)
	bs := strings.Join(st.Bootstrap, ",")
	store := t.TempDir()

	// Refusals, with the field named, exit 2.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("nodes: {7: {kill: 'true'}}\n"), 0o644)
	_, err := execGregor(append([]string{"run", "--runtime", "external", "--bootstrap", bs, "--faults", bad, "--store", store}, isolateLeaderRun...)...)
	if exitCode(err) != checkBadInput || !strings.Contains(fmt.Sprint(err), "nodes.7: the cluster has no broker 7") {
		t.Fatalf("fault file naming node 7: %v", err)
	}
	_, err = execGregor("run", "--runtime", "external", "--bootstrap", bs, "--faults", faults, "--nemesis", "slow", "--store", store)
	if exitCode(err) != checkBadInput || !strings.Contains(fmt.Sprint(err), `--nemesis slow needs a "slow" command`) {
		t.Fatalf("slow without commands: %v", err)
	}
	_, err = execGregor("run", "--runtime", "external", "--bootstrap", bs, "--rf", "4", "--store", store)
	if exitCode(err) != checkBadInput || !strings.Contains(fmt.Sprint(err), "--rf 4: the cluster Metadata lists 3 broker(s)") {
		t.Fatalf("--rf 4 on 3 brokers: %v", err)
	}
	_, err = execGregor("run", "--runtime", "external", "--bootstrap", bs, "--bug", "ack-before-isr", "--store", store)
	if exitCode(err) != checkBadInput || !strings.Contains(fmt.Sprint(err), "drop --bug") {
		t.Fatalf("--bug on an external cluster: %v", err)
	}

	out, err := execGregor(append([]string{"run", "--runtime", "external", "--bootstrap", bs, "--faults", faults, "--store", store, "--seed", "1"}, isolateLeaderRun...)...)
	if exitCode(err) != checkForbidden {
		t.Fatalf("ack-before-isr through --runtime external: exit %d (%v), want 1:\n%s", exitCode(err), err, out)
	}
	run, err := history.ReadRun(filepath.Join(store, "queue", history.LatestLink, history.HistoryFile), "")
	if err != nil {
		t.Fatal(err)
	}
	if run.Config.Runtime != "external" || run.Config.MinISR != 2 || run.Config.Nodes != 3 || len(run.Config.PlantedBugs) != 0 {
		t.Fatalf("test.json %+v: want runtime external, min ISR 2 read from the cluster, 3 nodes, no planted bug", run.Config)
	}
	isolates := 0
	for _, op := range run.Ops {
		if op.Process == history.Nemesis && op.F == history.NemesisPartition {
			if op.Error != "" {
				t.Fatalf("a fault command failed: %s", op.Error)
			}
			var v struct {
				Commands []struct {
					Verb    string
					Command string
					Exit    int
				}
			}
			json.Unmarshal(op.Raw, &v)
			for _, c := range v.Commands {
				if c.Verb != "isolate" || c.Exit != 0 || !strings.Contains(c.Command, "node isolate") {
					t.Fatalf("command recorded as %+v", c)
				}
				isolates++
			}
		}
	}
	if isolates == 0 {
		t.Fatal("no isolate command in the history")
	}

	// A 2-cell matrix against the same cluster: the fault cell catches the
	// bug, the fault-free one is valid. One cell at a time: both share the
	// cluster, so one cell's faults would reach the other's topic.
	dir := t.TempDir()
	spec := filepath.Join(dir, "m.yaml")
	os.WriteFile(spec, []byte(fmt.Sprintf(`name: external
defaults:
  runtime: external
  bootstrap: [%s]
  faults: %s
  partitions: 3
  time_limit: 12s
  rate: 300
  args: [--concurrency, "16", --warm-up, 1s]
configs:
  - {acks: all, min_isr: 2, idempotence: true}
nemeses:
  - {name: isolate-leader, kinds: [partition], shapes: [isolate-leader], target: leader, interval: 2s, duration: 8s}
  - {name: none, kinds: [none], settings: {time_limit: 4s}}
seeds: [1]
`, bs, faults)), 0o644)
	mout := filepath.Join(dir, "out")
	_, err = execGregor("matrix", "--config", spec, "--out", mout, "--parallel", "1")
	res := string(mustRead(t, filepath.Join(mout, "results.json")))
	if exitCode(err) != 1 {
		t.Fatalf("matrix: %v, want exit 1 (a cell failed):\n%s", err, res)
	}
	if strings.Count(res, `"valid": "false"`) != 1 || strings.Count(res, `"valid": "true"`) != 1 {
		t.Fatalf("matrix results: want one invalid (isolate-leader) and one valid (none) cell:\n%s", res)
	}
}

// The same run against a correct cluster is valid, under kills by pid,
// pauses and partitions. A stop whose command fails is an error operation
// with its exit status and output, and the run says its schedule was not
// applied as drawn.
func TestExternalRuntimeValidWithoutBug(t *testing.T) {
	if testing.Short() {
		t.Skip("boots clusters")
	}
	bin := gregorBinary(t)
	t.Setenv("GREGOR_BINARY", bin)
	name := fmt.Sprintf("xt-ok-%d", os.Getpid())
	// The cluster's min ISR is 2; the run does not ask for one, so the
	// topic takes the cluster's and test.json records it (the flag's
	// default is 1).
	st := upCluster(t, bin, name, append([]string{"--min-isr", "2"}, upArgs...)...)
	faults := faultFile(t, bin, name)
	f, err := os.OpenFile(faults, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, `  stop: "echo refusing to stop {{.NodeID}}; exit 7"`)
	f.Close()
	store := t.TempDir()
	// Seed 3 draws a kill (by pid) and a stop (whose command fails): the
	// schedule is a function of the seed.
	args := []string{"run", "--runtime", "external", "--bootstrap", strings.Join(st.Bootstrap, ","), "--faults", faults,
		"--store", store, "--seed", "3", "--nemesis", "partition,kill,pause,stop", "--partition-shapes", "isolate-leader,isolate-one",
		"--nemesis-target", "leader", "--nemesis-interval", "2s", "--nemesis-duration", "3s", "--time-limit", "12s", "--warm-up", "1s",
		"--idempotence", "--concurrency", "16", "--rate", "300"}
	out, err := execGregor(args...)
	if err != nil {
		t.Fatalf("a correct cluster through --runtime external: %v\n%s", err, out)
	}
	run, err := history.ReadRun(filepath.Join(store, "queue", history.LatestLink, history.HistoryFile), "")
	if err != nil {
		t.Fatal(err)
	}
	if run.Config.MinISR != 2 || run.Config.Unclean {
		t.Fatalf("test.json min_isr %d, unclean %v: want the cluster's 2, false (DescribeConfigs)", run.Config.MinISR, run.Config.Unclean)
	}
	faultsDone := map[string]int{}
	stops := 0
	for _, op := range run.Ops {
		if op.Process != history.Nemesis {
			continue
		}
		if op.F == history.NemesisStop {
			stops++
			if !strings.Contains(op.Error, "exit status 7") || !strings.Contains(string(op.Raw), `"exit":7,"output":"refusing to stop`) {
				t.Fatalf("a failing stop recorded as %s (error %q)", op.Raw, op.Error)
			}
		} else if op.Error == "" {
			faultsDone[op.F]++
		}
	}
	if faultsDone[history.NemesisKill]+faultsDone[history.NemesisPause]+faultsDone[history.NemesisPartition] == 0 {
		t.Fatalf("no fault applied: %v", faultsDone)
	}
	if stops == 0 || faultsDone[history.NemesisKill] == 0 {
		t.Fatalf("seed 3 draws a kill and a stop; the history has %d stops and faults %v", stops, faultsDone)
	}
	notApplied := strings.Contains(string(mustRead(t, filepath.Join(store, "queue", history.LatestLink, "results.json"))), "schedule not applied as drawn")
	if notApplied != (stops > 0) {
		t.Fatalf("%d failed stops; results.json says the schedule was not applied as drawn: %v", stops, notApplied)
	}
}

// gregor node refuses, exit 2, a cluster no gregor up serves and a node id
// that is not a number.
func TestNodeRefusals(t *testing.T) {
	name := fmt.Sprintf("no-such-%d", os.Getpid())
	_, err := execGregor("node", "kill", "1", "--cluster", name)
	if exitCode(err) != checkBadInput || !strings.Contains(fmt.Sprint(err), "no cluster "+name+" is up") {
		t.Fatalf("no cluster: %v", err)
	}
	_, err = execGregor("node", "kill", "one", "--cluster", name)
	if exitCode(err) != checkBadInput || !strings.Contains(fmt.Sprint(err), `node id "one"`) {
		t.Fatalf("bad id: %v", err)
	}
}
