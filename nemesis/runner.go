package nemesis

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"gregor/history"
	"gregor/internal/sleep"
	"gregor/runtime"
	"gregor/runtime/clientlink"
)

// Runner applies a schedule to a cluster and writes every fault's start and
// end to the history.
type Runner struct {
	Cluster runtime.Cluster
	// Interrupt, if set, is the run's own context: its end (SIGTERM) cuts
	// short the undo of a step in force, which outlives the step's ctx.
	Interrupt context.Context
	Topo      Topology
	History   *history.Writer
	// Epoch is the test's time zero (history times are nanoseconds since it).
	Epoch  time.Time
	Target Target
	// Crash picks a workload client to crash and returns its process id
	// and tearDown, which closes it mid-operation; the runner records the
	// crash before calling tearDown. ok is false when no client runs.
	// Needed for ClientCrash steps.
	Crash func() (process int, tearDown func(), ok bool)
	// PauseProducer freezes one transactional producer mid-transaction
	// for at least hold (the workload makes it longer than its
	// transaction timeout) and returns its process, the hold used, and a
	// channel closed when the producer runs again; ok is false when no
	// producer runs. Needed for PauseProducer steps.
	PauseProducer func(hold time.Duration) (process int, used time.Duration, resumed <-chan struct{}, ok bool)
	// Clients runs a ConsumerRestart or ConsumerJoin step on the workload
	// and returns the processes it started. Needed for those steps.
	Clients func(ctx context.Context, k Kind) (processes []int, err error)
	// SlowDelay, SlowJitter and SlowLoss are a Slow fault's link impairment.
	// For a slow fault to shrink the ISR, SlowDelay (or the loss's
	// retransmission delay) must exceed replica.lag.time.max.ms: a property
	// of the run's settings, not of this state, so not an invariant checked
	// here (the cluster's lag setting lives on the brokers, not here).
	SlowDelay, SlowJitter time.Duration
	SlowLoss              float64
	// StopGrace bounds a Stop's controlled shutdown before SIGKILL.
	StopGrace time.Duration
	// UndoTimeout bounds undoing one fault (a restart); default 60s.
	UndoTimeout time.Duration
	// SessionTimeout is the brokers' session timeout, which a
	// restart-storm's downtimes stay below; 0: 3 s.
	SessionTimeout time.Duration
	// Links is the workload clients' network (runtime/clientlink), which
	// the client-link faults act on. Needed for those steps.
	Links *clientlink.Links
	// PointTarget, if set, is whom a fault-points step arms instead of
	// Target (a point fires where its protocol step happens: arming every
	// broker lets it fire on whichever leads then).
	PointTarget Target
	// PhaseWait bounds a scenario phase that waits for the cluster (an ISR
	// shrink, an election); default 12s.
	PhaseWait time.Duration

	nodeCtl   nodeControls
	pointArms perNode[pointSet]

	active atomic.Int32
	done   atomic.Int32
	failed atomic.Int32
}

// Active is the number of faults in force now (at most 1 for a serial
// schedule).
func (r *Runner) Active() int { return int(r.active.Load()) }

// Done is the number of faults started so far.
func (r *Runner) Done() int { return int(r.done.Load()) }

// Failed is the number of nemesis operations written with an error so far:
// the schedule was not applied as drawn.
func (r *Runner) Failed() int { return int(r.failed.Load()) }

// Run applies sched, starting now; it returns when every step ran or ctx is
// done. A fault in force when ctx ends is undone before Run returns, so the
// caller's heal finds only what a failed undo left.
func (r *Runner) Run(ctx context.Context, sched Schedule) error {
	if err := sched.Check(); err != nil {
		return err // overlapping faults would undo each other's effects
	}
	if !sched.Serial() {
		r.runOverlapping(ctx, sched)
		return nil
	}
	base := time.Now()
	for i, st := range sched {
		if !sleep.Until(ctx, base.Add(st.At)) {
			return nil
		}
		r.step(ctx, i, st)
	}
	return nil
}

// write records the nemesis operation verb with value v (history.NemesisOp)
// and the commands the cluster ran for it.
func (r *Runner) write(verb string, v history.NemesisValue, err error) {
	if cr, ok := r.Cluster.(runtime.CommandRecorder); ok {
		v.Commands = cr.TakeCommands()
	}
	if err != nil {
		r.failed.Add(1)
	}
	r.History.Write(history.NemesisOp(int64(time.Since(r.Epoch)), verb, v, err))
}

