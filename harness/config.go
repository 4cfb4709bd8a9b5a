package harness

import (
	"errors"
	"fmt"
	"time"

	"gregor/history"
	"gregor/nemesis"
	"gregor/workloads/eos"
	"gregor/workloads/group"
	"gregor/workloads/kit"
	"gregor/workloads/queue"
	"gregor/workloads/txn"
)

// Workloads (Config.Workload).
const (
	WorkloadQueue = "queue"             // producers and assign-based readers
	WorkloadGroup = "group"             // producers and a consumer group (workloads/group)
	WorkloadEOS   = history.WorkloadEOS // consume-transform-produce in transactions (workloads/eos)
	WorkloadTxn   = history.WorkloadTxn // transactional producers, read_committed consumers (workloads/txn)
)

// Config is one run's settings. Every flag of `gregor run` lands in exactly
// one field here; only here are a run's settings defaulted (DefaultConfig,
// defaults) and validated (Validate, which hands the workloads' own settings
// to their validators). The cluster spec, the topic, the workloads' configs,
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

	// Workload is WorkloadQueue or WorkloadGroup.
	Workload string
	// The producers (and queue readers): queue.Config's fields of the same
	// names; Producers is --concurrency.
	Acks            string
	Idempotence     bool
	Retries         int
	MaxInFlight     int // queue.Config.MaxInFlight (queue and group producers)
	DeliveryTimeout time.Duration
	Rate            float64
	Producers       int
	// Consumers are the queue workload's readers, or the group's members.
	Consumers int
	// Group is the group workload's settings (Workload "group"); its
	// Consumers field is ignored: Consumers above counts them.
	Group group.Config
	// AbortRate is the txn workload's share of transactions aborted on
	// purpose (Workload "txn").
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
}

