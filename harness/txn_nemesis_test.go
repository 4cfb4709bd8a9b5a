package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/history"
	"gregor/nemesis"
	"gregor/workloads/txn"
)

// kill-txn-coordinator kills the broker FindCoordinator names for a
// transactional id, and the coordination moves to another broker while it
// is down (its __transaction_state partition gets a new leader).
func TestKillTxnCoordinatorEffect(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	if testing.Short() {
		t.Skip("boots a cluster")
	}
	e := newEffectEnv(t)
	const id = "fx-txn"
	e.topo.TransactionalIDs = []string{id}
	coordFrom := func(from []int32) (int32, error) {
		var seeds []string
		for _, n := range from {
			seeds = append(seeds, e.addrOf(n))
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DialTimeout(time.Second), kgo.RetryTimeout(2*time.Second))
		if err != nil {
			return -1, err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		r := kadm.NewClient(cl).FindTxnCoordinators(ctx, id)[id]
		return r.NodeID, r.Err
	}
	var before int32
	e.waitFor("a coordinator for "+id, 30*time.Second, func() (err error) {
		before, err = coordFrom([]int32{1, 2, 3})
		return err
	})
	a, end := e.inject(nemesis.Step{Kind: nemesis.KillTxnCoordinator, Hold: time.Minute}, nemesis.TargetRandom, 0)
	defer end()
	if !slices.Equal(a.Nodes, []int32{before}) || !strings.Contains(a.Note, id) {
		t.Fatalf("resolved %+v, want node %d named as %s's coordinator", a, before, id)
	}
	e.waitFor("coordination of "+id+" moves off "+fmt.Sprint(before), 30*time.Second, func() error {
		n, err := coordFrom(others(before))
		if err != nil || n == before || n < 0 {
			return fmt.Errorf("coordinator %d (%v)", n, err)
		}
		return nil
	})
}

// pause-producer freezes a transactional producer with its transaction
// open for longer than the transaction timeout: the coordinator aborts the
// transaction and fences the producer, so the transaction it was in when
// frozen ends only after the pause, and not committed.
func TestPauseProducerEffect(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	if testing.Short() {
		t.Skip("a 25 s cluster run")
	}
	tc := txnTest(t, "pausep", 2)
	tc.Nemeses, tc.Interval, tc.Hold, tc.TimeLimit = []string{string(nemesis.PauseProducer)}, 2*time.Second, time.Second, 20*time.Second
	rep, ops := runAndRead(t, tc)
	type pause struct {
		proc       history.Process
		start, end int64
	}
	var pauses []pause
	for _, op := range ops {
		if op.Process != history.Nemesis || op.Error != "" {
			continue
		}
		var v struct{ Process *int }
		json.Unmarshal(op.Raw, &v)
		switch op.F {
		case string(nemesis.PauseProducer):
			pauses = append(pauses, pause{proc: history.Process(*v.Process), start: op.Time})
		case history.EndVerb(string(nemesis.PauseProducer)):
			pauses[len(pauses)-1].end = op.Time
		}
	}
	if len(pauses) == 0 || pauses[0].end == 0 {
		t.Fatalf("no completed pause-producer in the history: %+v", pauses)
	}
	p := pauses[0]
	if d := time.Duration(p.end - p.start); d < txn.DefaultTxnTimeout {
		t.Errorf("paused %v, not past the transaction timeout", d)
	}
	// The frozen transaction: the producer freezes at its next send after
	// the pause is asked for, so one transaction of the process spans the
	// pause (begun within the pause's first timeout, ended after its last);
	// it must not commit.
	var last int64 = -1
	for _, op := range ops {
		if op.Process != p.proc || op.F != history.FTxn {
			continue
		}
		if op.Type == history.Invoke {
			last = op.Time
			continue
		}
		if op.Time < p.start+int64(txn.DefaultTxnTimeout) || last > p.end-int64(txn.DefaultTxnTimeout) {
			continue
		}
		if op.Type == history.OK {
			t.Fatalf("the transaction frozen past its timeout committed: op %d %+v", op.Index, op)
		}
		t.Logf("frozen transaction op %d (%.1f s .. %.1f s) ended %v (%s); result %v %v", op.Index, float64(last)/1e9, float64(op.Time)/1e9, op.Type, op.Error, rep.Result.Valid, rep.Result.Counts)
		return
	}
	t.Fatal("the paused process completed no transaction after the pause")
}