// stepValue is the value of step i's operations, resolved to a, under
// target t (none for a client fault).
func stepValue(i int, st Step, t Target, a Action) history.NemesisValue {
	v := history.NemesisValue{NemesisAction: a, Step: &i, Target: string(t), Shape: string(st.Shape), Hold: st.Hold.String()}
	if IsClientKind(st.Kind) {
		v.Target = ""
	}
	if st.Kind == FaultPoints {
		v.FaultPointValue = st.Point.value()
	}
	switch st.Kind {
	case DiskFault:
		v.DiskFault = DrawDiskFault(st.Pick)
	case ClockSkew:
		v.Skew = DrawSkew(st.Pick).String()
	}
	return v
}

func (r *Runner) step(ctx context.Context, i int, st Step) {
	a, err := Resolve(ctx, st, r.Target, r.Topo)
	v := stepValue(i, st, r.Target, a)
	if err != nil {
		r.write(string(st.Kind), v, err)
		return
	}
	if isScenario(st.Kind) {
		r.scenario(ctx, st, v)
		return
	}
	if st.Kind == Reassign {
		r.reassign(ctx, st, v)
		return
	}
	if IsLinkKind(st.Kind) {
		r.link(ctx, st, v)
		return
	}
	if st.Kind == RestartStorm {
		r.storm(ctx, st, v)
		return
	}
	if st.Kind == FaultPoints {
		r.faultPoints(ctx, i, st, v)
		return
	}
	if IsNodeFaultKind(st.Kind) {
		r.nodeFault(ctx, i, st, v)
		return
	}
	if st.Kind == ClientCrash {
		if r.Crash == nil {
			r.write(string(st.Kind), v, errors.New("no workload client to crash"))
			return
		}
		p, tearDown, ok := r.Crash()
		if ok {
			v.Process = &p
			r.done.Add(1)
			r.write(string(st.Kind), v, nil)
			tearDown()
		} else {
			r.write(string(st.Kind), v, errors.New("no client running"))
		}
		return
	}
	if st.Kind == PauseProducer {
		r.pauseProducer(ctx, st, v)
		return
	}
	if GroupOnly(st.Kind) || ShareOnly(st.Kind) {
		if r.Clients == nil {
			r.write(string(st.Kind), v, errors.New("the workload has no group consumers (use --workload group, or share for pause-share-consumer)"))
			return
		}
		// Recorded when it begins, with the processes once it is done: a
		// rolling restart takes a while, and the rebalances it causes
		// follow its start.
		r.done.Add(1)
		r.write(string(st.Kind), v, nil)
		procs, err := r.Clients(ctx, st.Kind)
		v.Processes = procs
		r.write(undoVerb(st.Kind), v, err)
		return
	}
	r.active.Add(1)
	defer r.active.Add(-1)
	r.done.Add(1)
	start := v
	if ledFault(st.Kind) {
		start.Led, start.LedError = r.led(ctx, a.Nodes)
	}
	r.write(string(st.Kind), start, r.applyWhole(ctx, st.Kind, a))
	sleep.For(ctx, st.Hold)
	uctx, cancel := r.undoContext(ctx)
	defer cancel()
	r.write(undoVerb(st.Kind), v, r.undo(uctx, st.Kind, a))
}

// pauseProducer runs a PauseProducer step: the pause is written when asked
// for, its end when the producer runs again (bounded by the hold plus the
// undo timeout).
func (r *Runner) pauseProducer(ctx context.Context, st Step, v history.NemesisValue) {
	if r.PauseProducer == nil {
		r.write(string(st.Kind), v, errors.New("no transactional producer to pause (use --workload txn)"))
		return
	}
	p, used, resumed, ok := r.PauseProducer(st.Hold)
	if !ok {
		r.write(string(st.Kind), v, errors.New("no producer running"))
		return
	}
	r.active.Add(1)
	defer r.active.Add(-1)
	r.done.Add(1)
	v.Process, v.Hold = &p, used.String()
	r.write(string(st.Kind), v, nil)
	t := time.NewTimer(used + r.undoTimeout())
	defer t.Stop()
	var err error
	select {
	case <-resumed:
	case <-t.C:
		err = fmt.Errorf("producer %d did not run again within %v", p, used+r.undoTimeout())
	}
	r.write(undoVerb(st.Kind), v, err)
}

