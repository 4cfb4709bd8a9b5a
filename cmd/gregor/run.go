package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"gregor/checker"
	"gregor/harness"
	"gregor/history"
	"gregor/nemesis"
	"gregor/workloads/queue"
)

func init() { subcommands = append(subcommands, runCmd) }

// runOpts are `gregor run`'s flags beyond the cluster's (clusterOpts).
type runOpts struct {
	timeLimit, warmUp, recovery, finalRead time.Duration
	rate                                   float64
	concurrency, consumers                 int
	acks                                   string
	rf, partitions                         int
	idempotence                            bool
	retries                                int
	delivery                               time.Duration
	nemeses                                []string
	interval, hold                         time.Duration
	target                                 string
	shapes                                 []string
	slowDelay                              time.Duration
	slowLoss                               float64
	linkDelay                              time.Duration
	seed                                   int64
	store                                  string
	name                                   string
	metadataInterval                       time.Duration
}

func (r *runOpts) register(fl *pflag.FlagSet) {
	fl.DurationVar(&r.timeLimit, "time-limit", 60*time.Second, "length of the fault phase")
	fl.DurationVar(&r.warmUp, "warm-up", 3*time.Second, "workload without faults before the first fault")
	fl.DurationVar(&r.recovery, "recovery-timeout", 60*time.Second, "after healing, wait at most this for every partition to have a leader and a full ISR")
	fl.DurationVar(&r.finalRead, "final-read-timeout", 60*time.Second, "bound on the final reads of every key")
	fl.Float64Var(&r.rate, "rate", 200, "sends per second over all producers (0: unlimited)")
	fl.IntVar(&r.concurrency, "concurrency", 4, "producer processes (each sends one record at a time)")
	fl.IntVar(&r.consumers, "consumers", 2, "consumer processes polling every key during the test")
	fl.StringVar(&r.acks, "acks", "all", "producer acks: 0 | 1 | all")
	fl.IntVar(&r.rf, "rf", 3, "replication factor of the test topic")
	fl.IntVar(&r.partitions, "partitions", 3, "partitions of the test topic (the keys)")
	fl.BoolVar(&r.idempotence, "idempotence", false, "enable.idempotence (needs --acks all)")
	fl.IntVar(&r.retries, "retries", -1, "producer retries per record (-1: franz-go's default, unbounded within --delivery-timeout)")
	fl.DurationVar(&r.delivery, "delivery-timeout", 5*time.Second, "delivery.timeout.ms: bound on one send, retries included")
	fl.StringSliceVar(&r.nemeses, "nemesis", nil, "faults, comma-separated: "+kindList()+" (none: no faults)")
	fl.DurationVar(&r.interval, "nemesis-interval", 10*time.Second, "mean quiet time between faults")
	fl.DurationVar(&r.hold, "nemesis-duration", 5*time.Second, "mean duration of a fault")
	fl.StringVar(&r.target, "nemesis-target", "random", "random | leader | controller | minority | majority | all")
	fl.StringSliceVar(&r.shapes, "partition-shapes", nil, "partition shapes to draw from (default all): isolate-one, isolate-leader, halves, majorities-ring, bridge")
	fl.DurationVar(&r.slowDelay, "slow-delay", 5*time.Second, "slow nemesis: delay on the node's links (above --replica-lag-max to shrink the ISR)")
	fl.Float64Var(&r.slowLoss, "slow-loss", 0, "slow nemesis: packet loss percent")
	fl.DurationVar(&r.linkDelay, "link-delay", 0, "a standing delay on every node's links for the whole test (brokers further apart): widens the window of records a leader has acknowledged and its followers not yet fetched; at most 500ms")
	fl.Int64Var(&r.seed, "seed", 0, "seed of the nemesis schedule and the workload (default: random, printed)")
	fl.StringVar(&r.store, "store", "store", "store directory: <store>/<name>/<timestamp>/")
	fl.StringVar(&r.name, "name", "queue", "test name (store subdirectory)")
	fl.DurationVar(&r.metadataInterval, "metadata-interval", harness.DefaultMetadataInterval, "how often the topic's leaders and ISR are sampled into metadata.jsonl (100ms..5s)")
}

func kindList() string {
	s := make([]string, len(nemesis.Kinds))
	for i, k := range nemesis.Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ",")
}

// setDefault changes a shared flag's default for this command.
func setDefault(fl *pflag.FlagSet, name, value string) {
	f := fl.Lookup(name)
	f.Value.Set(value)
	f.DefValue = value
}

