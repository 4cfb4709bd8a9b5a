package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"gregor/history"
	"gregor/runtime/docker"
)

// gregorSpec is gregor's own image described as any image is.
const gregorSpec = "../../runtime/image/specs/gregor.yaml"

// Refusals of --runtime image that need no engine: no spec, a spec
// without an image, a template that does not render; each exits 2 naming
// the field.
func TestImageRuntimeRefusals(t *testing.T) {
	dir := t.TempDir()
	noImage := filepath.Join(dir, "noimage.yaml")
	os.WriteFile(noImage, []byte("command: [start]\n"), 0o644)
	badTmpl := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badTmpl, []byte("image: k\nenv: {KAFKA_NODE_ID: '{{.NodeId}}'}\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--runtime", "image"}, "needs --image-spec FILE"},
		{[]string{"--runtime", "image", "--image-spec", noImage}, "image: give the node image"},
		{[]string{"--runtime", "image", "--image-spec", badTmpl}, "env.KAFKA_NODE_ID does not render"},
		{[]string{"--runtime", "process", "--image-spec", badTmpl}, "--image-spec is for --runtime image"},
		{[]string{"--runtime", "process", "--bootstrap", "h:1"}, "--bootstrap and --faults are for --runtime external"},
	} {
		_, err := execGregor(append([]string{"run", "--store", dir}, c.args...)...)
		if exitCode(err) != checkBadInput || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("%v: got %v, want exit 2 naming %q", c.args, err, c.want)
		}
	}
}

// gregor's own image through --runtime image (its spec, not the built-in
// docker runtime): the isolated leader with ack-before-isr planted is
// caught; without the bug, kills, pauses and partitions (made by the nsfault
// sidecar in each node's network namespace) leave the run valid. Nothing is
// left behind.
func TestImageRuntimeWithGregorImage(t *testing.T) {
	if testing.Short() {
		t.Skip("boots docker clusters")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := docker.New(docker.Options{}).Available(ctx); err != nil {
		t.Skipf("SKIPPING image runtime test: no Docker engine answers: %v", err)
	}
	bin := gregorBinary(t)
	t.Setenv("GREGOR_BINARY", bin)
	t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	store := t.TempDir()
	timeouts := []string{"--session-timeout", "2s", "--replica-lag-max", "2s"}
	name := fmt.Sprintf("ximg%d", os.Getpid()%100000)

	// A 2-cell matrix through the image runtime: the isolated leader with
	// ack-before-isr planted is caught, the fault-free cell is valid.
	dir := t.TempDir()
	spec := filepath.Join(dir, "m.yaml")
	abs, _ := filepath.Abs(gregorSpec)
	os.WriteFile(spec, []byte(fmt.Sprintf(`name: image
defaults:
  runtime: image
  image_spec: %s
  partitions: 3
  time_limit: 12s
  rate: 300
  args: [--concurrency, "16", --warm-up, 1s, --session-timeout, 2s, --replica-lag-max, 2s]
configs:
  - {acks: all, min_isr: 2, idempotence: true, bugs: [ack-before-isr]}
nemeses:
  - {name: isolate-leader, kinds: [partition], shapes: [isolate-leader], target: leader, interval: 2s, duration: 8s}
  - {name: none, kinds: [none], settings: {time_limit: 4s}}
seeds: [1]
`, abs)), 0o644)
	mout := filepath.Join(dir, "out")
	_, err := execGregor("matrix", "--config", spec, "--out", mout, "--parallel", "1")
	res := string(mustRead(t, filepath.Join(mout, "results.json")))
	if exitCode(err) != 1 || strings.Count(res, `"valid": "false"`) != 1 || strings.Count(res, `"valid": "true"`) != 1 {
		t.Fatalf("matrix (%v): want one invalid (isolate-leader) and one valid (none) cell:\n%s", err, res)
	}
	cells, _ := filepath.Glob(filepath.Join(mout, "runs", "*isolate-leader*", "run", history.LatestLink, history.HistoryFile))
	if len(cells) != 1 {
		t.Fatalf("isolate-leader cell's history: %v", cells)
	}
	run, err := history.ReadRun(cells[0], "")
	if err != nil {
		t.Fatal(err)
	}
	if run.Config.Runtime != "image" || run.Config.MinISR != 2 {
		t.Fatalf("test.json %+v: want runtime image, min ISR 2", run.Config)
	}

	args := []string{"run", "--runtime", "image", "--image-spec", gregorSpec, "--store", store, "--name", name + "v", "--seed", "4",
		"--nemesis", "partition,kill,pause", "--partition-shapes", "isolate-leader,isolate-one", "--nemesis-target", "leader",
		"--nemesis-interval", "2s", "--nemesis-duration", "3s", "--time-limit", "20s", "--warm-up", "1s",
		"--min-isr", "2", "--idempotence", "--concurrency", "16", "--rate", "300"}
	out, err := execGregor(append(args, timeouts...)...)
	if err != nil {
		t.Fatalf("a correct cluster through --runtime image: %v\n%s", err, out)
	}
	run, err = history.ReadRun(filepath.Join(store, name+"v", history.LatestLink, history.HistoryFile), "")
	if err != nil {
		t.Fatal(err)
	}
	applied := map[string]int{}
	var partitionAt, healAt int64
	for _, op := range run.Ops {
		if op.Process == history.Nemesis {
			switch op.F {
			case history.NemesisPartition:
				partitionAt = op.Time
			case history.VerbHeal:
				healAt = op.Time
			}
			if op.Error != "" {
				t.Fatalf("nemesis %s failed: %s", op.F, op.Error)
			}
			applied[op.F]++
		}
	}
	// Seed 4 draws a partition at 1.5 s and a kill at 6.9 s (the schedule
	// is the seed's); each partition and heal starts an nsfault sidecar
	// per node, which can push a later step past the limit, hence 20 s.
	t.Logf("partition applied %v after its start, held until the heal at %v", time.Duration(partitionAt), time.Duration(healAt))
	if applied[history.NemesisKill] == 0 || applied[history.NemesisPartition] == 0 {
		t.Fatalf("faults applied: %v", applied)
	}

	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	left, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", docker.LabelManaged+"=true"), filters.Arg("label", "gregor.test="+name+"v"))})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("%d containers (nodes or nsfault sidecars) left behind", len(left))
	}
}
