package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"gregor/cluster/nodefault"
	"gregor/history"
	"gregor/internal/fsys"
	"gregor/internal/sleep"
	"gregor/runtime"
)

// DiskFault and ClockSkew are faults of a node's own disk and clock, made
// inside gregor's broker (cluster/nodefault; issue 29).
const (
	DiskFault Kind = history.NemesisDiskFault
	ClockSkew Kind = history.NemesisClockSkew
)

// IsNodeFaultKind reports whether k is made inside the broker
// (runtime.CheckNodeFaults admits it).
func IsNodeFaultKind(k Kind) bool { return k == DiskFault || k == ClockSkew }

// DrawDiskFault is the disk fault (history.DiskFaults) a disk-fault step
// with pick arms: a function of the step's Pick alone, so a schedule file
// replays it and shrinking keeps it.
func DrawDiskFault(pick uint64) string {
	rng := rand.New(rand.NewPCG(pick, 0x6469736b)) // "disk"
	return history.DiskFaults[rng.IntN(len(history.DiskFaults))]
}

// Skew bounds: a clock-skew step draws |D| log-uniformly in [MinSkew,
// MaxSkew] (a second, past a replica's lag bound, past a transaction's
// timeout, an hour), either way.
const (
	MinSkew = time.Second
	MaxSkew = time.Hour
)

// DrawSkew is the skew a clock-skew step with pick applies.
func DrawSkew(pick uint64) time.Duration {
	rng := rand.New(rand.NewPCG(pick, 0x736b6577)) // "skew"
	lo, hi := math.Log(float64(MinSkew)), math.Log(float64(MaxSkew))
	d := time.Duration(math.Exp(lo + rng.Float64()*(hi-lo))).Round(time.Millisecond)
	if rng.IntN(2) == 0 {
		d = -d
	}
	return d
}

// diskFaults is what disk fault f arms on the disk.
func diskFaults(f string) []fsys.Fault {
	switch f {
	case history.DiskEIOWrite:
		return []fsys.Fault{{Op: fsys.OpWrite, Errno: fsys.EIO, Count: 1}}
	case history.DiskEIOFsync:
		return []fsys.Fault{{Op: fsys.OpSync, Errno: fsys.EIO, Count: 1}}
	case history.DiskEIORead:
		return []fsys.Fault{{Op: fsys.OpRead, Errno: fsys.EIO, Count: 1}}
	case history.DiskFull:
		return []fsys.Fault{{Op: fsys.OpWrite, Errno: fsys.ENOSPC}}
	}
	return nil
}

// perNode is what the runner has armed on each node, one control C a
// node: steps that overlap (--compose) on one node each change their part
// of it (a disk-fault and a clock-skew step share nodefault.Control; the
// fault-points steps in force share their union of arms). lock is a
// channel (the runner runs in the simulation's bubble too) held across the
// arming.
type perNode[C any] struct {
	once sync.Once
	lock chan struct{}
	ctl  map[int32]C
}

// nodeControls is the node-fault control of each node.
type nodeControls = perNode[nodefault.Control]

