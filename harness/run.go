package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"gregor/checker"
	"gregor/history"
	"gregor/internal/sleep"
	"gregor/nemesis"
	"gregor/runtime"
	"gregor/runtime/clientlink"
	"gregor/workloads/kit"
)

// Test is one `gregor run`: its settings (Config) and what runs them.
type Test struct {
	Config
	Runtime runtime.Runtime
	// Binary is the static gregor binary every node runs.
	Binary string

	// Progress receives a progress line every ProgressEvery (nil: none).
	Progress      io.Writer
	ProgressEvery time.Duration
	// CheckTimeout is porcupine's budget per key.
	CheckTimeout time.Duration
	// AfterBoot, if set, runs once the cluster is up, before the topic is
	// created: e.g. a standing link delay that models a wider network. The
	// heal phase removes network faults it set.
	AfterBoot func(ctx context.Context, c runtime.Cluster) error
	// ClusterTopicDefaults names topic configs (ConfigMinISR, ConfigUnclean)
	// the test topic leaves to the cluster's defaults: on a cluster gregor
	// did not boot, the settings the user did not ask for are the cluster's.
	ClusterTopicDefaults []string
	// Started names the run directory when set (zero: the run's own
	// clock). A simulated run's clock is virtual and starts at 2000-01-01,
	// so the process that started it gives its wall-clock time.
	Started time.Time
}

// Report is what a run leaves: where it stored everything and the verdict.
type Report struct {
	Dir     string
	Runtime string
	Seed    int64
	// Checked is false when the run stopped before the check (interrupt).
	Checked bool
	Result  checker.Result
	// Schedule is the planned nemesis schedule (schedule.json).
	Schedule nemesis.Schedule
	// Faults says how the runtime made each fault (the report's line).
	Faults string
	// Notes are problems that did not stop the run: a recovery that timed
	// out, an incomplete final read, a failed log copy.
	Notes []string
}

// ErrInterrupted is returned when ctx ended before the check.
var ErrInterrupted = errors.New("run interrupted before the check: the history so far is stored, no verdict")

// Validate refuses impossible tests before anything boots; each message
// names the fix. Settings that Config.Validate passed and nothing changed
// since (the command validates them at the edge) are not validated again.
func (t *Test) Validate() error {
	if t.Runtime == nil {
		return errors.New("no runtime")
	}
	if !t.Config.validated {
		if err := t.Config.Validate(); err != nil {
			return err
		}
	}
	if t.Cluster.Authorizer && !t.Cluster.Security.SASL() && t.Runtime.Name() != "external" {
		// Without SASL every connection is User:ANONYMOUS: the principals
		// whose ACLs the run grants and revokes could not exist.
		return fmt.Errorf("--workload %s runs the brokers' authorizer, whose principals are SASL users: give --security-protocol SASL_PLAINTEXT (or SASL_SSL) with --sasl-mechanism, --sasl-user and --sasl-password-file (the super user)", t.Workload)
	}
	spec := t.spec()
	return spec.Validate()
}

// spec is the cluster the test boots: named <Name>-<Seed%100000>, so
// parallel runs of one test differ, and labelled with the test's name.
func (t *Test) spec() runtime.ClusterSpec {
	spec := t.Cluster.Spec(fmt.Sprintf("%s-%d", t.Name, t.Seed%100000), t.Binary)
	spec.Labels["gregor.test"] = t.Name
	return spec
}

func (t *Test) defaults() {
	if t.ProgressEvery <= 0 {
		t.ProgressEvery = 2 * time.Second
	}
}

// Run runs the test's phases (DESIGN.md section 8): setup, warm-up, faults,
// heal, recovery, final reads, teardown, check. The history is on disk as
// it happens. When ctx ends early, Run tears the cluster down, keeps what
// it has and returns ErrInterrupted with the report.
func Run(ctx context.Context, t Test) (*Report, error) {
	t.defaults()
	if err := t.admit(ctx); err != nil {
		return nil, err
	}
	r, err := open(t)
	if r == nil {
		return nil, err
	}
	defer r.release()
	if err != nil {
		return r.rep, err
	}
	ctx = r.watchStore(ctx)
	if err := r.setup(ctx); err != nil {
		if errors.Is(err, errCutShort) {
			return r.interrupted()
		}
		return r.rep, err
	}
	r.warmUp(ctx)
	r.faults(ctx)
	if ctx.Err() != nil {
		return r.interrupted()
	}
	r.heal(ctx)
	r.recovery(ctx)
	if ctx.Err() != nil {
		return r.interrupted()
	}
	if err := r.finalReads(ctx); err != nil {
		return r.rep, err
	}
	if ctx.Err() != nil {
		return r.interrupted()
	}
	if err := r.teardown(); err != nil {
		return r.rep, err
	}
	if ctx.Err() != nil {
		return r.interrupted()
	}
	return r.check(ctx)
}

