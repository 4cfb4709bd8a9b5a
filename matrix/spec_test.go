package matrix

import (
	"slices"
	"strings"
	"testing"
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
		"--nemesis kill --seed 1 --nemesis-target leader", "--nemesis partition", "--partition-shapes isolate-leader", "--nemesis pause", "--nemesis power-loss", "--lazyfs=true",
		"--nemesis strand-leader", "--link-delay 50ms --runtime process", "--dedicated-controllers",
		"--nemesis client-reset,lose-responses,delay-client --seed 1 --nemesis-target leader"} {
		if !strings.Contains(joined, want) {
			t.Errorf("default matrix lacks %q", want)
		}
	}
	if len(cells) != 30 {
		t.Fatalf("%d cells, want 5 configurations x 6 nemeses", len(cells))
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

// The txn matrix: transaction version 1 against 2, each under the six
// fault sets of issue 15, every cell a txn workload run.
func TestTxnMatrix(t *testing.T) {
	s, err := Load("txn.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cells, err := s.Cells()
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2*6*3 {
		t.Fatalf("%d cells, want 2 versions x 6 fault sets x 3 seeds", len(cells))
	}
	versions := map[string]int{}
	for _, c := range cells {
		args := strings.Join(c.Args, " ")
		if !strings.Contains(args, "--workload txn") || !strings.Contains(args, "--acks all") || !strings.Contains(args, "--min-isr 2") {
			t.Fatalf("cell %s: %s", c.ID, args)
		}
		for _, v := range []string{"1", "2"} {
			if strings.Contains(args, "--transaction-version "+v) {
				versions[v]++
			}
		}
	}
	if versions["1"] != 18 || versions["2"] != 18 {
		t.Fatalf("cells per transaction version: %v", versions)
	}
	labels := map[string]bool{}
	for _, c := range cells {
		labels[c.Label] = true
	}
	if len(labels) != 2 {
		t.Fatalf("row labels %v: the two transaction versions must be two rows", labels)
	}
}
