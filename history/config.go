package history

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Config is the test configuration a history was recorded under, stored as
// test.json next to history.jsonl. The checker derives from it which
// anomalies the configuration allows.
type Config struct {
	// Acks is the producer's acks: "0", "1" or "all" (the strings Kafka's
	// producer config takes; "-1" is read as "all", see ParseAcks).
	Acks   string `json:"acks"`
	MinISR int    `json:"min_isr"` // min.insync.replicas
	RF     int    `json:"rf"`      // replication factor
	// Partitions per topic.
	Partitions int  `json:"partitions"`
	Unclean    bool `json:"unclean"` // unclean.leader.election.enable
	// Assumed names the topic configs a foreign cluster did not describe
	// (external runtime), each with the value taken instead: the broker's,
	// or Kafka's documented default.
	Assumed map[string]string `json:"assumed,omitempty"`
	// Idempotence is enable.idempotence of the producers.
	Idempotence bool `json:"idempotence"`
	// MaxInFlight is max.in.flight.requests.per.connection of the producers
	// (gregor run --max-in-flight): each send operation carries that many
	// records, produced so that as many requests are in flight. 0 means 1.
	MaxInFlight int  `json:"max_in_flight,omitempty"`
	AutoCommit  bool `json:"auto_commit"` // enable.auto.commit of group consumers
	// CommitMode: with AutoCommit, which auto-commit: CommitAuto (the Java
	// consumer's, positions of records returned by the previous poll,
	// committed at the next poll) or CommitAutoGreedy (everything polled,
	// on a timer; "" in histories written before both existed). Otherwise
	// the manual commits: "after-processing" (at-least-once),
	// "before-processing" (at-most-once), "on-revoked" (processed offsets
	// committed only when partitions are revoked) or "" (none).
	CommitMode string `json:"commit_mode,omitempty"`
	// FailureRate is the probability that processing one record fails, and
	// FailureHandling what the consumer does then: "swallow" (catch the
	// error and go on, as in seed 002's incident) or "retry".
	FailureRate     float64 `json:"failure_rate,omitempty"`
	FailureHandling string  `json:"failure_handling,omitempty"`
	// Group consumer settings, for the record and the report.
	// GroupProtocol is the consumers' group.protocol: "classic" or
	// "consumer" (KIP-848); "" in histories written before it existed.
	GroupProtocol      string   `json:"group_protocol,omitempty"`
	Assignor           string   `json:"assignor,omitempty"` // range, sticky, cooperative-sticky
	Static             bool     `json:"static,omitempty"`   // group.instance.id set (KIP-345)
	AutoCommitInterval Duration `json:"auto_commit_interval,omitempty"`
	ProcessingTime     Duration `json:"processing_time,omitempty"` // per record
	MaxPollRecords     int      `json:"max_poll_records,omitempty"`
	MaxPollInterval    Duration `json:"max_poll_interval,omitempty"`
	// Fsync policy of the brokers: "never" (Kafka's default, rely on
	// replication), "always", or an interval like "1s".
	Fsync  string `json:"fsync,omitempty"`
	LazyFS bool   `json:"lazyfs"` // unsynced writes are lost when a broker is killed
	// Nemeses used: kill, stop, pause, partition, slow, power-loss, client-crash.
	Nemeses []string `json:"nemeses"`
	// NemesisTarget: random, leader, controller, minority, majority, all.
	NemesisTarget string `json:"nemesis_target,omitempty"`
	// PartitionShapes restricts the partition shapes drawn (empty: all).
	PartitionShapes []string `json:"partition_shapes,omitempty"`
	// Compose: faults of different kinds overlapped (gregor run --compose).
	Compose bool `json:"compose,omitempty"`
	// LinkDelay is a standing delay on every broker link (gregor run
	// --link-delay), modelling brokers further apart.
	LinkDelay Duration `json:"link_delay,omitempty"`
	// ReplicaLagMax is replica.lag.time.max.ms; MinISRAck reasoning uses it.
	ReplicaLagMax Duration `json:"replica_lag_max,omitempty"`
	Seed          int64    `json:"seed"`
	TimeLimit     Duration `json:"time_limit"`
	Nodes         int      `json:"nodes"`
	Runtime       string   `json:"runtime,omitempty"` // docker, process, image, external or sim
	// SimulatedTime: the run's clock was virtual (--runtime sim, one
	// testing/synctest bubble): its timestamps start at 2000-01-01 UTC and
	// its durations are simulated, not waited.
	SimulatedTime bool   `json:"simulated_time,omitempty"`
	Workload      string `json:"workload,omitempty"`
	// TransactionVersion is the cluster's transaction.version feature (1:
	// Kafka 3.x transactions, 2: KIP-890); 0 in runs recorded before it was
	// kept, read as the default, 2. AbortRate is the txn workload's share of
	// transactions it aborts on purpose.
	TransactionVersion int     `json:"transaction_version,omitempty"`
	AbortRate          float64 `json:"abort_rate,omitempty"`
	// PlantedBugs names the broker bug switches turned on. With any, forbidden
	// anomalies are EXPECTED: the checker still reports them as forbidden.
	PlantedBugs []string `json:"planted_bugs,omitempty"`
}

