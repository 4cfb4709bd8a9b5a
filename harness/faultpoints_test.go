package harness

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"gregor/cluster/faultpoint"
	"gregor/history"
	"gregor/nemesis"
	"gregor/runtime"
)

// lockedBuffer is a history sink the test reads while the runner writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// A fault point armed by the nemesis fires exactly at its protocol step: a
// crash armed at isr-expand-applied on fx/0's leader takes the leader down
// right after it applies the ISR expansion that re-admits a restarted
// follower; the firing is in the history (point, node, action, partition)
// and the harness restarts the node.
func TestFaultPointCrashAfterISRExpansion(t *testing.T) {
	newEffectEnv(t).crashAfterISRExpansion(t)
}

// The same on the docker runtime, whose control channel is the engine's
// archive API (runtime/docker/controlfiles.go): the control file copied
// into the container, the firings file copied out, the crashed container
// started again.
func TestFaultPointCrashAfterISRExpansionDocker(t *testing.T) {
	dockerEffectEnv(t, "dkpoints").crashAfterISRExpansion(t)
}

func (e *effectEnv) crashAfterISRExpansion(t *testing.T) {
	ctx := context.Background()
	hctx, hcancel := context.WithTimeout(ctx, 60*time.Second)
	defer hcancel()
	if err := WaitHealthy(hctx, e.boot, e.topic); err != nil {
		t.Fatal(err)
	}
	leader, _, err := e.partitionState(ctx, []int32{1, 2, 3})
	if err != nil || leader < 1 {
		t.Fatalf("leader %d: %v", leader, err)
	}
	follower := others(leader)[0]
	if err := e.c.Kill(ctx, follower); err != nil {
		t.Fatal(err)
	}
	e.waitFor("ISR without the killed follower", 40*time.Second, func() error {
		_, isr, err := e.partitionState(ctx, others(follower))
		if err != nil || slices.Contains(isr, follower) {
			return fmt.Errorf("isr %v, %v", isr, err)
		}
		return nil
	})

	var sink lockedBuffer
	hist := history.NewWriter(&sink, 0)
	r := &nemesis.Runner{Cluster: e.c, Topo: e.topo, History: hist, Epoch: time.Now(), Target: nemesis.TargetLeader, UndoTimeout: 30 * time.Second}
	step := nemesis.Step{Kind: nemesis.FaultPoints, Hold: 60 * time.Second, Pick: 1,
		Point: nemesis.PointArm{Point: faultpoint.ISRExpandApplied, Action: faultpoint.Crash, Max: 1, For: 500 * time.Millisecond}}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { r.Run(rctx, nemesis.Schedule{step}); close(done) }()
	defer func() { cancel(); <-done }()
	e.waitFor("point armed", 10*time.Second, func() error {
		if r.Active() != 1 {
			return fmt.Errorf("runner has %d active faults", r.Active())
		}
		return nil
	})
	time.Sleep(200 * time.Millisecond) // the broker polls its control file every 50 ms
	restarted := time.Now()
	if err := e.c.Start(ctx, follower); err != nil {
		t.Fatal(err)
	}
	fp := e.c.(runtime.FaultPointer)
	var firing faultpoint.Firing
	e.waitFor("the leader's crash point fires", 45*time.Second, func() error {
		fs, err := fp.FaultPointFirings(ctx, leader)
		if err != nil || len(fs) == 0 {
			return fmt.Errorf("firings %v, %v", fs, err)
		}
		firing = fs[0]
		return nil
	})
	if firing.Point != faultpoint.ISRExpandApplied || firing.Action != faultpoint.Crash || firing.Node != leader || firing.Key() != "fx/0" {
		t.Fatalf("firing %+v", firing)
	}
	if at := time.Unix(0, firing.Time); at.Before(restarted) {
		t.Fatalf("fired at %v, before the follower was restarted at %v", at, restarted)
	}
	e.waitFor("the harness restarts the crashed leader", 30*time.Second, func() error {
		var verbs []string
		sink.mu.Lock()
		hist.Flush()
		ops, _, _, err := history.ReadAll(bytes.NewReader(sink.b.Bytes()))
		sink.mu.Unlock()
		if err != nil {
			return err
		}
		for _, op := range ops {
			verbs = append(verbs, op.F)
			if op.Error != "" {
				return fmt.Errorf("%s: %s", op.F, op.Error)
			}
			if op.F == history.VerbFaultPointFired {
				v, _ := history.ParseNemesis(&op)
				if v.Point != string(faultpoint.ISRExpandApplied) || v.Key != "fx/0" || !slices.Equal(v.Nodes, []int32{leader}) {
					t.Fatalf("firing op %s", op.Raw)
				}
			}
		}
		if !slices.Contains(verbs, history.VerbFaultPointRestart) {
			return fmt.Errorf("verbs %v", verbs)
		}
		return nil
	})
	if st, err := e.c.Status(ctx, leader); err != nil || st != runtime.StateRunning {
		t.Fatalf("the crashed leader is %v after its restart: %v", st, err)
	}
	cancel()
	<-done
	hctx2, hcancel2 := context.WithTimeout(ctx, 60*time.Second)
	defer hcancel2()
	if err := WaitHealthy(hctx2, e.boot, e.topic); err != nil {
		e.dumpLogs(40)
		t.Fatalf("after the crash point: %v", err)
	}
}

// The default draw is the points the workload reaches: a step armed at a
// point the run never reaches fires nothing.
func TestDrawnPointsFollowTheWorkload(t *testing.T) {
	for _, tc := range []struct {
		workload string
		want     []faultpoint.Scope
	}{
		{"queue", []faultpoint.Scope{faultpoint.Replication, faultpoint.Controller}},
		{"group", []faultpoint.Scope{faultpoint.Replication, faultpoint.Controller, faultpoint.Coordinators, faultpoint.Groups}},
		{"txn", []faultpoint.Scope{faultpoint.Replication, faultpoint.Controller, faultpoint.Coordinators, faultpoint.Groups, faultpoint.Transactions}},
	} {
		c := DefaultConfig()
		c.Workload = tc.workload
		got := c.drawnPoints()
		if !slices.Equal(got, faultpoint.PointsIn(tc.want...)) {
			t.Errorf("%s: draws %v, want the points of %v", tc.workload, got, tc.want)
		}
		if slices.Contains(got, faultpoint.SegmentRolled) {
			t.Errorf("%s: draws segment-rolled, which a short run never reaches", tc.workload)
		}
	}
	c := DefaultConfig()
	c.FaultPoints = []string{string(faultpoint.SegmentRolled)}
	if got := c.drawnPoints(); !slices.Equal(got, []faultpoint.Point{faultpoint.SegmentRolled}) {
		t.Errorf("--fault-points segment-rolled: draws %v", got)
	}
}