// admit refuses, before anything is written, a test that cannot run: an
// attached cluster's shape is learnt first, then the settings are
// validated (once) and the faults checked against what the cluster allows.
func (t *Test) admit(ctx context.Context) error {
	attached, isAttached := t.Runtime.(runtime.Attached)
	if isAttached {
		if err := t.attach(ctx, attached); err != nil {
			return err
		}
	}
	if err := t.Validate(); err != nil {
		return badInput(err)
	}
	if err := t.admitFaultPoints(); err != nil {
		return badInput(err)
	}
	if err := t.admitNodeFaults(); err != nil {
		return badInput(err)
	}
	if isAttached {
		if err := attached.CheckFaults(t.Nemeses); err != nil {
			return badInput(err)
		}
		// A cluster gregor did not boot may hold earlier runs' topics: each
		// run writes a topic of its own.
		t.Topic = fmt.Sprintf("%s-%s", t.Topic, time.Now().UTC().Format("20060102T150405.000"))
	}
	return nil
}

// run is one Run under way: what its phases hand each other. Each phase
// is a method; release gives back whatever the run still holds, whichever
// phase it ended in.
type run struct {
	t         Test
	rep       *Report
	record    history.Config
	schedFile *nemesis.ScheduleFile
	epoch     time.Time
	dir       *runDir
	pr        *progress

	// stopStore ends the run's context when the history cannot be written;
	// lasting is that context never cancelled, for the teardown.
	stopStore context.CancelFunc
	lasting   context.Context
	// histClosed and histErr: the history is closed once, its error kept.
	histClosed bool
	histErr    error

	// From setup on: the cluster (closed by closeCluster, once), its brokers
	// and controllers, the metadata sampler, the workload, its topology
	// and the nemesis runner.
	c               runtime.Cluster
	clusterClosed   bool
	bootstrap       []string
	brokers, voters []int32
	mds             *MetadataSampler
	links           *clientlink.Links
	wl              kit.Workload
	topo            *nemesis.KafkaTopology
	runner          *nemesis.Runner
	warnings        []string
	progressDone    chan struct{}
	progressWG      sync.WaitGroup
	cancelWorkload  context.CancelFunc
	workloadWG      sync.WaitGroup
	// healStarted: the heal phase began (a run cut short before it heals
	// a foreign cluster on its way out).
	healStarted bool
	// awaited is what a passed bound left unfinished (awaited.json).
	awaited []Awaited
}

// errCutShort is a setup step that ended because the run's context did.
var errCutShort = errors.New("cut short")

// open draws (or reads) the schedule and opens the run directory, then
// writes, before anything boots, what a crash must leave: the schedule
// and the settings. A run that could not write them comes back with the
// error: its directory holds what it wrote.
func open(t Test) (*run, error) {
	// The schedule is a pure function of the seed and the nemesis options,
	// or read from --schedule.
	sched, schedFile, err := t.schedule()
	if err != nil {
		return nil, err
	}
	r := &run{t: t, record: t.Record(t.Runtime.Name()), schedFile: schedFile, epoch: time.Now(),
		rep: &Report{Runtime: t.Runtime.Name(), Seed: t.Seed, Schedule: sched}}
	r.dir, err = openRunDir(t.Store, t.Name, &r.record, t.stamp(r.epoch))
	if err != nil {
		return nil, err
	}
	r.rep.Dir = string(r.dir.path)
	r.pr = &progress{w: t.Progress, start: r.epoch}
	if err := writeSchedule(r.dir.path, schedFile); err != nil {
		return r, err
	}
	if err := writeSettings(r.dir.path, &t.Config, t.Runtime.Name()); err != nil {
		if _, ok := errors.AsType[*StoreError](err); ok {
			return r, err
		}
		r.rep.Notes = append(r.rep.Notes, "run.json: "+err.Error()+" (gregor shrink cannot replay this run)")
	}
	return r, nil
}

