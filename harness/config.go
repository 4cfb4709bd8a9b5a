package harness

import (
	"errors"
	"fmt"
	"time"

	"gregor/history"
	"gregor/nemesis"
	"gregor/workloads/all"
	"gregor/workloads/group"
	"gregor/workloads/kit"
)

// Config is one run's settings. Every flag of `gregor run` lands in exactly
// one field here; only here are a run's settings defaulted (DefaultConfig,
// defaults) and validated (Validate, which hands the workload's settings to
// its descriptor). The cluster spec, the topic, the workload's config,
// the nemesis plan and test.json (Record: history.Config, the record other
// tools read) are derived from it, never set beside it.
type Config struct {
	// Name names the store directory <Store>/<Name>/<timestamp>; "" is
	// the workload's name.
	Name  string
	Store string

	Cluster ClusterConfig

	// Topic is the test topic; its partitions are the history's keys. Its
	// min.insync.replicas and unclean election are the cluster's.
	Topic      string
	Partitions int
	RF         int

	// Workload names a registered workload (workloads/all): its
	// descriptor validates, records and builds it.
	Workload string
	// The settings every workload reads: kit.Shared's fields of the same
	// names; Producers is --concurrency.
	Acks            string
	Idempotence     bool
	Retries         int
	MaxInFlight     int // for the workloads whose producers pipeline (kit.Descriptor.Pipelines)
	DeliveryTimeout time.Duration
	Rate            float64
	Producers       int
	// Consumers are --consumers: each workload says what they are (the
	// queue's readers, the group's members, eos's pipelines).
	Consumers int
	// Group is the group workload's own settings (group.Settings); its
	// Consumers field is ignored: Consumers above counts them.
	Group group.Config
	// AbortRate is the txn workload's share of transactions aborted on
	// purpose (txn.Settings).
	AbortRate float64
	// TxnThink is the txn workload's pause between a transaction's
	// micro-ops (--txn-think).
	TxnThink time.Duration

	// Nemeses are the fault kinds (nemesis.Kinds by name; "none" or
	// nothing: no faults), Target whom they hit, Shapes the partition
	// shapes drawn (nil: all); every fault holds about Hold after about
	// Interval of quiet.
	Nemeses        []string
	Target         string
	Shapes         []string
	Interval, Hold time.Duration
	// Compose lets faults of different kinds overlap (nemesis.PlanOptions).
	Compose bool
	// FaultPoints and PointActions are what the fault-points nemesis draws
	// from (--fault-points, --fault-point-actions; nil: every point, and
	// crash, pause, cut).
	FaultPoints, PointActions []string
	// PointTarget is whom a fault-points step arms (--fault-point-target;
	// "": the run's --nemesis-target).
	PointTarget string
	// PointAfter delays a fault point's action after its hit
	// (--fault-point-after).
	PointAfter time.Duration
	// PointSpan is how long a fault-points step keeps its point armed
	// (--fault-point-span: phase, the default, or hold; nemesis.PointSpan).
	PointSpan string
	// PointAims are the aims a fault-points step draws from
	// (--fault-point-aim: hit, about; nil: hit).
	PointAims []string
	// SlowDelay and SlowLoss are the slow nemesis's delay and loss percent.
	SlowDelay time.Duration
	SlowLoss  float64
	// LinkDelay is a standing delay on every node's links for the whole
	// test (see standingDelay); 0: none, at most MaxLinkDelay.
	LinkDelay time.Duration
	// Seed draws the nemesis schedule and the workload's choices.
	Seed int64
	// Schedule is a schedule.json to replay instead of drawing the
	// schedule from Seed (which still seeds the workload); "" draws.
	Schedule string

	WarmUp    time.Duration // workload without faults before the first fault
	TimeLimit time.Duration // the fault phase
	// RecoveryTimeout bounds the wait, after healing, for every partition to
	// have a leader and a full ISR; FinalReadTimeout bounds the final reads.
	RecoveryTimeout, FinalReadTimeout time.Duration
	// MetadataInterval is how often the topic's metadata is sampled into
	// metadata.jsonl: MinMetadataInterval..MaxMetadataInterval.
	MetadataInterval time.Duration

	// validated: Validate passed on these settings and nothing changed
	// them since (attach does, and clears it), so a run validates its
	// settings once: at the edge when the command did, else in Run.
	validated bool
	// replay is Schedule's file as Validate read and checked it: the
	// run reads --schedule once.
	replay *nemesis.ScheduleFile
}