// WorkloadTxn is Config.Workload of the txn workload (workloads/txn): the
// checker's theory has transaction rows for it.
const WorkloadTxn = "txn"

// WorkloadEOS is Config.Workload of the exactly-once pipeline
// (workloads/eos).
const WorkloadEOS = "eos"

// WorkloadShare is Config.Workload of the share-group workload
// (workloads/share): the checker's theory has share rows for it.
const WorkloadShare = "share"

// ParseAcks is the one place a producer acks setting is spelled out: "0",
// "1" or "all", and "-1", which Kafka's ProducerConfig takes as another
// spelling of "all" (acks=-1), canonicalised to "all".
func ParseAcks(s string) (string, error) {
	switch s {
	case "0", "1", "all":
		return s, nil
	case "-1":
		return "all", nil
	}
	return "", fmt.Errorf("acks %q: give 0, 1 or all", s)
}

// Normalize canonicalises spellings (acks "-1" -> "all") and checks values.
func (c *Config) Normalize() error {
	if c.Acks == "" {
		return fmt.Errorf("config: acks is missing (want \"0\", \"1\" or \"all\")")
	}
	acks, err := ParseAcks(c.Acks)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	c.Acks = acks
	switch {
	case c.CommitMode == "":
	case c.AutoCommit && (c.CommitMode == CommitAuto || c.CommitMode == CommitAutoGreedy):
	case c.AutoCommit:
		return fmt.Errorf("config: commit_mode %q with auto_commit: want %s or %s", c.CommitMode, CommitAuto, CommitAutoGreedy)
	case c.CommitMode == "after-processing", c.CommitMode == "before-processing", c.CommitMode == "on-revoked":
	default:
		return fmt.Errorf("config: commit_mode %q without auto_commit: want after-processing, before-processing or on-revoked (or auto_commit true)", c.CommitMode)
	}
	switch c.FailureHandling {
	case "", "swallow", "retry":
	default:
		return fmt.Errorf("config: failure_handling %q: want swallow or retry", c.FailureHandling)
	}
	if c.FailureRate < 0 || c.FailureRate > 1 {
		return fmt.Errorf("config: failure_rate %v: want a probability in [0, 1]", c.FailureRate)
	}
	if c.MinISR < 0 || c.RF < 0 || c.Partitions < 0 || c.Nodes < 0 || c.MaxInFlight < 0 {
		return fmt.Errorf("config: negative count")
	}
	if err := c.checkMinISR(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// checkMinISR: min_isr is at most rf (when both are known). A run cannot
// record more (gregor run refuses --min-isr above --rf: no acks=all write
// could succeed), and the checker's theory reasons on it as recorded.
func (c *Config) checkMinISR() error {
	if c.RF > 0 && c.MinISR > c.RF {
		return fmt.Errorf("min_isr %d > rf %d: no acks=all write could succeed, and no run records it; lower min_isr to at most %d", c.MinISR, c.RF, c.RF)
	}
	return nil
}

// HasNemesis reports whether the named nemesis was used.
func (c *Config) HasNemesis(name string) bool {
	for _, n := range c.Nemeses {
		if n == name {
			return true
		}
	}
	return false
}

// ReadConfig reads and normalizes a test.json.
func ReadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := c.Normalize(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

// WriteConfig writes c as indented JSON.
func WriteConfig(path string, c *Config) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Duration marshals as a Go duration string ("90s") and accepts that or a
// number of seconds.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return fmt.Errorf("duration: want \"90s\" or seconds, got %s", b)
	}
	*d = Duration(secs * float64(time.Second))
	return nil
}

// Auto-commit modes (Config.CommitMode with AutoCommit).
const (
	CommitAuto       = "auto"
	CommitAutoGreedy = "auto-greedy"
)

// GreedyAutoCommit reports whether consumers auto-committed everything they
// polled, processed or not (histories from before the Java-like mode
// existed recorded AutoCommit alone, and were greedy).
func (c *Config) GreedyAutoCommit() bool {
	return c.AutoCommit && (c.CommitMode == CommitAutoGreedy || c.CommitMode == "")
}

// AutoCommitModel says which client behaviour the auto-commit of a run
// models, for reports; "" without auto-commit.
func (c *Config) AutoCommitModel() string {
	switch {
	case !c.AutoCommit:
		return ""
	case c.GreedyAutoCommit():
		return "greedy, as seed 002 describes it (franz-go's GreedyAutoCommit): every interval, the position after everything poll() returned, processed or not; a crash mid-batch skips the rest of the batch"
	}
	return "Apache Kafka's Java consumer (ConsumerCoordinator, inside poll()): once the interval has passed, the next poll commits the positions of the records the previous polls returned, all processed by then; a crash mid-batch re-delivers the batch (franz-go's autocommit without GreedyAutoCommit)"
}
