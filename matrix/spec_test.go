package matrix

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gregor/reports"
)

func TestDefaultMatrixCoversTheIssue(t *testing.T) {
	s, err := Load("default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cells, err := s.Cells()
	if err != nil {
		t.Fatal(err)
	}
	joined := ""
	for _, c := range cells {
		joined += strings.Join(c.Args, " ") + "\n"
	}
	for _, want := range []string{"--acks 0", "--acks 1", "--acks all", "--min-isr 1", "--min-isr 2", "--unclean=true", "--unclean=false",
		"--nemesis kill --seed 1 --nemesis-target leader", "--nemesis partition", "--partition-shapes isolate-leader", "--nemesis pause", "--nemesis power-loss --seed 1 --nemesis-target all", "--lazyfs=true", "--fsync always", "--fsync never",
		"--nemesis strand-leader", "--nemesis kip101", "--link-delay 50ms", "--runtime process", "--runtime sim", "--dedicated-controllers",
		"--nemesis client-reset,lose-responses,delay-client --seed 1 --nemesis-target leader",
		"--nemesis disk-fault --seed 1 --nemesis-target leader",
		"--nemesis kill,fault-points --seed 1 --nemesis-target leader", "--compose --fault-point-target all"} {
		if !strings.Contains(joined, want) {
			t.Errorf("default matrix lacks %q", want)
		}
	}
	// 5 configurations x 10 nemeses, 30 seeds on the sim and one on the
	// process runtime (issue 27: make check's rates and their cross-check).
	if len(cells) != 5*10*31 {
		t.Fatalf("%d cells, want 5 configurations x 10 nemeses x (30 sim + 1 process) seeds", len(cells))
	}
	if sim, ok := s.Runtimes.Runtime("sim"); !ok || len(sim) < 30 {
		t.Fatalf("sim seeds %v, want at least 30 per cell", sim)
	}
	if proc, ok := s.Runtimes.Runtime("process"); !ok || len(proc) < 1 {
		t.Fatalf("process seeds %v, want at least one per cell", proc)
	}
	for _, c := range cells {
		if !strings.HasSuffix(strings.Join(c.Args, " "), "--runtime "+c.Runtime) || (c.Runtime != "sim" && c.Runtime != "process") {
			t.Fatalf("cell %s not on the sim or the process runtime (make check's budget needs them): %v", c.ID, c.Args)
		}
	}
	ids := map[string]bool{}
	for _, c := range cells {
		if ids[c.ID] {
			t.Fatalf("duplicate cell id %s", c.ID)
		}
		ids[c.ID] = true
	}
}

func TestNightlyCrossProductSkipsImpossible(t *testing.T) {
	s, err := Load("nightly.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cells, err := s.Cells()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cells {
		a := strings.Join(c.Args, " ")
		if strings.Contains(a, "--idempotence=true") && !strings.Contains(a, "--acks all") {
			t.Fatalf("impossible cell kept: %s", a)
		}
	}
	// 3 acks x 2 minisr x 2 unclean x 2 idem = 24, minus idempotence with
	// acks 0/1 (8) = 16 configurations; x 17 nemeses x 3 seeds.
	if len(cells) != 16*17*3 {
		t.Fatalf("%d cells", len(cells))
	}
}

func TestShardsPartitionTheCells(t *testing.T) {
	s, _ := Load("default.yaml")
	cells, _ := s.Cells()
	a, _ := Shard(cells, 1, 2)
	b, _ := Shard(cells, 2, 2)
	if len(a)+len(b) != len(cells) {
		t.Fatalf("shards hold %d+%d of %d", len(a), len(b), len(cells))
	}
	var ids []string
	for _, c := range append(a, b...) {
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	if ids = slices.Compact(ids); len(ids) != len(cells) {
		t.Fatal("a cell is in both shards")
	}
	if _, err := Shard(cells, 3, 2); err == nil {
		t.Fatal("shard 3/2 accepted")
	}
}

// seeds: N is seeds 1..N; a list is taken as it is; nonsense is refused
// with the fix.
func TestSeedsCountOrList(t *testing.T) {
	load := func(seeds string) (*Spec, error) {
		path := filepath.Join(t.TempDir(), "m.yaml")
		body := "name: m\nconfigs: [{acks: all}]\nnemeses: [{name: none, kinds: [none]}]\nseeds: " + seeds + "\n"
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return Load(path)
	}
	for in, want := range map[string]Seeds{"3": {1, 2, 3}, "[5, 9]": {5, 9}, "1": {1}} {
		s, err := load(in)
		if err != nil {
			t.Fatalf("seeds: %s: %v", in, err)
		}
		if !slices.Equal(s.Seeds, want) {
			t.Errorf("seeds: %s -> %v; want %v", in, s.Seeds, want)
		}
		cells, err := s.Cells()
		if err != nil || len(cells) != len(want) {
			t.Errorf("seeds: %s: %d cells (%v), want one per seed", in, len(cells), err)
		}
	}
	for _, bad := range []string{"0", "-2", "abc", "[1, 1]", "2000"} {
		if _, err := load(bad); err == nil || !strings.Contains(err.Error(), "seeds") {
			t.Errorf("seeds: %s accepted (%v)", bad, err)
		}
	}
}

// A resumed cell keeps its stored run but shows in the current plan's row:
// the label is not part of a run's arguments, and may have changed.
func TestResumeRelabels(t *testing.T) {
	s := &Spec{Name: "m", Configs: []Settings{{Acks: "all"}}, Nemeses: []Nemesis{{Name: "none", Kinds: []string{"none"}}}, Seeds: Seeds{1}}
	cells, err := s.Cells()
	if err != nil {
		t.Fatal(err)
	}
	cells[0].Label = "control=a,b"
	r := &Runner{Binary: "/nonexistent: a finished cell must not run", Out: t.TempDir(), Resume: true}
	if err := os.MkdirAll(r.cellDir(cells[0]), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := r.record(cells[0], reports.Cell{Config: "control=b", Nemesis: "none", Seed: 1, Valid: "true"}); err != nil {
		t.Fatal(err)
	}
	out := r.Run(context.Background(), cells)
	if out[0].Valid != "true" || out[0].Config != "control=a,b" {
		t.Fatalf("resumed cell %+v: want the stored verdict in the current row", out[0])
	}
}

// The txn matrices: transaction version 1 against 2, each under issue 15's
// fault sets (txn.yaml) or its two delay-client rows over 10 seeds
// (txn-delay.yaml), every cell a txn workload run.
func TestTxnMatrix(t *testing.T) {
	for _, m := range []struct {
		file           string
		nemeses, seeds int
	}{{"txn.yaml", 6, 3}, {"txn-delay.yaml", 2, 10}} {
		s, err := Load(m.file)
		if err != nil {
			t.Fatal(err)
		}
		cells, err := s.Cells()
		if err != nil {
			t.Fatal(err)
		}
		perVersion := m.nemeses * m.seeds
		if len(cells) != 2*perVersion {
			t.Fatalf("%s: %d cells, want 2 versions x %d fault sets x %d seeds", m.file, len(cells), m.nemeses, m.seeds)
		}
		versions := map[string]int{}
		labels := map[string]bool{}
		for _, c := range cells {
			args := strings.Join(c.Args, " ")
			if !strings.Contains(args, "--workload txn") || !strings.Contains(args, "--acks all") || !strings.Contains(args, "--min-isr 2") {
				t.Fatalf("%s: cell %s: %s", m.file, c.ID, args)
			}
			for _, v := range []string{"1", "2"} {
				if strings.Contains(args, "--transaction-version "+v) {
					versions[v]++
				}
			}
			// A row names the settings it sets, never one it leaves to
			// the defaults as empty ("acks= ...").
			if strings.Contains(c.Label, "= ") || strings.HasSuffix(c.Label, "=") {
				t.Fatalf("%s: row label %q names an unset setting", m.file, c.Label)
			}
			labels[c.Label] = true
		}
		if versions["1"] != perVersion || versions["2"] != perVersion {
			t.Fatalf("%s: cells per transaction version: %v", m.file, versions)
		}
		if len(labels) != 2 {
			t.Fatalf("%s: row labels %v: the two transaction versions must be two rows", m.file, labels)
		}
	}
}
