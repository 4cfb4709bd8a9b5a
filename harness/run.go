package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"gregor/checker"
	"gregor/history"
	"gregor/nemesis"
	"gregor/reports"
	"gregor/runtime"
	"gregor/workloads/group"
	"gregor/workloads/queue"
)

// Test is one `gregor run`: a cluster, a topic, the queue workload and a
// nemesis schedule, with its phases' durations.
type Test struct {
	// Name names the store directory: <Store>/<Name>/<timestamp>.
	Name    string
	Store   string
	Runtime runtime.Runtime
	Spec    runtime.ClusterSpec
	// Brokers: nodes 1..Brokers are brokers; later nodes of Spec are
	// controller-only voters (not targeted, not clients' seeds).
	Brokers int
	// Config is written as test.json and given to the checker.
	Config   history.Config
	Topic    TopicSpec
	Workload queue.Config // Bootstrap and Topic are filled in by Run
	Nemesis  NemesisOptions

	// Group, if set, runs the group workload (workload.go): Workload
	// configures its producers.
	Group *group.Config

	WarmUp    time.Duration // workload without faults before the first
	TimeLimit time.Duration // the fault phase
	// RecoveryTimeout bounds the wait, after healing, for every partition to
	// have a leader and a full ISR; FinalReadTimeout bounds the final reads.
	RecoveryTimeout, FinalReadTimeout time.Duration
	// Progress receives a progress line every ProgressEvery (nil: none).
	Progress      io.Writer
	ProgressEvery time.Duration
	// CheckTimeout is porcupine's budget per key.
	CheckTimeout time.Duration
	// MetadataInterval is how often the topic's metadata is sampled into
	// metadata.jsonl: 0 is DefaultMetadataInterval, else 100ms..5s.
	MetadataInterval time.Duration
	// AfterBoot, if set, runs once the cluster is up, before the topic is
	// created: e.g. a standing link delay that models a wider network. The
	// heal phase removes network faults it set.
	AfterBoot func(ctx context.Context, c runtime.Cluster) error
	// LinkDelay is a standing delay on every node's links for the whole
	// test (see standingDelay); 0: none.
	LinkDelay time.Duration
}

// NemesisOptions configure the fault phase.
type NemesisOptions struct {
	Kinds    []nemesis.Kind
	Target   nemesis.Target
	Interval time.Duration   // mean quiet time between faults
	Hold     time.Duration   // mean duration of a fault
	Shapes   []nemesis.Shape // partition shapes drawn from (nil: all)
	// Slow faults: delay and loss on the node's links.
	SlowDelay time.Duration
	SlowLoss  float64
}

// Report is what a run leaves: where it stored everything and the verdict.
type Report struct {
	Dir     string
	Runtime string
	Seed    int64
	// Checked is false when the run stopped before the check (interrupt).
	Checked bool
	Result  checker.Result
	// Schedule is the planned nemesis schedule.
	Schedule nemesis.Schedule
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
	if t.Brokers < 1 || t.Brokers > len(t.Spec.Nodes) {
		return fmt.Errorf("%d brokers of %d nodes", t.Brokers, len(t.Spec.Nodes))
	}
	if t.Topic.RF < 1 || t.Topic.RF > t.Brokers {
		return fmt.Errorf("--rf %d with %d brokers: the replication factor cannot exceed the brokers; lower --rf or raise --nodes", t.Topic.RF, t.Brokers)
	}
	if t.Topic.MinISR < 1 || t.Topic.MinISR > t.Topic.RF {
		return fmt.Errorf("--min-isr %d > --rf %d: no acks=all write could ever succeed; lower --min-isr to at most %d", t.Topic.MinISR, t.Topic.RF, t.Topic.RF)
	}
	if t.LinkDelay < 0 || t.LinkDelay > MaxLinkDelay {
		return fmt.Errorf("--link-delay %v: give 0 to %v (a longer delay misses the session and lag timeouts)", t.LinkDelay, MaxLinkDelay)
	}
	if t.Topic.Partitions < 1 {
		return fmt.Errorf("--partitions %d: give at least 1", t.Topic.Partitions)
	}
	if t.TimeLimit <= 0 {
		return fmt.Errorf("--time-limit %v: give a positive duration", t.TimeLimit)
	}
	for _, k := range t.Nemesis.Kinds {
		if k == nemesis.PowerLoss && !t.Config.LazyFS {
			return errors.New("--nemesis power-loss without --lazyfs: a kill of a broker without lazyfs keeps its page cache, so nothing is lost; add --lazyfs")
		}
	}
	if err := t.Spec.Validate(); err != nil {
		return err
	}
	if err := t.validateMetadata(); err != nil {
		return err
	}
	return t.validateWorkload()
}

