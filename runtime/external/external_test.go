package external

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gregor/history"
	"gregor/runtime"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "faults.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A fault file is refused, naming the field, when a verb is unknown, a
// template does not render, or the timeout is out of bounds.
func TestLoadFaultsRefusals(t *testing.T) {
	cases := []struct{ body, want string }{
		{"commands: {explode: 'x'}\n", "field explode not found"},
		{"commands: {kill: 'kill {{.Pid'}\n", "commands.kill"},
		{"nodes: {2: {start: 'start {{.NodeId}}'}}\n", "nodes.2.start"},
		{"timeout: 10m\n", "timeout 10m0s: give 1s to"},
		{"nodes: {0: {kill: 'x'}}\n", "nodes.0"},
	}
	for _, c := range cases {
		_, err := LoadFaults(writeFile(t, c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--faults") {
			t.Errorf("%q: got %v, want an error naming --faults and %q", c.body, err, c.want)
		}
	}
	f, err := LoadFaults(writeFile(t, "timeout: 2s\ncommands: {kill: 'k {{.NodeID}}'}\nnodes: {3: {kill: 'other {{.Host}}'}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Timeout != 2*time.Second || f.Command(1, VerbKill) != "k {{.NodeID}}" || f.Command(3, VerbKill) != "other {{.Host}}" || f.Command(3, VerbStart) != "" {
		t.Fatalf("parsed %+v", f)
	}
}

// A file naming a node the cluster does not have, and nemeses whose
// commands are missing for some broker, are refused with the field named.
func TestFaultFileAgainstCluster(t *testing.T) {
	f, err := LoadFaults(writeFile(t, "commands: {kill: 'k', start: 's'}\nnodes: {4: {pause: 'p'}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.CheckNodes([]int32{1, 2, 3}); err == nil || !strings.Contains(err.Error(), "nodes.4: the cluster has no broker 4 (its brokers: 1,2,3)") {
		t.Fatalf("CheckNodes: %v", err)
	}
	if err := f.CheckNodes([]int32{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	brokers := []int32{1, 2, 3, 4}
	if err := f.CheckKinds([]string{history.NemesisKill, history.NemesisClientCrash, history.NemesisReassign}, brokers); err != nil {
		t.Fatalf("kill has kill and start everywhere: %v", err)
	}
	if err := f.CheckKinds([]string{history.NemesisRestartStorm, history.NemesisClientReset}, brokers); err != nil {
		t.Fatalf("restart-storm has kill and start everywhere, client-reset needs no command: %v", err)
	}
	pauseOnly, err := LoadFaults(writeFile(t, "commands: {pause: 'p', resume: 'r'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := pauseOnly.CheckKinds([]string{history.NemesisRestartStorm}, brokers); err == nil || !strings.Contains(err.Error(), `--nemesis restart-storm needs a "kill" command`) {
		t.Fatalf("restart-storm without kill: %v", err)
	}
	if err := f.CheckKinds([]string{history.NemesisPause}, brokers); err == nil || !strings.Contains(err.Error(), `--nemesis pause needs a "pause" command for every broker; none for node(s) 1,2,3`) {
		t.Fatalf("pause: %v", err)
	}
	if err := f.CheckKinds([]string{history.NemesisPartition}, brokers); err == nil || !strings.Contains(err.Error(), `"isolate"`) {
		t.Fatalf("partition: %v", err)
	}
	none := &FaultFile{Path: NoFaultFile}
	if err := none.CheckKinds([]string{history.NemesisKill}, brokers); err == nil || !strings.Contains(err.Error(), "give --faults FILE") {
		t.Fatalf("kill without a fault file: %v", err)
	}
	if err := f.CheckKinds([]string{history.NemesisPowerLoss}, brokers); err == nil || !strings.Contains(err.Error(), "power-loss") {
		t.Fatalf("power-loss: %v", err)
	}
}

// A bootstrap that does not answer is refused after the bounded wait,
// naming --bootstrap; one that is not HOST:PORT before any wait.
func TestBootstrapMustAnswer(t *testing.T) {
	if _, err := New(Options{}); err == nil || !strings.Contains(err.Error(), "needs --bootstrap") {
		t.Fatalf("no bootstrap: %v", err)
	}
	if _, err := New(Options{Bootstrap: []string{"nohost"}}); err == nil || !strings.Contains(err.Error(), `--bootstrap "nohost"`) {
		t.Fatalf("bad bootstrap: %v", err)
	}
	// A port nothing listens on: a listener opened and closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r, err := New(Options{Bootstrap: []string{addr}, Wait: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = r.Probe(ctx)
	if err == nil || !strings.Contains(err.Error(), "--bootstrap "+addr+": no broker answered Metadata within 500ms") {
		t.Fatalf("got %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the wait was not bounded by Options.Wait")
	}
}

func testCluster(t *testing.T, body string) *Cluster {
	t.Helper()
	f, err := LoadFaults(writeFile(t, body))
	if err != nil {
		t.Fatal(err)
	}
	return newCluster("t", []string{"h1:9092"}, f,
		[]runtime.NodeInfo{{ID: 1, Host: "h1", KafkaAddr: "h1:9092"}, {ID: 2, Host: "h2", KafkaAddr: "h2:9092"}, {ID: 3, Host: "h3", KafkaAddr: "h3:9092"}})
}

// Commands run with their node's values; exit status and output are kept
// for the history and the node's log; a failing command is an error and
// leaves the node's state alone; a command past the timeout is killed.
// The timeout is generous (a loaded machine once took 300 ms to run an
// echo through sh): what shows the kill is that the sleep, 24 times as
// long, does not run out.
func TestCommandsAreRunAndRecorded(t *testing.T) {
	c := testCluster(t, `timeout: 5s
commands:
  kill: "echo killing {{.NodeID}} at {{.KafkaAddr}}"
  start: "echo no such service >&2; exit 3"
  pause: "sleep 120"
  isolate: 'echo "{{.NodeID}} from {{.Peers}} ({{.PeerHosts}})"'
  heal: "echo heal {{.NodeID}}"
`)
	ctx := context.Background()
	if err := c.Kill(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if st, _ := c.Status(ctx, 2); st != runtime.StateStopped {
		t.Fatalf("after kill: %v", st)
	}
	rs := c.TakeCommands()
	if len(rs) != 1 || rs[0].Node != 2 || rs[0].Verb != "kill" || rs[0].Exit != 0 || rs[0].Output != "killing 2 at h2:9092" || rs[0].Error != "" {
		t.Fatalf("kill recorded as %+v", rs)
	}
	err := c.Start(ctx, 2)
	if err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("failing start: %v", err)
	}
	if st, _ := c.Status(ctx, 2); st != runtime.StateStopped {
		t.Fatalf("a failed start changed the state to %v", st)
	}
	rs = c.TakeCommands()
	if len(rs) != 1 || rs[0].Exit != 3 || rs[0].Output != "no such service" || rs[0].Error == "" {
		t.Fatalf("failed start recorded as %+v", rs)
	}
	start := time.Now()
	err = c.Pause(ctx, 1)
	if err == nil || !strings.Contains(err.Error(), "timed out after 5s") {
		t.Fatalf("pause past the timeout: %v", err)
	}
	if time.Since(start) >= 120*time.Second {
		t.Fatalf("the timed-out command was not killed (took %v)", time.Since(start))
	}
	if rs = c.TakeCommands(); len(rs) != 1 || rs[0].Exit != -1 {
		t.Fatalf("timeout recorded as %+v", rs)
	}
	// A bridge {1,2},{2,3}: 1 and 3 are cut from each other, 2 from nobody.
	if err := c.Partition(ctx, [][]int32{{1, 2}, {2, 3}}); err != nil {
		t.Fatal(err)
	}
	rs = c.TakeCommands()
	var outs []string
	for _, r := range rs {
		outs = append(outs, r.Output)
	}
	if strings.Join(outs, ";") != "1 from 3 (h3);3 from 1 (h1)" {
		t.Fatalf("isolate ran as %v", outs)
	}
	if err := c.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if rs = c.TakeCommands(); len(rs) != 2 || rs[0].Output != "heal 1" || rs[1].Output != "heal 3" {
		t.Fatalf("heal ran as %+v", rs)
	}
	if err := c.Heal(ctx); err != nil || len(c.TakeCommands()) != 0 {
		t.Fatal("a second heal ran commands though nothing was isolated")
	}
	rc, _ := c.Logs(ctx, 2)
	log, _ := io.ReadAll(rc)
	if !strings.Contains(string(log), "kill: echo killing 2 at h2:9092\nexit 0") || !strings.Contains(string(log), "exit 3") {
		t.Fatalf("node 2's log:\n%s", log)
	}
	if _, err := c.Status(ctx, 9); err == nil {
		t.Fatal("an unknown node has a status")
	}
	caps := c.Capabilities()
	if caps.Get(runtime.FaultKill).Support != runtime.Real || caps.Get(runtime.FaultStop).Support != runtime.Unsupported {
		t.Fatalf("capabilities %v", caps)
	}
}