// DefaultConfig is the one source of a run's defaults: gregor run's flags
// start from it, and defaults() fills a Test's unset fields from it. The
// brokers get short timeouts (3 s session and replica lag) so faults take
// effect within a test.
func DefaultConfig() Config {
	c := DefaultCluster()
	c.Nodes, c.ReplicaLagMax, c.SessionTimeout = 3, 3*time.Second, 3*time.Second
	return Config{Store: "store", Cluster: c, Topic: kit.DefaultTopic, Partitions: 3, RF: 3,
		Workload: all.Workloads.Default().Name(), Acks: "all", Retries: -1, DeliveryTimeout: kit.DefaultDeliveryTimeout, Rate: 200,
		Producers: 4, Consumers: 2, Group: group.DefaultConfig(),
		Target: string(nemesis.TargetRandom), Interval: 10 * time.Second, Hold: 5 * time.Second, SlowDelay: 5 * time.Second,
		WarmUp: 3 * time.Second, TimeLimit: 60 * time.Second, RecoveryTimeout: 60 * time.Second,
		FinalReadTimeout: 60 * time.Second, MetadataInterval: DefaultMetadataInterval}
}

// defaults fills the fields whose zero value means "not set" from
// DefaultConfig: names, timeouts, the nemesis's timing. Zero is a value,
// and left alone, for the counts and rates a test may want at zero
// (consumers, retries, rate, warm-up, slow loss, link delay, seed); the
// test's shape (nodes, min ISR, partitions, RF, acks, producers, time
// limit) must be given, and Validate says so.
func (c *Config) defaults() {
	d := DefaultConfig()
	fill := func(dst *string, def string) {
		if *dst == "" {
			*dst = def
		}
	}
	fillDur := func(dst *time.Duration, def time.Duration) {
		if *dst == 0 {
			*dst = def
		}
	}
	fill(&c.Store, d.Store)
	fill(&c.Workload, d.Workload)
	fill(&c.Name, c.Workload)
	fill(&c.Topic, d.Topic)
	fill(&c.Target, d.Target)
	fill(&c.Cluster.Fsync, d.Cluster.Fsync)
	fillDur(&c.Cluster.ReplicaLagMax, d.Cluster.ReplicaLagMax)
	fillDur(&c.Cluster.SessionTimeout, d.Cluster.SessionTimeout)
	fillDur(&c.DeliveryTimeout, d.DeliveryTimeout)
	fillDur(&c.Interval, d.Interval)
	fillDur(&c.Hold, d.Hold)
	fillDur(&c.RecoveryTimeout, d.RecoveryTimeout)
	fillDur(&c.FinalReadTimeout, d.FinalReadTimeout)
	fillDur(&c.MetadataInterval, d.MetadataInterval)
	if c.SlowDelay == 0 && c.SlowLoss == 0 {
		c.SlowDelay = d.SlowDelay
	}
}

// Validate fills unset fields (defaults) and refuses impossible runs
// before anything boots; each message names the flag that fixes it. It
// canonicalises spellings (acks "-1", nemesis lists) in place, so test.json
// records what ran.
func (c *Config) Validate() error {
	c.validated, c.replay = false, nil
	c.defaults()
	if err := c.Cluster.Validate(); err != nil {
		return err
	}
	if err := c.validateShape(); err != nil {
		return err
	}
	wl, err := all.Workloads.Get(c.Workload)
	if err != nil {
		return err
	}
	if err := c.validateNemeses(wl); err != nil {
		return err
	}
	if c.MaxInFlight > 1 && !wl.Pipelines() {
		return fmt.Errorf("--max-in-flight %d with --workload %s: only the %s workloads' producers pipeline records; drop --max-in-flight",
			c.MaxInFlight, c.Workload, kit.AndList(all.Workloads.Names(kit.Descriptor.Pipelines)))
	}
	if err := c.validateWorkload(wl); err != nil {
		return err
	}
	// The one place a run asks for the authorizer (issue 31): a workload whose clients are its
	// principals means nothing without it.
	c.Cluster.Authorizer = wl.Authorizes()
	c.validated = true
	return nil
}

