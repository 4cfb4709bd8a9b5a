package harness

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"gregor/checker"
	"gregor/history"
	"gregor/nemesis"
	"gregor/runtime/process"
)

// reassignTest is a short run on 4 brokers (RF 3, so every partition has a
// broker to move to) whose nemesis moves a partition's replicas, leader
// first, every couple of seconds while producers write.
func reassignTest(t *testing.T, name, acks string, minISR int) Test {
	c := testCluster(4, minISR)
	c.Fsync = "never"
	return Test{
		Config: Config{Name: name, Store: t.TempDir(), Cluster: c, Partitions: 2, RF: 3,
			Acks: acks, Idempotence: true, Retries: -1, DeliveryTimeout: 4 * time.Second, Rate: 300,
			Producers: 4, Consumers: 1,
			Nemeses: []string{string(nemesis.Reassign)}, Target: string(nemesis.TargetRandom),
			Interval: 2 * time.Second, Hold: 2 * time.Second, Seed: 7,
			WarmUp: time.Second, TimeLimit: 10 * time.Second,
			RecoveryTimeout: 30 * time.Second, FinalReadTimeout: 30 * time.Second},
		Runtime: process.Runtime{Dir: t.TempDir()}, Binary: binary,
		CheckTimeout: 20 * time.Second,
	}
}

// TestReassignAcksAllMinISR2LosesNothing: partitions' replicas move to
// other brokers (the leader among those leaving) while acks=all, min ISR 2
// writes go on, and back on undo; every move completes, and nothing
// acknowledged is lost (issue 19's must-show). The move is real: the
// history's reassign operations name replicas that differ from the
// originals and carry no error.
func TestReassignAcksAllMinISR2LosesNothing(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	if testing.Short() {
		t.Skip("a 12 s cluster run")
	}
	tc := reassignTest(t, "reassign", "all", 2)
	rep, err := Run(context.Background(), tc)
	if err != nil {
		t.Fatalf("run: %v (report %+v)", err, rep)
	}
	ops, _, _, err := history.ReadFile(filepath.Join(rep.Dir, history.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	moves, backs := 0, 0
	for _, op := range ops {
		if op.Process != history.Nemesis {
			continue
		}
		v, err := history.ParseNemesis(&op)
		if err != nil {
			t.Fatal(err)
		}
		switch op.F {
		case history.NemesisReassign:
			if op.Error != "" {
				t.Errorf("reassign failed: %s (%s)", op.Error, v.Note)
				continue
			}
			moves++
			t.Logf("%s", v.Note)
		case history.EndVerb(history.NemesisReassign):
			if op.Error != "" {
				t.Errorf("moving back failed: %s (%s)", op.Error, v.Note)
				continue
			}
			backs++
		}
	}
	if moves < 2 || backs != moves {
		t.Fatalf("%d reassignments and %d moves back recorded", moves, backs)
	}
	res := rep.Result
	t.Logf("valid %s counts %v, %d records", res.Valid, res.Counts, res.Stats.Records)
	if n := res.Counts[checker.LostWrite] + res.Counts[checker.Unseen]; n != 0 {
		t.Fatalf("acks=all, min ISR 2: %d acknowledged records lost under reassignment: %v", n, res.Counts)
	}
	if res.Valid == checker.ValidFalse {
		t.Fatalf("forbidden anomalies: %v %v", res.Forbidden, res.Counts)
	}
	if res.Stats.Records == 0 {
		t.Fatal("no record read")
	}
}
