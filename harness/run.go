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
	"gregor/workloads/eos"
	"gregor/workloads/txn"
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
// names the fix.
func (t *Test) Validate() error {
	if t.Runtime == nil {
		return errors.New("no runtime")
	}
	if err := t.Config.Validate(); err != nil {
		return err
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

// Run runs the test's phases: setup, warm-up, faults, heal, recovery,
// final reads, check, store. The history is on disk as it happens. When
// ctx ends early, Run tears the cluster down, keeps what it has and returns
// ErrInterrupted with the report.
func Run(ctx context.Context, t Test) (*Report, error) {
	t.defaults()
	attached, isAttached := t.Runtime.(runtime.Attached)
	if isAttached {
		if err := t.attach(ctx, attached); err != nil {
			return nil, err
		}
	}
	if err := t.Validate(); err != nil {
		return nil, badInput(err)
	}
	if isAttached {
		if err := attached.CheckFaults(t.Nemeses); err != nil {
			return nil, badInput(err)
		}
		// A cluster gregor did not boot may hold earlier runs' topics: each
		// run writes a topic of its own.
		t.Topic = fmt.Sprintf("%s-%s", t.Topic, time.Now().UTC().Format("20060102T150405.000"))
	}
	// The schedule is a pure function of the seed and the nemesis options,
	// or read from --schedule.
	sched, schedFile, err := t.schedule()
	if err != nil {
		return nil, err
	}
	record := t.Record(t.Runtime.Name())
	rep := &Report{Runtime: t.Runtime.Name(), Seed: t.Seed, Schedule: sched}
	epoch := time.Now()
	dir, err := openRunDir(t.Store, t.Name, &record, epoch)
	if err != nil {
		return nil, err
	}
	rep.Dir = string(dir.path)
	// Before anything boots: a crash leaves the schedule and the settings.
	if err := writeSchedule(dir.path, schedFile); err != nil {
		return rep, err
	}
	if err := writeSettings(dir.path, &t.Config, t.Runtime.Name()); err != nil {
		if _, ok := errors.AsType[*StoreError](err); ok {
			return rep, err
		}
		rep.Notes = append(rep.Notes, "run.json: "+err.Error()+" (gregor shrink cannot replay this run)")
	}
	var histErr error
	histClosed := false
	closeHist := func() {
		if !histClosed {
			histClosed = true
			histErr = dir.close()
		}
	}
	defer closeHist()
	// A history that cannot be written ends the run: every phase sees ctx
	// end, and the run returns a StoreError instead of checking a history
	// that lost lines.
	ctx, stopOnStoreFailure := context.WithCancel(ctx)
	defer stopOnStoreFailure()
	go func() {
		select {
		case <-dir.hist.Failed():
			stopOnStoreFailure()
		case <-ctx.Done():
		}
	}()
	// interrupted ends a run cut short: the caller's cancellation, or the
	// store failing.
	interrupted := func(stopWorkload, teardown func()) (*Report, error) {
		stopWorkload()
		closeHist()
		teardown()
		if histErr != nil {
			return rep, histErr
		}
		return rep, ErrInterrupted
	}

	pr := &progress{w: t.Progress, start: epoch}
	pr.set("setup")
	c, err := t.Runtime.Start(ctx, t.spec())
	if err != nil {
		if ctx.Err() != nil {
			return interrupted(func() {}, func() {})
		}
		return rep, fmt.Errorf("boot: %w", err)
	}
	clusterClosed := false
	teardown := func() {
		if clusterClosed {
			return
		}
		clusterClosed = true
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		if err := saveLogs(lctx, c, dir.path); err != nil {
			rep.Notes = append(rep.Notes, err.Error())
		}
		cancel()
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		if err := c.Close(cctx); err != nil {
			rep.Notes = append(rep.Notes, "close cluster: "+err.Error())
		}
		cancel()
	}
	defer teardown()

	var bootstrap []string
	var brokers, voters []int32
	for _, n := range c.Nodes() {
		if !n.ControllerOnly {
			bootstrap = append(bootstrap, n.KafkaAddr)
			brokers = append(brokers, n.ID)
		} else {
			voters = append(voters, n.ID)
		}
	}
	if t.LinkDelay > 0 {
		// Say how: docker without netem "delays" by freezing containers,
		// which is a stop-the-world pause pattern, not a slower link.
		d := c.Capabilities().Get(runtime.FaultDelay)
		rep.Notes = append(rep.Notes, fmt.Sprintf("link delay %v: %s (%s)", t.LinkDelay, d.Support, d.How))
		sd := standingDelay{Cluster: c, d: t.LinkDelay}
		if err := sd.all(ctx); err != nil {
			return rep, fmt.Errorf("link delay: %w", err)
		}
		c = sd
	}
	if t.AfterBoot != nil {
		if err := t.AfterBoot(ctx, c); err != nil {
			return rep, fmt.Errorf("after boot: %w", err)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	ts := t.topic()
	ts.ClusterDefaults = t.ClusterTopicDefaults
	err = CreateTopic(sctx, bootstrap, ts)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return interrupted(func() {}, teardown)
		}
		return rep, fmt.Errorf("setup: %w", err)
	}
	if runtime.IsForeign(t.Runtime) {
		// The theory reasons with what the cluster runs, not with the flags.
		notes, err := readSettings(ctx, bootstrap, brokers, t.Topic, &record)
		if err != nil {
			return rep, fmt.Errorf("setup: %w", err)
		}
		rep.Notes = append(rep.Notes, notes...)
		if err := history.WriteConfig(dir.path.Config(), &record); err != nil {
			return rep, storeErr(dir.path.Config(), err)
		}
	}

	// Partition state is sampled from here through recovery.
	mds, err := t.startMetadata(ctx, c, dir.path, epoch)
	if err != nil {
		rep.Notes = append(rep.Notes, err.Error())
	}
	defer mds.Stop()

	links := clientlink.New()
	wl, clients, err := t.newWorkload(bootstrap, links, dir.hist, epoch)
	if err != nil {
		return rep, err
	}
	topo, err := nemesis.NewKafkaTopology(bootstrap, t.Topic, t.Partitions, brokers)
	if err != nil {
		return rep, err
	}
	defer topo.Close()
	topo.ControllerOnly = voters
	if t.Workload == WorkloadGroup {
		g := t.groupConfig()
		g.Validate() // fills the default group id; t is validated
		topo.Group = g.Group
	}
	runner := &nemesis.Runner{Cluster: c, Topo: topo, History: dir.hist, Epoch: epoch, Target: nemesis.Target(t.Target),
		Crash: wl.Crash, Clients: clients, Links: links, SessionTimeout: t.Cluster.SessionTimeout, SlowDelay: t.SlowDelay, SlowLoss: t.SlowLoss}
	if t.Workload == WorkloadEOS {
		topo.TransactionalIDs = eos.TransactionalIDs(t.Consumers)
		topo.Group, topo.TxnID = eos.Group, topo.TransactionalIDs[0]
	}
	if tw, ok := wl.(*txn.Workload); ok {
		topo.TransactionalIDs = txn.TransactionalIDs(t.Producers)
		topo.TxnID = topo.TransactionalIDs[0] // --nemesis-target coordinator
		runner.PauseProducer = tw.PauseProducer
	}
	pr.ops = wl.Ops
	pr.faults = func() (int, int) { return runner.Done(), runner.Active() }
	stopProgress := make(chan struct{})
	var bg sync.WaitGroup
	bg.Go(func() { pr.loop(t.ProgressEvery, stopProgress) })
	defer func() { close(stopProgress); bg.Wait() }()

	wctx, cancelWorkload := context.WithCancel(ctx)
	defer cancelWorkload()
	var wlWG sync.WaitGroup
	wlWG.Go(func() { wl.Run(wctx) })
	// stopWorkload ends the workload and waits for the operations in flight
	// (each bounded by the delivery or poll timeout).
	stopWorkload := func() { cancelWorkload(); wlWG.Wait() }

	pr.set("warm-up")
	sleep.For(ctx, t.WarmUp)

	pr.set("faults")
	fctx, cancel := context.WithTimeout(ctx, t.TimeLimit)
	runner.Run(fctx, sched)
	<-fctx.Done() // the schedule may end before the limit; the workload runs on
	cancel()
	var warnings []string
	if n := runner.Failed(); n > 0 {
		warnings = append(warnings, scheduleNotApplied(n))
		rep.Notes = append(rep.Notes, scheduleNotApplied(n))
	}

	if ctx.Err() != nil {
		return interrupted(stopWorkload, teardown)
	}
	pr.set("heal")
	hctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	if err := nemesis.HealAll(hctx, c, dir.hist, epoch); err != nil {
		rep.Notes = append(rep.Notes, "heal: "+err.Error())
	}
	// Client links too: answers flow again, held requests go out now.
	links.Heal()
	if err := links.Wait(hctx); err != nil {
		rep.Notes = append(rep.Notes, "heal: late deliveries of held requests still pending: "+err.Error())
	}
	cancel()

	pr.set("recovery")
	rctx, cancel := context.WithTimeout(ctx, t.RecoveryTimeout)
	if err := WaitHealthy(rctx, bootstrap, t.topic()); err != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("recovery: not healthy within %v: %v", t.RecoveryTimeout, err))
	}
	cancel()
	stopWorkload()
	if ctx.Err() != nil {
		return interrupted(stopWorkload, teardown)
	}

	if err := mds.Stop(); err != nil {
		// The sampler fails only writing metadata.jsonl.
		stopWorkload()
		teardown()
		return rep, storeErr(dir.path.Metadata(), err)
	}
	pr.set("final-read")
	frctx, cancel := context.WithTimeout(ctx, t.FinalReadTimeout)
	if err := wl.FinalRead(frctx); err != nil {
		rep.Notes = append(rep.Notes, err.Error())
	}
	cancel()
	if ctx.Err() != nil {
		return interrupted(stopWorkload, teardown)
	}
	closeHist()
	if histErr != nil {
		teardown()
		return rep, histErr
	}
	pr.set("teardown")
	teardown()

	pr.set("check")
	// The stored run is read back, as a later `gregor check` would see it.
	rep.Faults = c.Capabilities().String()
	run, res, err := CheckRun(dir.path.History(), CheckOptions{Store: true, Faults: rep.Faults, Warnings: warnings,
		Checker: checker.Options{KeyTimeout: t.CheckTimeout}})
	if err != nil {
		return rep, fmt.Errorf("check: %w", err)
	}
	schedFile.Resolve(run.Ops) // the nodes each step hit, for the record
	if err := writeSchedule(dir.path, schedFile); err != nil {
		rep.Notes = append(rep.Notes, err.Error())
	}
	rep.Checked, rep.Result = true, res
	pr.set("done")
	return rep, nil
}
