package harness

import (
	"context"
	"strings"
	"testing"
	"time"

	"gregor/checker"
	"gregor/history"
	"gregor/nemesis"
	"gregor/runtime/process"
	"gregor/workloads/eos"
)

// txnTest is a short txn workload run on 3 brokers: four transactional
// producers each owning one partition, a third of the transactions
// aborted, leader kills.
func txnTest(t *testing.T, name string, version int16, bugs ...string) Test {
	c := testCluster(3, 2)
	c.TransactionVersion, c.Bugs = version, bugs
	return Test{
		Config: Config{Name: name, Store: t.TempDir(), Cluster: c, Partitions: 4, RF: 3, Workload: WorkloadTxn,
			Acks: "all", Retries: -1, DeliveryTimeout: 4 * time.Second, Rate: 80, Producers: 4, Consumers: 1, AbortRate: 0.3,
			Nemeses: []string{string(nemesis.Kill)}, Target: string(nemesis.TargetLeader),
			Interval: 3 * time.Second, Hold: 2 * time.Second, Seed: 21,
			WarmUp: time.Second, TimeLimit: 12 * time.Second,
			RecoveryTimeout: 30 * time.Second, FinalReadTimeout: 40 * time.Second},
		Runtime: process.Runtime{Dir: t.TempDir()}, Binary: binary,
		CheckTimeout: 20 * time.Second,
	}
}

// runAndRead runs tc and reads its stored history back.
func runAndRead(t *testing.T, tc Test) (*Report, []history.Op) {
	t.Helper()
	rep, err := Run(context.Background(), tc)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	ops, _, _, err := history.ReadFile(rep.Dir + "/" + history.HistoryFile)
	if err != nil {
		t.Fatal(err)
	}
	return rep, ops
}

// The txn workload records each transaction as one operation (committed,
// aborted and, under kills, perhaps unknown), the read_uncommitted control
// reads the aborted ones, and a correct cluster (version 2, acks=all, min
// ISR 2) shows no forbidden anomaly under leader kills.
func TestTxnWorkloadSafeUnderLeaderKills(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	if testing.Short() {
		t.Skip("a 15 s cluster run")
	}
	tc := txnTest(t, "txn", 2)
	rep, err := Run(context.Background(), tc)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	res := rep.Result
	st := res.Stats
	t.Logf("valid %v counts %v stats %+v", res.Valid, res.Counts, st)
	if res.Valid == checker.ValidFalse {
		t.Fatalf("forbidden anomalies on a correct cluster: %v %v", res.Forbidden, res.Counts)
	}
	if st.TxnCommitted == 0 || st.TxnAborted == 0 || st.Records == 0 {
		t.Fatalf("committed %d, aborted %d transactions, %d records read: the workload did not run", st.TxnCommitted, st.TxnAborted, st.Records)
	}
	if st.UncommittedAbortedReads == 0 {
		t.Error("the read_uncommitted control never read an aborted record: the aborts are invisible to the checker")
	}
	cfg, err := history.ReadConfig(rep.Dir + "/" + history.ConfigFile)
	if err != nil || cfg.Workload != WorkloadTxn || cfg.TransactionVersion != 2 || cfg.AbortRate != 0.3 || !cfg.Idempotence {
		t.Errorf("test.json %+v (%v)", cfg, err)
	}
}

// A planted bug that lets read_committed read open transactions is caught
// as aborted reads.
func TestTxnWorkloadCatchesLSOPastOpenTxn(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	if testing.Short() {
		t.Skip("a 15 s cluster run")
	}
	tc := txnTest(t, "txnbug", 2, "lso-past-open-txn")
	tc.Nemeses = nil
	rep, err := Run(context.Background(), tc)
	if err != nil && !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("run: %v", err)
	}
	if rep == nil || rep.Result.Counts[checker.AbortedRead] == 0 || rep.Result.Valid != checker.ValidFalse {
		t.Fatalf("lso-past-open-txn not caught as aborted-read: %+v", rep)
	}
}

// The txn workload's settings are refused with the fix.
func TestTxnValidateRefuses(t *testing.T) {
	for _, c := range []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.Partitions = 3 }, "raise --partitions"},
		{func(c *Config) { c.Acks = "1" }, "use --acks all"},
		{func(c *Config) { c.AbortRate = 0.95 }, "--abort-rate"},
		{func(c *Config) { c.Workload = WorkloadQueue }, "without --workload txn"},
	} {
		tc := txnTest(t, "bad", 2)
		c.mut(&tc.Config)
		if err := tc.Config.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error naming %q, got %v", c.want, err)
		}
	}
}

// The eos pipeline under leader kills (version 2): every input record the
// group committed is in the output exactly once, in input order, and the
// history's final eos-offsets line holds the group's offsets.
func TestEOSPipelineExactlyOnceUnderLeaderKills(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	if testing.Short() {
		t.Skip("a 15 s cluster run")
	}
	tc := txnTest(t, "eos", 2)
	tc.Workload, tc.Partitions, tc.Consumers, tc.Rate, tc.AbortRate = WorkloadEOS, 3, 2, 60, 0
	rep, ops := runAndRead(t, tc)
	res := rep.Result
	t.Logf("valid %v counts %v stats %+v", res.Valid, res.Counts, res.Stats)
	if res.Valid == checker.ValidFalse {
		t.Fatalf("forbidden anomalies in the exactly-once pipeline: %v %v", res.Forbidden, res.Counts)
	}
	if res.Stats.TxnCommitted == 0 {
		t.Fatal("no pipeline transaction committed")
	}
	var offsets int
	for _, op := range ops {
		if op.F == history.FEOSOffsets && op.Type == history.OK && strings.Contains(string(op.Raw), `"group":"gregor-eos"`) {
			offsets++
		}
	}
	if offsets != 1 {
		t.Fatalf("%d eos-offsets lines, want 1", offsets)
	}
}

// client-crash's crash point in the eos pipeline: some crashes tear a
// pipeline down right after its TxnOffsetCommit is written, before its
// EndTxn (the crash event says at txn-offset-commit), and with
// txn-offsets-early planted (the group takes the offsets at once, whatever
// the outcome) the next owner skips input whose output was aborted. Without
// the crash point the probe caught the bug in 4 of 10 runs (docs/MEASUREMENTS.md, section 3.1).
func TestEOSCrashPointExposesEarlyOffsets(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	if testing.Short() {
		t.Skip("a 15 s cluster run")
	}
	tc := txnTest(t, "eos-crash", 2, "txn-offsets-early")
	tc.Workload, tc.Partitions, tc.Consumers, tc.Rate, tc.AbortRate = WorkloadEOS, 3, 3, 60, 0
	tc.Nemeses, tc.Interval, tc.Hold, tc.Seed = []string{string(nemesis.ClientCrash)}, 2*time.Second, time.Millisecond, 1
	rep, ops := runAndRead(t, tc)
	var atCommit int
	for _, op := range ops {
		if op.F == history.FCrash && strings.Contains(string(op.Raw), `"at":"`+eos.CrashAtOffsetCommit+`"`) {
			atCommit++
		}
	}
	res := rep.Result
	t.Logf("%d crashes at the crash point; valid %v counts %v", atCommit, res.Valid, res.Counts)
	if atCommit == 0 {
		t.Fatal("no pipeline was torn down at its crash point")
	}
	if res.Counts[checker.EOSMissing] == 0 {
		t.Fatalf("txn-offsets-early under crashes at the commit point: no eos-missing (counts %v)", res.Counts)
	}
}
