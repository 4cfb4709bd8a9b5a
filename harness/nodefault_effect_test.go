package harness

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"gregor/cluster/nodefault"
	"gregor/internal/fsys"
	"gregor/runtime"
)

// A disk fault armed through a runtime's control channel (the process
// runtime's control file, the docker runtime's copy into the container)
// does what the disk-fault nemesis says: the next write to the leader's
// partition log fails with EIO, its log directory goes offline (the event
// read back through the channel names the error) and the broker halts; a
// new leader takes fx/0 and takes writes.
func TestDiskFaultHaltsTheLeader(t *testing.T) {
	newEffectEnv(t).diskFaultHaltsLeader(t)
}

func TestDiskFaultHaltsTheLeaderDocker(t *testing.T) {
	dockerEffectEnv(t, "dkdisk").diskFaultHaltsLeader(t)
}

func (e *effectEnv) diskFaultHaltsLeader(t *testing.T) {
	ctx := context.Background()
	hctx, hcancel := context.WithTimeout(ctx, 60*time.Second)
	defer hcancel()
	if err := WaitHealthy(hctx, e.boot, e.topic); err != nil {
		t.Fatal(err)
	}
	if n := e.produceAcked(5); n != 5 {
		t.Fatalf("%d of 5 acknowledged before the fault", n)
	}
	leader, _, err := e.partitionState(ctx, []int32{1, 2, 3})
	if err != nil || leader < 1 {
		t.Fatalf("leader %d: %v", leader, err)
	}
	nf := e.c.(runtime.NodeFaulter)
	arm := nodefault.Control{Disk: []fsys.Fault{{Op: fsys.OpWrite, Errno: fsys.EIO, Count: 1}}}
	if err := nf.ArmNodeFaults(ctx, leader, arm); err != nil {
		t.Fatal(err)
	}
	var failure nodefault.Event
	e.waitFor("the leader's log directory fails", 45*time.Second, func() error {
		e.rawProduce(leader, time.Second) // the write that meets the fault (the broker polls its control file)
		evs, err := nf.NodeFaultEvents(ctx, leader)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if ev.Kind == nodefault.EventLogDirFailure {
				failure = ev
				return nil
			}
		}
		return fmt.Errorf("events %+v", evs)
	})
	if !strings.Contains(failure.Error, "input/output error") || failure.Node != leader {
		t.Fatalf("log-dir failure %+v, want node %d's EIO", failure, leader)
	}
	e.waitFor("the broker halts", 30*time.Second, func() error {
		if s, err := e.c.Status(ctx, leader); err != nil || s != runtime.StateStopped {
			return fmt.Errorf("node %d: %v %v", leader, s, err)
		}
		return nil
	})
	e.waitFor("another broker leads fx/0", 30*time.Second, func() error {
		l, _, err := e.partitionState(ctx, others(leader))
		if err != nil || l < 1 || l == leader {
			return fmt.Errorf("leader %d: %v", l, err)
		}
		return nil
	})
	if err := nf.ArmNodeFaults(ctx, leader, nodefault.Control{}); err != nil {
		t.Fatal(err)
	}
	// The clients learn the new leader through metadata; a halted
	// container's address may time out rather than refuse at first.
	e.waitFor("the new leader acknowledges writes", 60*time.Second, func() error {
		if n := e.produceAcked(1); n != 1 {
			return fmt.Errorf("not acknowledged")
		}
		return nil
	})
}