// validateShape checks the topic against the cluster and the phases'
// durations.
func (c *Config) validateShape() error {
	acks, err := history.ParseAcks(c.Acks)
	if err != nil {
		return fmt.Errorf("--%w", err)
	}
	c.Acks = acks
	if c.RF < 1 || c.RF > c.Cluster.Nodes {
		return fmt.Errorf("--rf %d with --nodes %d: a partition needs its replicas on distinct brokers; lower --rf or raise --nodes", c.RF, c.Cluster.Nodes)
	}
	if c.Cluster.MinISR > c.RF {
		return fmt.Errorf("--min-isr %d > --rf %d: no acks=all write could ever succeed; lower --min-isr to at most %d", c.Cluster.MinISR, c.RF, c.RF)
	}
	if c.TimeLimit <= 0 {
		return fmt.Errorf("--time-limit %v: give a positive duration", c.TimeLimit)
	}
	if c.WarmUp < 0 || c.RecoveryTimeout <= 0 || c.FinalReadTimeout <= 0 {
		return fmt.Errorf("--warm-up %v, --recovery-timeout %v, --final-read-timeout %v: give positive durations", c.WarmUp, c.RecoveryTimeout, c.FinalReadTimeout)
	}
	if iv := c.MetadataInterval; iv < MinMetadataInterval || iv > MaxMetadataInterval {
		return fmt.Errorf("--metadata-interval %v: give %v to %v", iv, MinMetadataInterval, MaxMetadataInterval)
	}
	return nil
}

// validateNemeses checks the faults: their timing, kinds, target and
// shapes, what the workload offers them, and a schedule to replay (read
// here, once).
func (c *Config) validateNemeses(wl kit.Descriptor) error {
	if c.Interval <= 0 || c.Hold <= 0 {
		return fmt.Errorf("--nemesis-interval %v and --nemesis-duration %v must be positive", c.Interval, c.Hold)
	}
	if c.LinkDelay < 0 || c.LinkDelay > MaxLinkDelay {
		return fmt.Errorf("--link-delay %v: give 0 to %v (a longer delay misses the session and lag timeouts)", c.LinkDelay, MaxLinkDelay)
	}
	if c.SlowDelay < 0 || c.SlowLoss < 0 || c.SlowLoss > 100 {
		return fmt.Errorf("--slow-delay %v, --slow-loss %v: give a positive delay and a loss of 0..100 percent", c.SlowDelay, c.SlowLoss)
	}
	kinds, err := nemesis.ParseKinds(c.Nemeses)
	if err != nil {
		return err
	}
	c.Nemeses = kindNames(kinds)
	target, err := nemesis.ParseTarget(c.Target)
	if err != nil {
		return err
	}
	c.Target = string(target)
	if target == nemesis.TargetCoordinator && !wl.Coordinator() {
		return fmt.Errorf("--nemesis-target coordinator hits the coordinator of the workload's consumer group or transactional id: add --workload %s",
			kit.OrList(all.Workloads.Names(kit.Descriptor.Coordinator)))
	}
	if target == nemesis.TargetShareCoordinator && c.Workload != history.WorkloadShare {
		return fmt.Errorf("--nemesis-target share-coordinator hits a share partition's share coordinator: add --workload %s", history.WorkloadShare)
	}
	shapes, err := nemesis.ParseShapes(c.Shapes)
	if err != nil {
		return err
	}
	c.Shapes = shapeNames(shapes)
	if err := c.validatePoints(); err != nil {
		return err
	}
	for _, k := range kinds {
		if k == nemesis.PowerLoss && !c.Cluster.LazyFS {
			return errors.New("--nemesis power-loss without --lazyfs: a killed broker keeps its page cache, so nothing is lost; add --lazyfs")
		}
		if err := offered(wl, k); err != nil {
			return err
		}
	}
	if c.Schedule != "" {
		if c.replay, err = c.readSchedule(); err != nil {
			return err
		}
	}
	return nil
}

// validateWorkload hands the workload's settings to its descriptor, and
// refuses the settings of the others.
func (c *Config) validateWorkload(wl kit.Descriptor) error {
	s := c.shared()
	if err := wl.Validate(&s, c); err != nil {
		return err
	}
	// A transactional workload's producers are idempotent: test.json
	// records what ran.
	c.Idempotence = s.Idempotence
	for _, other := range all.Workloads.All() {
		if other.Name() == wl.Name() {
			continue
		}
		if err := other.Unused(c); err != nil {
			return err
		}
	}
	return nil
}

// offered refuses a fault that acts on what only some workloads have (a
// consumer group, transactions) when the run's workload offers none,
// naming the workloads that do.
func offered(wl kit.Descriptor, k nemesis.Kind) error {
	if !nemesis.GroupOnly(k) && !nemesis.TxnOnly(k) && !nemesis.ShareOnly(k) || wl.Offers(string(k)) {
		return nil
	}
	what := "transactions"
	switch {
	case nemesis.GroupOnly(k):
		what = "a consumer group"
	case nemesis.ShareOnly(k):
		what = "a share group's consumers"
	}
	return fmt.Errorf("--nemesis %s acts on %s: add --workload %s", k, what,
		kit.OrList(all.Workloads.Names(func(d kit.Descriptor) bool { return d.Offers(string(k)) })))
}