// eachNode applies f to every node, naming the node in each error.
func eachNode(ctx context.Context, nodes []int32, f func(context.Context, int32) error) error {
	var errs []error
	for _, id := range nodes {
		if err := f(ctx, id); err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// applyWhole applies a step begun to its end: the fault phase's deadline
// must not cut a kill or a partition half-way (the request sent, its answer
// abandoned: the undo then finds the node neither up nor down, and the
// history records a fault that half happened). It is bounded by the undo
// timeout, and a run's cancellation (ctx canceled, not past its deadline)
// still ends it at once.
func (r *Runner) applyWhole(ctx context.Context, k Kind, a Action) error {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.undoTimeout())
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) {
			cancel()
		}
	})
	defer stop()
	// The run's own end (Interrupt) cuts it too, after the deadline as
	// before it: fctx's error stays DeadlineExceeded once the time limit
	// passed, so a SIGTERM then is seen only through Interrupt.
	if r.Interrupt != nil {
		if r.Interrupt.Err() != nil {
			cancel()
		}
		stopI := context.AfterFunc(r.Interrupt, cancel)
		defer stopI()
	}
	return r.apply(actx, k, a)
}

func (r *Runner) apply(ctx context.Context, k Kind, a Action) error {
	var errs []error
	each := func(f func(context.Context, int32) error) { errs = append(errs, eachNode(ctx, a.Nodes, f)) }
	c := r.Cluster
	switch k {
	case Kill, PowerLoss, KillTxnCoordinator:
		each(c.Kill)
	case Stop:
		grace := r.StopGrace
		if grace <= 0 {
			grace = 10 * time.Second
		}
		each(func(ctx context.Context, id int32) error { return c.Stop(ctx, id, grace) })
	case Pause:
		each(c.Pause)
	case Partition:
		errs = append(errs, c.Partition(ctx, a.Groups))
	case Slow:
		each(func(ctx context.Context, id int32) error {
			return c.Slow(ctx, id, r.SlowDelay, r.SlowJitter, r.SlowLoss)
		})
	default:
		errs = append(errs, fmt.Errorf("nemesis %q is not a node fault", k))
	}
	return errors.Join(errs...)
}

func (r *Runner) undo(ctx context.Context, k Kind, a Action) error {
	var errs []error
	each := func(f func(context.Context, int32) error) { errs = append(errs, eachNode(ctx, a.Nodes, f)) }
	c := r.Cluster
	switch k {
	case Kill, PowerLoss, Stop, KillTxnCoordinator:
		each(c.Start)
	case Pause:
		each(c.Resume)
	case Partition:
		errs = append(errs, c.Heal(ctx))
	case Slow:
		each(c.Unslow)
	}
	return errors.Join(errs...)
}

// HealAll undoes every fault on every node of the cluster: resume the
// paused, start the stopped, remove network faults. It writes one nemesis
// operation "heal-all" naming the nodes it restarted or resumed.
func HealAll(ctx context.Context, c runtime.Cluster, h *history.Writer, epoch time.Time) error {
	var errs []error
	var touched []int32
	for _, n := range c.Nodes() {
		st, err := c.Status(ctx, n.ID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		switch st {
		case runtime.StatePaused:
			errs = append(errs, c.Resume(ctx, n.ID))
			touched = append(touched, n.ID)
		case runtime.StateStopped:
			errs = append(errs, c.Start(ctx, n.ID))
			touched = append(touched, n.ID)
		}
	}
	errs = append(errs, c.Heal(ctx))
	err := errors.Join(errs...)
	if h != nil {
		r := Runner{Cluster: c, History: h, Epoch: epoch}
		r.write(history.VerbHealAll, history.NemesisValue{NemesisAction: Action{Nodes: touched, Partition: -1}}, err)
	}
	return err
}

// Describe renders a schedule as the nemesis operations it would write
// (start and end of each step, at their planned times), resolved against
// topo: two schedules are the same exactly when their descriptions are.
func Describe(ctx context.Context, sched Schedule, t Target, topo Topology) ([]history.Op, error) {
	var ops []history.Op
	for i, st := range sched {
		a, err := Resolve(ctx, st, t, topo)
		if err != nil {
			return nil, err
		}
		v := stepValue(i, st, t, a)
		start := history.NemesisOp(int64(st.At), string(st.Kind), v, nil)
		start.Index = int64(len(ops))
		ops = append(ops, start)
		if !instant(st.Kind) {
			end := history.NemesisOp(int64(st.At+st.Hold), undoVerb(st.Kind), v, nil)
			end.Index = int64(len(ops))
			ops = append(ops, end)
		}
	}
	return ops, nil
}