// update applies change to node id's control and arms the result.
func (n *perNode[C]) update(ctx context.Context, id int32, change func(*C), arm func(context.Context, int32, C) error) error {
	n.once.Do(func() { n.lock, n.ctl = make(chan struct{}, 1), map[int32]C{} })
	select {
	case n.lock <- struct{}{}: // free: taken even if ctx just ended (a select of two ready cases picks either)
	default:
		select {
		case n.lock <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer func() { <-n.lock }()
	c := n.ctl[id]
	change(&c)
	if err := arm(ctx, id, c); err != nil {
		return err
	}
	n.ctl[id] = c
	return nil
}

// nodeFault runs a DiskFault or ClockSkew step: arm it on the target
// nodes, write each node event as it is read, disarm at the end of the
// hold, and start again a node whose log directory failed (a flip whose
// batch was never read: the node is restarted uncleanly, so its recovery
// finds the flip within the step, as a kill's end is its start).
func (r *Runner) nodeFault(ctx context.Context, i int, st Step, v history.NemesisValue) {
	nf, ok := r.Cluster.(runtime.NodeFaulter)
	if !ok {
		r.write(string(st.Kind), v, errors.New("the cluster has no disk or clock faults: only gregor's own brokers on a runtime with a channel to them do (--runtime sim or process)"))
		return
	}
	arm, disarm := r.nodeFaultChange(i, st, &v)
	seen := map[int32]int{}
	for _, id := range v.Nodes {
		es, _ := nf.NodeFaultEvents(ctx, id)
		seen[id] = len(es)
	}
	r.active.Add(1)
	defer r.active.Add(-1)
	r.done.Add(1)
	err := eachNode(ctx, v.Nodes, func(ctx context.Context, id int32) error { return r.nodeCtl.update(ctx, id, arm, nf.ArmNodeFaults) })
	r.write(string(st.Kind), v, err)
	failed, flipped := map[int32]bool{}, map[int32]bool{}
	poll := func(ctx context.Context) {
		for _, id := range v.Nodes {
			es, err := nf.NodeFaultEvents(ctx, id)
			if err != nil {
				continue
			}
			for _, e := range es[min(seen[id], len(es)):] {
				failed[id] = failed[id] || e.Kind == nodefault.EventLogDirFailure
				flipped[id] = flipped[id] || e.Kind == nodefault.EventFlip
				r.writeNodeEvent(v, e)
			}
			seen[id] = len(es)
		}
	}
	if err == nil {
		end := time.Now().Add(st.Hold)
		for time.Now().Before(end) && sleep.For(ctx, min(firingPoll, time.Until(end))) {
			poll(ctx)
		}
	}
	uctx, cancel := r.undoContext(ctx)
	defer cancel()
	derr := eachNode(uctx, v.Nodes, func(ctx context.Context, id int32) error { return r.nodeCtl.update(ctx, id, disarm, nf.ArmNodeFaults) })
	poll(uctx)
	for _, id := range v.Nodes {
		if failed[id] || flipped[id] {
			r.restartAfterDisk(uctx, v, id, !failed[id])
		}
	}
	r.write(undoVerb(st.Kind), v, derr)
}

// nodeFaultChange is what step i arms on a node and what undoes it, and
// records the drawn fault in v.
func (r *Runner) nodeFaultChange(i int, st Step, v *history.NemesisValue) (arm, disarm func(*nodefault.Control)) {
	if st.Kind == ClockSkew {
		d := DrawSkew(st.Pick)
		v.Skew = d.String()
		return func(c *nodefault.Control) { c.SkewMs = d.Milliseconds() }, func(c *nodefault.Control) { c.SkewMs = 0 }
	}
	f := DrawDiskFault(st.Pick)
	v.DiskFault = f
	if f == history.DiskBitFlip {
		flip := &nodefault.Flip{ID: fmt.Sprintf("step-%d-%x", i, st.Pick), Pick: st.Pick}
		return func(c *nodefault.Control) { c.Flip = flip }, func(c *nodefault.Control) { c.Flip = nil }
	}
	faults := diskFaults(f)
	return func(c *nodefault.Control) { c.Disk = faults }, func(c *nodefault.Control) { c.Disk = nil }
}

// writeNodeEvent records node event e of a step as a nemesis operation.
func (r *Runner) writeNodeEvent(v history.NemesisValue, e nodefault.Event) {
	ev := v
	ev.Nodes = []int32{e.Node}
	var err error
	verb := history.VerbLogDirFailed
	switch e.Kind {
	case nodefault.EventFlip:
		verb = history.VerbDiskBitFlipped
		ev.Key = fmt.Sprintf("%s/%d", e.Topic, e.Partition)
		off := e.Offset
		ev.FlippedOffset = &off
	case nodefault.EventFlipFailed:
		verb, err = history.VerbDiskBitFlipped, errors.New(e.Error)
	default:
		ev.Note = e.Error
	}
	r.write(verb, ev, err)
}

// restartAfterDisk starts node id once its log directory failed (it
// halted), or kills and starts it when its flipped batch was never read
// (kill), so that its unclean recovery meets the flip.
func (r *Runner) restartAfterDisk(ctx context.Context, v history.NemesisValue, id int32, kill bool) {
	rv := v
	rv.Nodes = []int32{id}
	var errs []error
	if kill {
		if s, err := r.Cluster.Status(ctx, id); err == nil && s == runtime.StateRunning {
			rv.Note = "the flipped batch was not read during the hold: killed, so its recovery finds it"
			errs = append(errs, r.Cluster.Kill(ctx, id))
		}
	} else if err := r.waitStopped(ctx, id); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, r.Cluster.Start(ctx, id))
	r.write(history.VerbDiskFaultRestart, rv, errors.Join(errs...))
}

// waitStopped waits (bounded) for node id, whose broker halted, to be
// seen stopped by the runtime.
func (r *Runner) waitStopped(ctx context.Context, id int32) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := r.Cluster.Status(ctx, id)
		if err == nil && s == runtime.StateStopped {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d did not stop after its log directory failed (status %v, %v)", id, s, err)
		}
		if !sleep.For(ctx, 50*time.Millisecond) {
			return ctx.Err()
		}
	}
}