// watchStore ends the run's context when the history cannot be written:
// every phase sees ctx end, and the run returns a StoreError instead of
// checking a history that lost lines.
func (r *run) watchStore(ctx context.Context) context.Context {
	r.lasting = context.WithoutCancel(ctx)
	ctx, r.stopStore = context.WithCancel(ctx)
	go func() {
		select {
		case <-r.dir.hist.Failed():
			r.stopStore()
		case <-ctx.Done():
		}
	}()
	return ctx
}

// setup boots the cluster, creates the topic (every partition with a
// leader and a full ISR), starts sampling partition state and builds the
// workload and the nemesis that will act on it.
func (r *run) setup(ctx context.Context) error {
	r.pr.set("setup")
	if err := r.boot(ctx); err != nil {
		return err
	}
	if err := r.createTopic(ctx); err != nil {
		return err
	}
	// Partition state is sampled from here through recovery.
	mds, err := r.t.startMetadata(ctx, r.c, r.dir.path, r.epoch)
	if err != nil {
		r.rep.Notes = append(r.rep.Notes, err.Error())
	}
	r.mds = mds
	return r.buildWorkload()
}

// boot starts the cluster, learns its brokers and controller-only voters,
// and lays the standing link delay and AfterBoot on it.
func (r *run) boot(ctx context.Context) error {
	c, err := r.t.Runtime.Start(ctx, r.t.spec())
	if err != nil {
		if ctx.Err() != nil {
			return errCutShort
		}
		return &BootError{Err: err}
	}
	r.c = c
	for _, n := range c.Nodes() {
		if !n.ControllerOnly {
			r.bootstrap = append(r.bootstrap, n.KafkaAddr)
			r.brokers = append(r.brokers, n.ID)
		} else {
			r.voters = append(r.voters, n.ID)
		}
	}
	if r.t.LinkDelay > 0 {
		// Say how: docker without netem "delays" by freezing containers,
		// which is a stop-the-world pause pattern, not a slower link.
		d := c.Capabilities().Get(runtime.FaultDelay)
		r.rep.Notes = append(r.rep.Notes, fmt.Sprintf("link delay %v: %s (%s)", r.t.LinkDelay, d.Support, d.How))
		sd := standingDelay{Cluster: c, d: r.t.LinkDelay}
		if err := sd.all(ctx); err != nil {
			return fmt.Errorf("link delay: %w", err)
		}
		r.c = sd // the heal and the teardown see the delay too
	}
	if r.t.AfterBoot != nil {
		if err := r.t.AfterBoot(ctx, r.c); err != nil {
			return fmt.Errorf("after boot: %w", err)
		}
	}
	return nil
}

// createTopic creates the test topic and waits for every partition to
// have a leader and a full ISR. On a cluster gregor did not boot, test.json
// then records the settings the cluster runs, which the theory reasons
// with, not the flags.
func (r *run) createTopic(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	ts := r.t.topic()
	ts.ClusterDefaults = r.t.ClusterTopicDefaults
	err := CreateTopic(sctx, r.bootstrap, ts)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return errCutShort
		}
		return fmt.Errorf("setup: %w", err)
	}
	if !runtime.IsForeign(r.t.Runtime) {
		return nil
	}
	notes, err := readSettings(ctx, r.bootstrap, r.brokers, r.t.Topic, &r.record)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	r.rep.Notes = append(r.rep.Notes, notes...)
	if err := history.WriteConfig(r.dir.path.Config(), &r.record); err != nil {
		return storeErr(r.dir.path.Config(), err)
	}
	return nil
}