// validateRun refuses impossible configurations before anything boots.
func validateRun(o *clusterOpts, r *runOpts) ([]nemesis.Kind, nemesis.Target, []nemesis.Shape, error) {
	if err := o.validate(); err != nil {
		return nil, "", nil, err
	}
	switch r.acks {
	case "0", "1", "all":
	case "-1":
		r.acks = "all"
	default:
		return nil, "", nil, fmt.Errorf("--acks %q: give 0, 1 or all", r.acks)
	}
	if r.rf < 1 || r.rf > o.nodes {
		return nil, "", nil, fmt.Errorf("--rf %d > --nodes %d: a partition needs its replicas on distinct brokers; lower --rf or raise --nodes", r.rf, o.nodes)
	}
	if o.minISR < 1 || o.minISR > r.rf {
		return nil, "", nil, fmt.Errorf("--min-isr %d > --rf %d: no acks=all write could ever succeed; lower --min-isr to at most %d", o.minISR, r.rf, r.rf)
	}
	if r.idempotence && r.acks == "0" {
		return nil, "", nil, errors.New("--acks 0 with --idempotence: an idempotent producer needs acknowledgements; use --acks all or drop --idempotence")
	}
	if r.idempotence && r.acks != "all" {
		return nil, "", nil, fmt.Errorf("--idempotence with --acks %s: franz-go (like Kafka) requires acks=all for idempotence; use --acks all or drop --idempotence", r.acks)
	}
	if r.partitions < 1 {
		return nil, "", nil, fmt.Errorf("--partitions %d: give at least 1", r.partitions)
	}
	if r.timeLimit <= 0 {
		return nil, "", nil, fmt.Errorf("--time-limit %v: give a positive duration", r.timeLimit)
	}
	if r.interval <= 0 || r.hold <= 0 {
		return nil, "", nil, fmt.Errorf("--nemesis-interval %v and --nemesis-duration %v must be positive", r.interval, r.hold)
	}
	if r.concurrency < 1 || r.consumers < 0 || r.concurrency+r.consumers > queue.MaxClients {
		return nil, "", nil, fmt.Errorf("--concurrency %d and --consumers %d: give at least one producer and at most %d clients", r.concurrency, r.consumers, queue.MaxClients)
	}
	if r.linkDelay < 0 || r.linkDelay > harness.MaxLinkDelay {
		return nil, "", nil, fmt.Errorf("--link-delay %v: give 0 to %v (a longer delay misses the session and lag timeouts)", r.linkDelay, harness.MaxLinkDelay)
	}
	if r.rate < 0 || r.rate > queue.MaxRate {
		return nil, "", nil, fmt.Errorf("--rate %v: give 0 (unlimited) to %d", r.rate, queue.MaxRate)
	}
	kinds, err := nemesis.ParseKinds(r.nemeses)
	if err != nil {
		return nil, "", nil, err
	}
	target, err := nemesis.ParseTarget(r.target)
	if err != nil {
		return nil, "", nil, err
	}
	for _, k := range kinds {
		if k == nemesis.PowerLoss && !o.lazyFS {
			return nil, "", nil, errors.New("--nemesis power-loss without --lazyfs: a killed broker keeps its page cache, so nothing is lost; add --lazyfs")
		}
	}
	shapes, err := nemesis.ParseShapes(r.shapes)
	if err != nil {
		return nil, "", nil, err
	}
	return kinds, target, shapes, nil
}

