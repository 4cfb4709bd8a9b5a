package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gregor/checker"
)

// A txn run's cell carries its aborted reads, torn transactions and lost
// committed writes into results.json and the matrix index, summed over
// seeds; a queue run's carries none.
func TestMatrixTxnCell(t *testing.T) {
	res := &checker.Result{Counts: map[string]int{checker.AbortedRead: 2, checker.TornTransaction: 1, checker.LostCommittedWrite: 3},
		Stats: checker.Stats{TxnCommitted: 50, TxnAborted: 20, TxnUnknown: 1}}
	c := CellFrom("workload=txn v1", "delay-client", 1, res, "r.html")
	if c.Txn == nil || c.Txn.AbortedReads != 2 || c.Txn.Torn != 1 || c.Txn.LostCommittedWrites != 3 || c.Txn.Committed != 50 {
		t.Fatalf("txn cell %+v", c.Txn)
	}
	if q := CellFrom("acks=all", "kill", 1, &checker.Result{Counts: map[string]int{}}, ""); q.Txn != nil {
		t.Fatalf("queue cell with txn figures: %+v", q.Txn)
	}
	dir := t.TempDir()
	c2 := c
	c2.Seed = 2
	if err := WriteMatrix(dir, "txn", []Cell{c, c2}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"aborted reads: <b>4</b>", "torn: <b>2</b>", "lost committed writes: <b>6</b>", "100 committed, 40 aborted, 2 unknown"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("index lacks %q", want)
		}
	}
}