// DefaultConfig is the one source of a run's defaults: gregor run's flags
// start from it, and defaults() fills a Test's unset fields from it. The
// brokers get short timeouts (3 s session and replica lag) so faults take
// effect within a test.
func DefaultConfig() Config {
	c := DefaultCluster()
	c.Nodes, c.ReplicaLagMax, c.SessionTimeout = 3, 3*time.Second, 3*time.Second
	return Config{Store: "store", Cluster: c, Topic: "queue", Partitions: 3, RF: 3,
		Workload: WorkloadQueue, Acks: "all", Retries: -1, DeliveryTimeout: kit.DefaultDeliveryTimeout, Rate: 200,
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
	c.defaults()
	if err := c.Cluster.Validate(); err != nil {
		return err
	}
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
	if c.Interval <= 0 || c.Hold <= 0 {
		return fmt.Errorf("--nemesis-interval %v and --nemesis-duration %v must be positive", c.Interval, c.Hold)
	}
	if c.LinkDelay < 0 || c.LinkDelay > MaxLinkDelay {
		return fmt.Errorf("--link-delay %v: give 0 to %v (a longer delay misses the session and lag timeouts)", c.LinkDelay, MaxLinkDelay)
	}
	if c.SlowDelay < 0 || c.SlowLoss < 0 || c.SlowLoss > 100 {
		return fmt.Errorf("--slow-delay %v, --slow-loss %v: give a positive delay and a loss of 0..100 percent", c.SlowDelay, c.SlowLoss)
	}
	if iv := c.MetadataInterval; iv < MinMetadataInterval || iv > MaxMetadataInterval {
		return fmt.Errorf("--metadata-interval %v: give %v to %v", iv, MinMetadataInterval, MaxMetadataInterval)
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
	if target == nemesis.TargetCoordinator && c.Workload != WorkloadGroup && c.Workload != WorkloadTxn && c.Workload != WorkloadEOS {
		return errors.New("--nemesis-target coordinator hits the consumer group's coordinator (or, with --workload txn, the first transactional id's): add --workload group or txn")
	}
	shapes, err := nemesis.ParseShapes(c.Shapes)
	if err != nil {
		return err
	}
	c.Shapes = shapeNames(shapes)
	for _, k := range kinds {
		if k == nemesis.PowerLoss && !c.Cluster.LazyFS {
			return errors.New("--nemesis power-loss without --lazyfs: a killed broker keeps its page cache, so nothing is lost; add --lazyfs")
		}
		if nemesis.GroupOnly(k) && c.Workload != WorkloadGroup {
			return fmt.Errorf("--nemesis %s acts on a consumer group: add --workload group", k)
		}
		if nemesis.TxnOnly(k) && c.Workload != WorkloadTxn && (c.Workload != WorkloadEOS || k == nemesis.PauseProducer) {
			return fmt.Errorf("--nemesis %s acts on transactions: add --workload txn", k)
		}
	}
	if c.Schedule != "" {
		if _, _, err := c.schedule(); err != nil {
			return err
		}
	}
	if c.MaxInFlight > 1 && c.Workload != WorkloadQueue && c.Workload != WorkloadGroup {
		return fmt.Errorf("--max-in-flight %d with --workload %s: only the queue and group workloads' producers pipeline records; drop --max-in-flight", c.MaxInFlight, c.Workload)
	}
	switch c.Workload {
	case WorkloadQueue:
	case WorkloadGroup:
		g := c.groupConfig()
		if err := g.Validate(); err != nil {
			return err
		}
	case WorkloadTxn:
		if c.Acks != "all" {
			return fmt.Errorf("--workload txn with --acks %s: a transactional producer is idempotent and needs acks=all (Kafka's ProducerConfig refuses anything else); use --acks all", c.Acks)
		}
		c.Idempotence = true // transactional producers are idempotent: test.json records what ran
		t := c.txnConfig(nil)
		if err := t.Validate(); err != nil {
			return err
		}
	case WorkloadEOS:
		if c.Acks != "all" {
			return fmt.Errorf("--workload eos with --acks %s: transactional producers need acks=all; use --acks all", c.Acks)
		}
		c.Idempotence = true
		e := c.eosConfig(nil)
		if err := e.Validate(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--workload %q: give %s, %s, %s or %s", c.Workload, WorkloadQueue, WorkloadGroup, WorkloadTxn, WorkloadEOS)
	}
	if c.AbortRate != 0 && c.Workload != WorkloadTxn {
		return fmt.Errorf("--abort-rate %v without --workload txn: only transactions abort", c.AbortRate)
	}
	q := c.queueConfig(nil)
	return q.Validate()
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

// queueConfig is the producers' workload config (with the queue workload's
// readers), seeded from bootstrap.
func (c *Config) queueConfig(bootstrap []string) queue.Config {
	q := queue.Config{Bootstrap: bootstrap, Topic: c.Topic, Partitions: c.Partitions, Acks: c.Acks,
		Idempotence: c.Idempotence, Retries: c.Retries, MaxInFlight: c.MaxInFlight, DeliveryTimeout: c.DeliveryTimeout, Rate: c.Rate,
		Producers: c.Producers, Seed: c.Seed}
	if c.Workload == WorkloadQueue {
		q.Consumers = c.Consumers
	}
	if c.hasLinkFault() {
		q.ResponseTimeout = max(queue.MinResponseTimeout, min(linkResponseTimeout, c.DeliveryTimeout))
	}
	return q
}

// txnConfig is the txn workload's config, seeded from bootstrap.
func (c *Config) txnConfig(bootstrap []string) txn.Config {
	return txn.Config{Bootstrap: bootstrap, Topic: c.Topic, Partitions: c.Partitions, Producers: c.Producers,
		Consumers: c.Consumers, AbortRate: c.AbortRate, Think: c.TxnThink, Rate: c.Rate, RequestTimeout: c.DeliveryTimeout, Seed: c.Seed}
}

// linkResponseTimeout is the producers' response timeout in a run with
// client-link faults: below the faults' holds, so a producer whose answer
// was lost gives up on its connection and retries to the same broker while
// the fault lasts, the path the faults are there to exercise.
const linkResponseTimeout = 3 * time.Second

// hasLinkFault: a nemesis of the run acts on the clients' links.
func (c *Config) hasLinkFault() bool {
	for _, k := range c.kinds() {
		if nemesis.IsLinkKind(k) {
			return true
		}
	}
	return false
}

// eosConfig is the eos workload's config: --consumers pipelines, the
// input at --rate.
func (c *Config) eosConfig(bootstrap []string) eos.Config {
	return eos.Config{Bootstrap: bootstrap, Topic: c.Topic, Partitions: c.Partitions, RF: c.RF, MinISR: c.Cluster.MinISR,
		Pipelines: c.Consumers, Rate: c.Rate, Seed: c.Seed}
}

// groupConfig is the group workload's config.
func (c *Config) groupConfig() group.Config {
	g := c.Group
	g.Consumers = c.Consumers
	return g
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
		MinDelayHold: c.DeliveryTimeout + delayBeyondDelivery, Compose: c.Compose}
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
		MaxInFlight: c.MaxInFlight}
	if c.Workload == WorkloadTxn {
		r.AbortRate = c.AbortRate
	}
	if r.Nemeses == nil {
		r.Nemeses = []string{}
	}
	if c.Workload == WorkloadGroup {
		g := c.groupConfig()
		g.Validate() // fills what is unset; c is validated
		r.AutoCommit, r.CommitMode = g.HistoryMode()
		if r.AutoCommit {
			r.AutoCommitInterval = history.Duration(g.AutoCommitInterval)
		}
		r.FailureRate, r.FailureHandling = g.FailureRate, g.FailureHandling
		r.Assignor, r.Static = g.Assignor, g.Static
		r.ProcessingTime, r.MaxPollRecords = history.Duration(g.ProcessingTime), g.MaxPollRecords
		r.MaxPollInterval = history.Duration(g.MaxPollInterval)
	}
	return r
}