// buildWorkload builds the workload on the client-link network, the
// topology its faults resolve against (with the workload's coordinators)
// and the nemesis runner with the workload's hooks.
func (r *run) buildWorkload() error {
	r.links = clientlink.New()
	wl, hooks, err := r.t.newWorkload(r.bootstrap, r.links, r.dir.hist, r.epoch)
	if err != nil {
		return err
	}
	r.wl = wl
	topo, err := nemesis.NewKafkaTopology(r.bootstrap, r.t.Topic, r.t.Partitions, r.brokers)
	if err != nil {
		return err
	}
	r.topo = topo
	topo.ControllerOnly = r.voters
	topo.Group, topo.TxnID, topo.TransactionalIDs, topo.ShareGroup = hooks.Group, hooks.TxnID, hooks.TransactionalIDs, hooks.ShareGroup
	r.runner = &nemesis.Runner{Cluster: r.c, Topo: topo, History: r.dir.hist, Epoch: r.epoch, Target: nemesis.Target(r.t.Target),
		Crash: wl.Crash, PauseProducer: hooks.PauseProducer, Links: r.links, SessionTimeout: r.t.Cluster.SessionTimeout,
		SlowDelay: r.t.SlowDelay, SlowLoss: r.t.SlowLoss}
	r.runner.PointTarget = nemesis.Target(r.t.PointTarget)
	if hooks.Clients != nil {
		r.runner.Clients = func(ctx context.Context, k nemesis.Kind) ([]int, error) { return hooks.Clients(ctx, string(k)) }
	}
	return nil
}

// warmUp starts the progress line and the workload, and lets the
// workload run without faults.
func (r *run) warmUp(ctx context.Context) {
	r.pr.ops = r.wl.Ops
	r.pr.faults = r.faultCounts
	r.progressDone = make(chan struct{})
	r.progressWG.Go(func() { r.pr.loop(r.t.ProgressEvery, r.progressDone) })
	wctx, cancel := context.WithCancel(ctx)
	r.cancelWorkload = cancel
	r.workloadWG.Go(func() { r.wl.Run(wctx) })
	r.pr.set("warm-up")
	sleep.For(ctx, r.t.WarmUp)
}

// faultCounts are the faults started and in force, for the progress line.
func (r *run) faultCounts() (done, active int) { return r.runner.Done(), r.runner.Active() }

// faults runs the schedule for the time limit; the schedule may end
// before it, and the workload runs on. Steps that failed are noted.
func (r *run) faults(ctx context.Context) {
	r.pr.set("faults")
	fctx, cancel := context.WithTimeout(ctx, r.t.TimeLimit)
	// A step in force when the time limit ends is undone past fctx's
	// deadline, but not past the run's end.
	r.runner.Interrupt = ctx
	r.runner.Run(fctx, r.rep.Schedule)
	<-fctx.Done()
	cancel()
	if n := r.runner.Failed(); n > 0 {
		r.warnings = append(r.warnings, scheduleNotApplied(n))
		r.rep.Notes = append(r.rep.Notes, scheduleNotApplied(n))
	}
}

// heal removes every fault: the brokers' and the client links' (answers
// flow again, held requests go out now).
func (r *run) heal(ctx context.Context) {
	r.pr.set("heal")
	r.healStarted = true
	hctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := nemesis.HealAll(hctx, r.c, r.dir.hist, r.epoch); err != nil {
		r.rep.Notes = append(r.rep.Notes, "heal: "+err.Error())
	}
	r.links.Heal()
	if err := r.links.Wait(hctx); err != nil {
		r.rep.Notes = append(r.rep.Notes, "heal: late deliveries of held requests still pending: "+err.Error())
	}
}

// recovery waits, bounded by the recovery timeout, for every partition to
// have a leader and a full ISR, then stops the workload.
func (r *run) recovery(ctx context.Context) {
	r.pr.set("recovery")
	rctx, cancel := context.WithTimeout(ctx, r.t.RecoveryTimeout)
	if err := WaitHealthy(rctx, r.bootstrap, r.t.topic()); err != nil && ctx.Err() == nil {
		msg := fmt.Sprintf("recovery: not healthy within %v: %v", r.t.RecoveryTimeout, err)
		r.rep.Notes = append(r.rep.Notes, msg)
		r.awaited = append(r.awaited, Awaited{Phase: "recovery", Bound: r.t.RecoveryTimeout.String(), What: err.Error()})
	}
	cancel()
	r.stopWorkload(ctx)
}

