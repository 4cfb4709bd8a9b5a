package checker

import (
	"os"
	"path/filepath"
	"testing"

	"gregor/history"
)

// LostAcks counts acknowledged sends gone from the log as last read: never
// read below a read offset (lost-write), or read and later overwritten by
// another value at the same offset (which lost-write, "never read by any
// poll", does not count). A send read and still there is not lost.
func TestLostAcks(t *testing.T) {
	const hist = `{"index":0,"time":1,"process":0,"type":"invoke","f":"send","value":[["send","t/0",10]]}
{"index":1,"time":2,"process":0,"type":"ok","f":"send","value":[["send","t/0",[0,10]]]}
{"index":2,"time":3,"process":0,"type":"invoke","f":"send","value":[["send","t/0",11]]}
{"index":3,"time":4,"process":0,"type":"ok","f":"send","value":[["send","t/0",[1,11]]]}
{"index":4,"time":5,"process":0,"type":"invoke","f":"send","value":[["send","t/0",12]]}
{"index":5,"time":6,"process":0,"type":"ok","f":"send","value":[["send","t/0",[2,12]]]}
{"index":6,"time":7,"process":1,"type":"invoke","f":"assign","value":["t/0"]}
{"index":7,"time":8,"process":1,"type":"ok","f":"assign","value":["t/0"]}
{"index":8,"time":9,"process":1,"type":"invoke","f":"poll","value":[["poll"]]}
{"index":9,"time":10,"process":1,"type":"ok","f":"poll","value":[["poll",{"t/0":[[0,10],[1,11]]}]]}
{"index":10,"time":11,"process":0,"type":"invoke","f":"send","value":[["send","t/0",13]]}
{"index":11,"time":12,"process":0,"type":"ok","f":"send","value":[["send","t/0",[1,13]]]}
{"index":12,"time":13,"process":2,"type":"invoke","f":"assign","value":["t/0"]}
{"index":13,"time":14,"process":2,"type":"ok","f":"assign","value":["t/0"]}
{"index":14,"time":15,"process":2,"type":"invoke","f":"poll","value":[["poll"]]}
{"index":15,"time":16,"process":2,"type":"ok","f":"poll","value":[["poll",{"t/0":[[0,10],[1,13],[3,14]]}]]}
`
	path := filepath.Join(t.TempDir(), "h.jsonl")
	if err := os.WriteFile(path, []byte(hist), 0o644); err != nil {
		t.Fatal(err)
	}
	ops, _, warns, err := history.ReadFile(path)
	if err != nil || len(warns) > 0 {
		t.Fatal(err, warns)
	}
	res, err := Check(ops, nil, Options{OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// 10 survives; 11 was read, then offset 1 holds 13: lost; 12 at offset 2
	// was never read though offset 3 was: lost; 13 survives.
	if res.Stats.LostAcks != 2 {
		t.Fatalf("lost acks %d, want 2 (11 overwritten, 12 never read); counts %v", res.Stats.LostAcks, res.Counts)
	}
	if res.Counts[LostWrite] != 1 || res.Counts[InconsistentOffsets] != 1 {
		t.Fatalf("counts %v: want one lost-write (12) and one inconsistent-offsets (offset 1)", res.Counts)
	}
	// Evidence: 12's loss is proven by the poll at 16 (it read offset 3),
	// not by its acknowledgement at 6 (what the example cites) nor by the
	// poll at 10, which read only offsets 0 and 1 (below 12's offset 2);
	// offset 1's conflict by 13's acknowledgement there at 12.
	if got := res.Evidence[LostWrite]; got != 16 {
		t.Errorf("lost-write evidence at %d, want 16 (the first read past offset 2)", got)
	}
	if got := res.Evidence[InconsistentOffsets]; got != 12 {
		t.Errorf("inconsistent-offsets evidence at %d, want 12 (the second value seen at offset 1)", got)
	}
	if len(res.Evidence) != len(res.Counts) {
		t.Errorf("evidence %v for anomalies %v: want one time per anomaly found", res.Evidence, res.Counts)
	}
	clean, err := Check(readFixture(t, "clean"), nil, Options{OutDir: t.TempDir()})
	if err != nil || clean.Stats.LostAcks != 0 {
		t.Fatalf("clean fixture: lost acks %d (%v)", clean.Stats.LostAcks, err)
	}
}