func (t *Test) defaults() {
	if t.Name == "" {
		t.Name = "queue"
	}
	if t.Store == "" {
		t.Store = "store"
	}
	if t.Topic.Name == "" {
		t.Topic.Name = "queue"
	}
	if t.RecoveryTimeout <= 0 {
		t.RecoveryTimeout = 60 * time.Second
	}
	if t.FinalReadTimeout <= 0 {
		t.FinalReadTimeout = 60 * time.Second
	}
	if t.ProgressEvery <= 0 {
		t.ProgressEvery = 2 * time.Second
	}
	if t.Nemesis.Interval <= 0 {
		t.Nemesis.Interval = 10 * time.Second
	}
	if t.Nemesis.Hold <= 0 {
		t.Nemesis.Hold = 5 * time.Second
	}
	if t.Nemesis.Target == "" {
		t.Nemesis.Target = nemesis.TargetRandom
	}
	if t.Nemesis.SlowDelay <= 0 && t.Nemesis.SlowLoss <= 0 {
		t.Nemesis.SlowDelay = 5 * time.Second
	}
}

// PlanSchedule is the nemesis schedule t will run (a pure function of the
// seed and the nemesis options).
func (t *Test) PlanSchedule() (nemesis.Schedule, error) {
	t.defaults()
	return nemesis.Plan(t.Config.Seed, nemesis.PlanOptions{Kinds: t.Nemesis.Kinds,
		Interval: t.Nemesis.Interval, Hold: t.Nemesis.Hold, Limit: t.TimeLimit, Shapes: t.Nemesis.Shapes})
}