// finalReads ends the partition-state sampling (which ran through
// recovery) and reads every key from offset 0 to its high watermark.
func (r *run) finalReads(ctx context.Context) error {
	if err := r.mds.Stop(); err != nil {
		// The sampler fails only writing metadata.jsonl.
		r.closeCluster()
		return storeErr(r.dir.path.Metadata(), err)
	}
	r.pr.set("final-read")
	frctx, cancel := context.WithTimeout(ctx, r.t.FinalReadTimeout)
	defer cancel()
	// Every poll of a final read is bounded and its loops end with frctx;
	// a read still running interruptGrace after frctx ended (a client's
	// Close waiting on a broker that does not answer) is left behind: its
	// later writes to the closed history are refused.
	done := make(chan error, 1)
	go func() { done <- r.wl.FinalRead(frctx) }()
	var err error
	select {
	case err = <-done:
	case <-frctx.Done():
		select {
		case err = <-done:
		case <-time.After(interruptGrace):
			err = fmt.Errorf("final read: still running %v after its bound; left behind", interruptGrace)
		}
	}
	if err != nil {
		r.rep.Notes = append(r.rep.Notes, err.Error())
		// A read cut short (by its bound, or its own rounds and re-assigns
		// running out) cannot tell lost from late: the check says unknown
		// rather than pass (or fail on unseen records). A log found short
		// of acknowledged records is a finding, not a read cut short.
		if ctx.Err() == nil && !errors.Is(err, kit.ErrLogGone) {
			bound := r.t.FinalReadTimeout.String()
			if frctx.Err() == nil {
				bound = "its rounds"
			}
			r.awaited = append(r.awaited, Awaited{Phase: "final-read", Bound: bound, What: err.Error(), Decisive: true})
		}
	}
	if len(r.awaited) > 0 {
		if werr := writeAwaited(r.dir.path, r.awaited); werr != nil {
			r.rep.Notes = append(r.rep.Notes, werr.Error())
		}
	}
	return nil
}

// teardown closes the history (a history that lost lines is not checked)
// and the cluster, its logs saved.
func (r *run) teardown() error {
	if err := r.closeHistory(); err != nil {
		r.closeCluster()
		return err
	}
	r.pr.set("teardown")
	r.closeCluster()
	return nil
}

// check reads the stored run back, as a later `gregor check` would see
// it, and records in schedule.json the nodes each step hit. The history
// is closed and complete by now: a cancellation ends the run at once
// with ErrInterrupted (the check's goroutine is abandoned; porcupine's
// budget per key bounds it) and `gregor check DIR` checks it later.
func (r *run) check(ctx context.Context) (*Report, error) {
	r.pr.set("check")
	r.rep.Faults = r.c.Capabilities().String()
	type checked struct {
		run *history.Run
		res checker.Result
		err error
	}
	done := make(chan checked, 1)
	go func() {
		run, res, err := CheckRun(r.dir.path.History(), CheckOptions{Store: true, Faults: r.rep.Faults, Warnings: r.warnings,
			Checker: checker.Options{KeyTimeout: r.t.CheckTimeout}})
		done <- checked{run, res, err}
	}()
	var c checked
	select {
	case c = <-done:
	case <-ctx.Done():
		r.rep.Notes = append(r.rep.Notes, fmt.Sprintf("check interrupted: the history is complete; gregor check %s checks it", r.dir.path))
		return r.rep, ErrInterrupted
	}
	run, res, err := c.run, c.res, c.err
	if err != nil {
		return r.rep, fmt.Errorf("check: %w", err)
	}
	r.schedFile.Resolve(run.Ops)
	if err := writeSchedule(r.dir.path, r.schedFile); err != nil {
		r.rep.Notes = append(r.rep.Notes, err.Error())
	}
	r.rep.Checked, r.rep.Result = true, res
	r.pr.set("done")
	return r.rep, nil
}