func kindNames(kinds []nemesis.Kind) []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = string(k)
	}
	return out
}

func shapeNames(shapes []nemesis.Shape) []string {
	var out []string
	for _, s := range shapes {
		out = append(out, string(s))
	}
	return out
}

// topic is the test topic as CreateTopic takes it.
func (c *Config) topic() TopicSpec {
	return TopicSpec{Name: c.Topic, Partitions: c.Partitions, RF: c.RF, MinISR: c.Cluster.MinISR, Unclean: c.Cluster.Unclean}
}

// shared are the settings every workload reads (kit.Shared).
func (c *Config) shared() kit.Shared {
	return kit.Shared{Topic: c.Topic, Partitions: c.Partitions, RF: c.RF, MinISR: c.Cluster.MinISR, Acks: c.Acks,
		Idempotence: c.Idempotence, Retries: c.Retries, MaxInFlight: c.MaxInFlight, DeliveryTimeout: c.DeliveryTimeout,
		Rate: c.Rate, Producers: c.Producers, Consumers: c.Consumers, Seed: c.Seed, LinkFaults: c.hasLinkFault(),
		SessionTimeout: c.Cluster.SessionTimeout}
}

// workload is the run's workload; c is validated.
func (c *Config) workload() kit.Descriptor {
	d, _ := all.Workloads.Lookup(c.Workload)
	return d
}

// GroupConfig implements group.Settings: the group workload's own settings
// are a field of the run's one configuration.
func (c *Config) GroupConfig() *group.Config { return &c.Group }

// TxnSettings implements txn.Settings.
func (c *Config) TxnSettings() (*float64, *time.Duration) { return &c.AbortRate, &c.TxnThink }

// hasLinkFault: a nemesis of the run acts on the clients' links.
func (c *Config) hasLinkFault() bool {
	for _, k := range c.kinds() {
		if nemesis.IsLinkKind(k) {
			return true
		}
	}
	return false
}

// kinds are the nemesis kinds; c is validated.
func (c *Config) kinds() []nemesis.Kind {
	out := make([]nemesis.Kind, len(c.Nemeses))
	for i, n := range c.Nemeses {
		out[i] = nemesis.Kind(n)
	}
	return out
}

// planOptions are the nemesis schedule's options; c is validated.
func (c *Config) planOptions() nemesis.PlanOptions {
	var shapes []nemesis.Shape
	for _, s := range c.Shapes {
		shapes = append(shapes, nemesis.Shape(s))
	}
	return nemesis.PlanOptions{Kinds: c.kinds(), Interval: c.Interval, Hold: c.Hold, Limit: c.TimeLimit, Shapes: shapes,
		MinDelayHold: c.DeliveryTimeout + delayBeyondDelivery, Compose: c.Compose,
		Points: c.drawnPoints(), PointActions: actionNames(c.PointActions), PointAfter: c.PointAfter,
		PointSpan: nemesis.PointSpan(c.PointSpan), PointAims: aimNames(c.PointAims)}
}

// delayBeyondDelivery is how much longer than the delivery timeout a
// delay-client holds requests: they arrive after their producer gave up.
const delayBeyondDelivery = 2 * time.Second

// Record is test.json: the settings the checker's theory and the reports
// read, in the contract's format (history.Config), for a run on the named
// runtime.
func (c *Config) Record(runtimeName string) history.Config {
	r := history.Config{Acks: c.Acks, MinISR: c.Cluster.MinISR, RF: c.RF, Partitions: c.Partitions,
		Unclean: c.Cluster.Unclean, Idempotence: c.Idempotence, Fsync: c.Cluster.Fsync, LazyFS: c.Cluster.LazyFS,
		Nemeses: c.Nemeses, NemesisTarget: c.Target, PartitionShapes: c.Shapes, Compose: c.Compose, Seed: c.Seed,
		LinkDelay: history.Duration(c.LinkDelay), ReplicaLagMax: history.Duration(c.Cluster.ReplicaLagMax),
		TimeLimit: history.Duration(c.TimeLimit), Nodes: c.Cluster.Nodes, Runtime: runtimeName,
		Workload: c.Workload, PlantedBugs: c.Cluster.Bugs, TransactionVersion: int(c.Cluster.TransactionVersion),
		MaxInFlight: c.MaxInFlight, SimulatedTime: runtimeName == "sim"}
	if r.Nemeses == nil {
		r.Nemeses = []string{}
	}
	if wl := c.workload(); wl != nil {
		wl.Record(c, &r)
	}
	return r
}