func runCmd() *cobra.Command {
	o := clusterOpts{}
	r := runOpts{}
	g := groupOpts{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a test: boot a cluster, drive the queue workload under faults, check the history",
		Long: `Run boots the embedded cluster (docker when an engine answers, else local
processes; --runtime forces one), creates the test topic (--rf, --partitions,
--min-isr, --unclean), runs producers and consumers while the nemesis injects
faults for --time-limit, heals everything, waits for recovery, reads every key
back from offset 0 to its high watermark, and checks the history.

Brokers get short timeouts by default so faults take effect within a test:
--session-timeout 3s (broker.session.timeout.ms) and --replica-lag-max 3s
(replica.lag.time.max.ms). --nodes defaults to 3.

Faults (--nemesis, comma-separated): kill, stop, pause, partition (a shape is
drawn per fault: isolate-one, isolate-leader, halves, majorities-ring, bridge),
slow (--slow-delay / --slow-loss), power-loss (needs --lazyfs: kill loses
unsynced writes; --nemesis-target all cuts power to every broker),
client-crash (tears down a workload client mid-operation; with --workload
group a consumer crashes mid-batch and a fresh one joins in its place),
consumer-restart (rolling restart of the group's consumers), consumer-join
(one more consumer joins the group); the last two need --workload group.

--workload group: the producers, and --consumers franz-go consumers in one
group that process each record (--processing-time, --failure-rate,
--failure-handling swallow|retry), commit (--commit-mode auto|auto-greedy|before|after|
on-revoked, --auto-commit-interval), with --assignor range|sticky|
cooperative-sticky, --static membership, --max-poll-records and
--max-poll-interval. The checker adds committed-skip, redelivered and group
figures (rebalance pauses, lag) to results.json and the report.
--nemesis-target: random, leader (of a drawn partition), controller (the
ControllerID Metadata reports: a live broker, not necessarily the active raft
leader), minority, majority, all. With brokers in combined mode, a majority
fault loses the controller quorum; add --controllers N for progress.
The schedule comes from --seed: the same seed replays it.

Store: <store>/<name>/<timestamp>/ holds history.jsonl (written as it
happens), test.json, results.json, logs/node-N.log; <store>/<name>/latest
points at the newest run.

Exit status (as gregor check):
  0  valid: no forbidden anomaly
  1  a forbidden anomaly was found
  2  bad input: an impossible configuration, refused before booting
  3  unknown: a check could not finish, or the run was interrupted`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			kinds, target, shapes, err := validateRun(&o, &r)
			if err == nil {
				err = g.validate(cmd.Flags(), &r, kinds)
			}
			if err != nil {
				return &exitError{checkBadInput, err}
			}
			if !cmd.Flags().Changed("seed") {
				r.seed = rand.Int64N(1 << 53) // fits a JSON number exactly
			}
			errOut := cmd.ErrOrStderr()
			fmt.Fprintf(errOut, "gregor run: seed %d\n", r.seed)
			bin, err := selfBinary()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			rt, err := pickRuntime(ctx, o.runtime, errOut)
			if err != nil {
				return &exitError{checkBadInput, err}
			}
			spec := o.spec(r.name+"-"+fmt.Sprint(r.seed%100000), bin)
			spec.Labels["gregor.test"] = r.name
			names := make([]string, len(kinds))
			for i, k := range kinds {
				names[i] = string(k)
			}
			test := harness.Test{
				Name: r.name, Store: r.store, Runtime: rt, Spec: spec, Brokers: o.nodes,
				Config: history.Config{Acks: r.acks, MinISR: o.minISR, RF: r.rf, Partitions: r.partitions,
					Unclean: o.unclean, Idempotence: r.idempotence, Fsync: o.fsync, LazyFS: o.lazyFS,
					Nemeses: names, NemesisTarget: string(target), PartitionShapes: r.shapes, Seed: r.seed,
					LinkDelay: history.Duration(r.linkDelay), ReplicaLagMax: history.Duration(o.lagMax),
					TimeLimit: history.Duration(r.timeLimit), Nodes: o.nodes, PlantedBugs: o.bugs},
				Topic: harness.TopicSpec{Name: "queue", Partitions: r.partitions, RF: r.rf, MinISR: o.minISR, Unclean: o.unclean},
				Workload: queue.Config{Acks: r.acks, Idempotence: r.idempotence, Retries: r.retries,
					DeliveryTimeout: r.delivery, Rate: r.rate, Producers: r.concurrency, Consumers: r.consumers, Seed: r.seed},
				Nemesis: harness.NemesisOptions{Kinds: kinds, Target: target, Interval: r.interval, Hold: r.hold, Shapes: shapes,
					SlowDelay: r.slowDelay, SlowLoss: r.slowLoss},
				WarmUp: r.warmUp, TimeLimit: r.timeLimit, RecoveryTimeout: r.recovery, FinalReadTimeout: r.finalRead,
				Progress: errOut, LinkDelay: r.linkDelay, MetadataInterval: r.metadataInterval,
			}
			g.apply(cmd.Flags(), &r, &test)
			rep, err := harness.Run(ctx, test)
			if rep != nil && rep.Dir != "" {
				fmt.Fprintf(errOut, "gregor run: stored in %s\n", rep.Dir)
				for _, n := range rep.Notes {
					fmt.Fprintf(errOut, "gregor run: note: %s\n", n)
				}
			}
			if errors.Is(err, harness.ErrInterrupted) {
				return &exitError{checkUnknown, err}
			}
			if err != nil {
				return err
			}
			return verdict(cmd, rep)
		},
	}
	o.register(cmd)
	r.register(cmd.Flags())
	g.register(cmd.Flags())
	fl := cmd.Flags()
	setDefault(fl, "nodes", "3")
	setDefault(fl, "session-timeout", "3s")
	setDefault(fl, "replica-lag-max", "3s")
	return cmd
}

// verdict prints the result's summary and maps it to the exit status.
func verdict(cmd *cobra.Command, rep *harness.Report) error {
	res := rep.Result
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "valid: %s\n", res.Valid)
	for _, a := range checker.AnomalyNames {
		if n := res.Counts[a]; n > 0 {
			kind := "forbidden"
			if _, ok := res.Allowed[a]; ok {
				kind = "allowed (unsafe configuration demonstrated)"
			}
			fmt.Fprintf(out, "  %-20s %6d  %s\n", a, n, kind)
		}
	}
	fmt.Fprintf(out, "results: %s\n", rep.Dir+"/"+harness.ResultsFile)
	switch res.Valid {
	case checker.ValidTrue:
		return nil
	case checker.ValidFalse:
		return &exitError{checkForbidden, errors.New("run: INVALID: forbidden anomalies found")}
	}
	return &exitError{checkUnknown, fmt.Errorf("run: valid is UNKNOWN (not a pass): %s", strings.Join(res.UnknownReasons, "; "))}
}