// interrupted ends a run cut short (the caller's cancellation, or the
// store failing): the workload stopped, the history closed, the cluster
// torn down.
func (r *run) interrupted() (*Report, error) {
	healed := make(chan error, 1)
	if r.runner != nil && !r.healStarted && runtime.IsForeign(r.t.Runtime) {
		// A cluster gregor did not boot outlives the run: undo the faults
		// in force, best effort and bounded, while the workload stops
		// (gregor's own clusters are torn down instead).
		go func() {
			hctx, cancel := context.WithTimeout(r.lasting, interruptHeal)
			defer cancel()
			healed <- nemesis.HealAll(hctx, r.c, r.dir.hist, r.epoch)
		}()
	} else {
		healed <- nil
	}
	r.stopWorkload(r.cutShort())
	if err := <-healed; err != nil {
		r.rep.Notes = append(r.rep.Notes, "heal on the way out: "+err.Error())
	}
	err := r.closeHistory()
	r.closeCluster()
	if err != nil {
		return r.rep, err
	}
	return r.rep, ErrInterrupted
}

// release gives back whatever the run still holds, in the reverse order
// of taking it; what a phase already gave back is not given twice.
func (r *run) release() {
	r.stopWorkload(r.cutShort())
	r.stopProgress()
	if r.topo != nil {
		r.topo.Close()
	}
	r.mds.Stop()
	r.closeCluster()
	if r.stopStore != nil {
		r.stopStore()
	}
	r.closeHistory()
}

// interruptGrace is how long a run cut short waits for what it stopped
// (the workload's operations in flight, a final read) before leaving it
// behind: a SIGTERM ends a run within seconds.
const interruptGrace = 3 * time.Second

// interruptHeal bounds the heal of a foreign cluster by a run cut short
// before its heal phase.
const interruptHeal = 5 * time.Second

// stopSlack is added to the delivery timeout to bound the wait for a
// stopping workload that was not cut short: each send is bounded by the
// delivery timeout plus 5 s and each poll by the poll timeout, but a
// client's Close may wait on a broker that does not answer.
const stopSlack = 30 * time.Second

// cutShort is an already-ended context: the stop of a run cut short.
func (r *run) cutShort() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// stopWorkload ends the workload and waits for the operations in flight,
// at most the delivery timeout plus stopSlack, and at most interruptGrace
// once ctx ended. Operations still in flight then are left behind: they
// stay invoked-only in the history (indeterminate, as the checker treats
// an operation without a completion), and their later writes are refused
// by the closed history.
func (r *run) stopWorkload(ctx context.Context) {
	if r.cancelWorkload == nil {
		return
	}
	r.cancelWorkload()
	r.cancelWorkload = nil
	done := make(chan struct{})
	go func() { r.workloadWG.Wait(); close(done) }()
	bound := time.NewTimer(r.t.DeliveryTimeout + stopSlack)
	defer bound.Stop()
	select {
	case <-done:
		return
	case <-bound.C:
		r.rep.Notes = append(r.rep.Notes, fmt.Sprintf("workload: still stopping %v after the phase ended; its operations in flight were left open", r.t.DeliveryTimeout+stopSlack))
		return
	case <-ctx.Done():
	}
	select {
	case <-done:
	case <-time.After(interruptGrace):
		r.rep.Notes = append(r.rep.Notes, fmt.Sprintf("workload: still stopping %v after the run was cut short; its operations in flight were left open", interruptGrace))
	}
}

func (r *run) stopProgress() {
	if r.progressDone != nil {
		close(r.progressDone)
		r.progressWG.Wait()
		r.progressDone = nil
	}
}

// closeHistory flushes and closes the history once; its error is the
// run's from then on.
func (r *run) closeHistory() error {
	if !r.histClosed {
		r.histClosed = true
		r.histErr = r.dir.close()
	}
	return r.histErr
}

// closeCluster saves every node's log and closes the cluster, once.
func (r *run) closeCluster() {
	if r.c == nil || r.clusterClosed {
		return
	}
	r.clusterClosed = true
	// The run's context may have ended: the logs and the close get their
	// own time.
	lctx, cancel := context.WithTimeout(r.lasting, 30*time.Second)
	if err := saveLogs(lctx, r.c, r.dir.path); err != nil {
		r.rep.Notes = append(r.rep.Notes, err.Error())
	}
	cancel()
	cctx, cancel := context.WithTimeout(r.lasting, 2*time.Minute)
	if err := r.c.Close(cctx); err != nil {
		r.rep.Notes = append(r.rep.Notes, "close cluster: "+err.Error())
	}
	cancel()
}