// Run runs the test's phases: setup, warm-up, faults, heal, recovery,
// final reads, check, store. The history is on disk as it happens. When
// ctx ends early, Run tears the cluster down, keeps what it has and returns
// ErrInterrupted with the report.
func Run(ctx context.Context, t Test) (*Report, error) {
	t.defaults()
	if err := t.Validate(); err != nil {
		return nil, err
	}
	sched, err := t.PlanSchedule()
	if err != nil {
		return nil, err
	}
	t.Config.Runtime = t.Runtime.Name()
	t.Config.Workload = t.workloadName()
	rep := &Report{Runtime: t.Runtime.Name(), Seed: t.Config.Seed, Schedule: sched}
	epoch := time.Now()
	dir, err := openRunDir(t.Store, t.Name, &t.Config, epoch)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	rep.Dir = dir.path
	histClosed := false
	closeHist := func() {
		if !histClosed {
			histClosed = true
			if err := dir.close(); err != nil {
				rep.Notes = append(rep.Notes, "history: "+err.Error())
			}
		}
	}
	defer closeHist()

	pr := &progress{w: t.Progress, start: epoch}
	pr.set("setup")
	c, err := t.Runtime.Start(ctx, t.Spec)
	if err != nil {
		if ctx.Err() != nil {
			return rep, ErrInterrupted
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
		if int(n.ID) <= t.Brokers {
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
	err = CreateTopic(sctx, bootstrap, t.Topic)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return rep, ErrInterrupted
		}
		return rep, fmt.Errorf("setup: %w", err)
	}

	// Partition state is sampled from here through recovery.
	mds, err := t.startMetadata(ctx, c, dir.path, epoch)
	if err != nil {
		rep.Notes = append(rep.Notes, err.Error())
	}
	defer mds.Stop()

	wcfg := t.Workload
	wcfg.Bootstrap, wcfg.Topic, wcfg.Partitions = bootstrap, t.Topic.Name, t.Topic.Partitions
	wl, clients, err := t.newWorkload(wcfg, dir.hist, epoch)
	if err != nil {
		return rep, err
	}
	topo, err := nemesis.NewKafkaTopology(bootstrap, t.Topic.Name, t.Topic.Partitions, brokers)
	if err != nil {
		return rep, err
	}
	defer topo.Close()
	topo.ControllerOnly = voters
	runner := &nemesis.Runner{Cluster: c, Topo: topo, History: dir.hist, Epoch: epoch, Target: t.Nemesis.Target,
		Crash: wl.Crash, Clients: clients, SlowDelay: t.Nemesis.SlowDelay, SlowLoss: t.Nemesis.SlowLoss}
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
	sleepCtx(ctx, t.WarmUp)

	pr.set("faults")
	fctx, cancel := context.WithTimeout(ctx, t.TimeLimit)
	runner.Run(fctx, sched)
	<-fctx.Done() // the schedule may end before the limit; the workload runs on
	cancel()

	if ctx.Err() != nil {
		return interrupted(rep, stopWorkload, closeHist, teardown)
	}
	pr.set("heal")
	hctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	if err := nemesis.HealAll(hctx, c, dir.hist, epoch); err != nil {
		rep.Notes = append(rep.Notes, "heal: "+err.Error())
	}
	cancel()

	pr.set("recovery")
	rctx, cancel := context.WithTimeout(ctx, t.RecoveryTimeout)
	if err := WaitHealthy(rctx, bootstrap, t.Topic); err != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("recovery: not healthy within %v: %v", t.RecoveryTimeout, err))
	}
	cancel()
	stopWorkload()
	if ctx.Err() != nil {
		return interrupted(rep, stopWorkload, closeHist, teardown)
	}

	if err := mds.Stop(); err != nil {
		rep.Notes = append(rep.Notes, "metadata sampler: "+err.Error())
	}
	pr.set("final-read")
	frctx, cancel := context.WithTimeout(ctx, t.FinalReadTimeout)
	if err := wl.FinalRead(frctx); err != nil {
		rep.Notes = append(rep.Notes, err.Error())
	}
	cancel()
	if ctx.Err() != nil {
		return interrupted(rep, stopWorkload, closeHist, teardown)
	}
	closeHist()
	pr.set("teardown")
	teardown()

	pr.set("check")
	res, err := check(dir.path, &t.Config, t.CheckTimeout, c.Capabilities().String())
	if err != nil {
		return rep, fmt.Errorf("check: %w", err)
	}
	rep.Checked, rep.Result = true, res
	pr.set("done")
	return rep, nil
}

// interrupted stops the workload, closes the history and the cluster.
func interrupted(rep *Report, stopWorkload, closeHist, teardown func()) (*Report, error) {
	stopWorkload()
	closeHist()
	teardown()
	return rep, ErrInterrupted
}

// check reads the stored history back (what a later `gregor check` would
// see), checks it and writes results.json.
func check(dir string, cfg *history.Config, keyTimeout time.Duration, faults string) (checker.Result, error) {
	ops, _, warnings, err := history.ReadFile(filepath.Join(dir, HistoryFile))
	if err != nil {
		return checker.Result{}, err
	}
	md, mdNote := reports.ReadRunMetadata(dir)
	res, err := checker.Check(ops, cfg, checker.Options{OutDir: dir, KeyTimeout: keyTimeout, ConfigNote: "from " + ConfigFile, Metadata: md})
	if err != nil {
		return checker.Result{}, err
	}
	res.Warnings = append(warnings, res.Warnings...)
	if err := os.WriteFile(filepath.Join(dir, ResultsFile), append(res.JSON(), '\n'), 0o644); err != nil {
		return res, err
	}
	f, err := os.Create(filepath.Join(dir, ReportFile))
	if err != nil {
		return res, err
	}
	defer f.Close()
	err = reports.WriteRun(f, reports.RunInput{Title: filepath.Base(filepath.Dir(dir)) + " " + filepath.Base(dir),
		Config: cfg, Ops: ops, Result: &res, HistoryFile: HistoryFile, Runtime: faults, Metadata: md, MetadataNote: mdNote})
	return res, err
}
