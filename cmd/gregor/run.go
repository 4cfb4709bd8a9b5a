package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"gregor/checker"
	"gregor/cluster/faultpoint"
	"gregor/harness"
	"gregor/history"
	"gregor/internal/security"
	"gregor/nemesis"
	"gregor/runtime"
	"gregor/workloads/all"
	"gregor/workloads/kit"
)

func init() { subcommands = append(subcommands, runCmd) }

// registerRun binds `gregor run`'s flags to cfg, with harness.DefaultConfig's
// values as their defaults: the flags only parse; harness.Config validates.
func registerRun(fl *pflag.FlagSet, cfg *harness.Config) {
	def := harness.DefaultConfig()
	// A user's producer runs with Kafka's defaults; so does gregor run's
	// (clientDefaults resolves the ones that depend on other flags).
	def.Idempotence, def.MaxInFlight = true, kit.KafkaMaxInFlight
	*cfg = def
	registerCluster(fl, &cfg.Cluster, def.Cluster)
	fl.DurationVar(&cfg.TimeLimit, "time-limit", def.TimeLimit, "length of the fault phase")
	fl.DurationVar(&cfg.WarmUp, "warm-up", def.WarmUp, "workload without faults before the first fault")
	fl.DurationVar(&cfg.RecoveryTimeout, "recovery-timeout", def.RecoveryTimeout, "after healing, wait at most this for every partition to have a leader and a full ISR")
	fl.DurationVar(&cfg.FinalReadTimeout, "final-read-timeout", def.FinalReadTimeout, "bound on the final reads of every key")
	fl.Float64Var(&cfg.Rate, "rate", def.Rate, "sends per second over all producers (0: unlimited)")
	fl.IntVar(&cfg.Producers, "concurrency", def.Producers, "producer processes (each runs one send operation at a time, of --max-in-flight records)")
	fl.IntVar(&cfg.Consumers, "consumers", def.Consumers, "consumer processes polling every key during the test (with --workload group: the group's consumers)")
	fl.StringVar(&cfg.Acks, "acks", def.Acks, "producer acks: 0 | 1 | all")
	fl.IntVar(&cfg.RF, "rf", def.RF, "replication factor of the test topic")
	fl.IntVar(&cfg.Partitions, "partitions", def.Partitions, "partitions of the test topic (the keys)")
	fl.BoolVar(&cfg.Idempotence, "idempotence", def.Idempotence, "enable.idempotence (needs --acks all); Kafka's default: on, and off when --acks is not all and this flag is not given (KIP-679)")
	fl.IntVar(&cfg.MaxInFlight, "max-in-flight", def.MaxInFlight, "max.in.flight.requests.per.connection, Kafka's default 5: records a producer keeps in flight, each send operation carrying that many (queue and group workloads, one otherwise; at most 5 with --idempotence)")
	fl.IntVar(&cfg.Retries, "retries", def.Retries, "producer retries per record (-1: franz-go's default, unbounded within --delivery-timeout)")
	fl.DurationVar(&cfg.DeliveryTimeout, "delivery-timeout", def.DeliveryTimeout, "delivery.timeout.ms: bound on one send, retries included")
	fl.StringSliceVar(&cfg.Nemeses, "nemesis", def.Nemeses, "faults, comma-separated: "+kindList()+" (none: no faults)")
	fl.DurationVar(&cfg.Interval, "nemesis-interval", def.Interval, "mean quiet time between faults")
	fl.DurationVar(&cfg.Hold, "nemesis-duration", def.Hold, "mean duration of a fault")
	fl.BoolVar(&cfg.Compose, "compose", def.Compose, "let faults of different kinds overlap (each kind its own timeline; partition and slow share one)")
	fl.StringVar(&cfg.Target, "nemesis-target", def.Target, "random | leader | controller | minority | majority | all | coordinator (the consumer group's) | share-coordinator (a drawn share partition's)")
	fl.StringSliceVar(&cfg.Shapes, "partition-shapes", def.Shapes, "partition shapes to draw from (default all): isolate-one, isolate-leader, halves, majorities-ring, bridge")
	fl.StringSliceVar(&cfg.FaultPoints, "fault-points", def.FaultPoints, "fault-points nemesis: the points to draw from (default all): "+pointList())
	fl.StringVar(&cfg.PointTarget, "fault-point-target", def.PointTarget, "fault-points nemesis: whom a step arms (default: --nemesis-target); all lets a point fire on whichever broker reaches it")
	fl.DurationVar(&cfg.PointAfter, "fault-point-after", def.PointAfter, "fault-points nemesis: run the action this long after the hit, the hitting step going on (e.g. a crash once the step's request has left)")
	fl.StringVar(&cfg.PointSpan, "fault-point-span", def.PointSpan, "fault-points nemesis: how long a step keeps its point armed: phase (default: to the end of the fault phase, at probability 1, 0.3, 0.1 or 0.01 a hit, at most 1-3 firings) | hold (its drawn hold, at probability 1, 1/2 or 1/4)")
	fl.StringSliceVar(&cfg.PointAims, "fault-point-aim", def.PointAims, "fault-points nemesis: the aims to draw from (default hit): hit (the node that reached the point acts) | about (the node the step is about acts: the follower an ISR change added or dropped, the follower whose fetch moved the HW, the broker registered or fenced; --runtime sim only)")
	fl.StringSliceVar(&cfg.PointActions, "fault-point-actions", def.PointActions, "fault-points nemesis: the actions to draw from (default crash, pause, cut): crash | pause | cut | hold")
	fl.DurationVar(&cfg.SlowDelay, "slow-delay", def.SlowDelay, "slow nemesis: delay on the node's links (above --replica-lag-max to shrink the ISR)")
	fl.Float64Var(&cfg.SlowLoss, "slow-loss", def.SlowLoss, "slow nemesis: packet loss percent")
	fl.DurationVar(&cfg.LinkDelay, "link-delay", def.LinkDelay, "a standing delay on every node's links for the whole test (brokers further apart): widens the window of records a leader has acknowledged and its followers not yet fetched; at most 500ms; the harness's default on the process runtime: "+harness.ProcessLinkDelay.String()+", and on the sim runtime, whose in-memory links are as fast (0 elsewhere)")
	fl.Int64Var(&cfg.Seed, "seed", def.Seed, "seed of the nemesis schedule and the workload (default: random, printed)")
	fl.StringVar(&cfg.Schedule, "schedule", def.Schedule, "replay this schedule.json (a run directory's, or gregor shrink's) instead of drawing faults from --seed, which still seeds the workload; its kinds must be in --nemesis, its target --nemesis-target")
	fl.StringVar(&cfg.Store, "store", def.Store, "store directory: <store>/<name>/<timestamp>/")
	fl.StringVar(&cfg.Name, "name", def.Name, "test name (store subdirectory; default: the workload's name)")
	fl.DurationVar(&cfg.MetadataInterval, "metadata-interval", def.MetadataInterval, "how often the topic's leaders and ISR are sampled into metadata.jsonl (100ms..5s)")
	registerWorkloads(fl, cfg, def)
}

// clientDefaults resolves, where no flag was given, the producer defaults
// that depend on other settings, as Kafka's ProducerConfig does: idempotence
// is on unless acks is not all (KIP-679 turns it off then, when the user did
// not ask for it), and only producers that pipeline keep Kafka's five
// records in flight (the txn and eos workloads' send one at a time).
func clientDefaults(fl *pflag.FlagSet, cfg *harness.Config) {
	if !fl.Changed("idempotence") && cfg.Acks != "all" {
		cfg.Idempotence = false
	}
	if !fl.Changed("max-in-flight") {
		if d, ok := all.Workloads.Lookup(cfg.Workload); ok && !d.Pipelines() {
			cfg.MaxInFlight = 0
		}
	}
}

// runtimeDefaults are the harness's own defaults that depend on the
// runtime: a standing link delay on the process runtime, where every link
// is loopback (harness.ProcessLinkDelay says why).
func runtimeDefaults(fl *pflag.FlagSet, cfg *harness.Config, rt runtime.Runtime) {
	if !fl.Changed("link-delay") && (rt.Name() == "process" || rt.Name() == "sim") {
		cfg.LinkDelay = harness.ProcessLinkDelay
	}
}

func kindList() string {
	s := make([]string, len(nemesis.Kinds))
	for i, k := range nemesis.Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ",")
}

func runCmd() *cobra.Command {
	var (
		cfg    harness.Config
		target targetFlags
		repeat int
		sec    securityFlags
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a test: boot a cluster, drive the queue workload under faults, check the history",
		Long: `Run boots the embedded cluster (docker when an engine answers, else local
processes; --runtime forces one), creates the test topic (--rf, --partitions,
--min-isr, --unclean), runs producers and consumers while the nemesis injects
faults for --time-limit, heals everything, waits for recovery, reads every key
back from offset 0 to its high watermark, and checks the history.

--runtime sim runs the brokers, their controller quorum, the clients and the
nemesis in one process on virtual time (bin/gregor-sim, built by make build):
the same history, store, checker and report, in a fraction of the time;
test.json says simulated_time. A paused node's network calls wait until
it is resumed (DESIGN.md section 7 says what the sim's pause models).
Goroutine scheduling in the simulation is not deterministic: a seed fixes the
schedule, not the run, so --repeat N reruns the seed N times and prints how
often each anomaly recurs.

Defaults. The producers run with Kafka's client defaults: acks=all,
enable.idempotence on (off when --acks is not all and --idempotence is not
given, as KIP-679 resolves it), max.in.flight.requests.per.connection 5,
retries unbounded within the delivery timeout. The harness's own defaults
are shorter timeouts, so that faults take effect within a test:
--delivery-timeout 5s (Kafka: 120s), the brokers' --session-timeout 3s
(broker.session.timeout.ms, Kafka: 9s) and --replica-lag-max 3s
(replica.lag.time.max.ms, Kafka: 30s); and, on the process runtime, a
standing --link-delay 50ms: every link there is loopback, where a follower
copies a record within a millisecond, so without it a leader rarely holds an
acknowledged tail its followers lack (a real network between zones does).
--nodes defaults to 3.

Faults (--nemesis, comma-separated): kill, stop, pause, partition (a shape is
drawn per fault: isolate-one, isolate-leader, halves, majorities-ring, bridge),
slow (--slow-delay / --slow-loss), power-loss (needs --lazyfs: kill loses
unsynced writes; --nemesis-target all cuts power to every broker),
client-crash (tears down a workload client mid-operation; with --workload
group a consumer crashes mid-batch and a fresh one joins in its place),
consumer-restart (rolling restart of the group's consumers), consumer-join
(one more consumer joins the group); the last two need --workload group.
Client-link faults act on the clients' connections to one broker (the
target), which stays up: client-reset (closes them), lose-responses (its
answers are lost: requests are applied and retried to the same leader),
delay-client (requests held past the delivery timeout, delivered late after
the client retried on a new connection). restart-storm kills and restarts
the target many times in one fault, each back within the session timeout
and with a full ISR between rounds (on --lazyfs each kill is a power cut).
disk-fault arms one disk fault on the target, drawn from the seed: EIO on
the next write, fsync or read of its partition logs, a full disk (ENOSPC),
or a bit flipped in a stored batch; the broker takes its log directory
offline and halts, and is restarted at the fault's end. clock-skew skews
the target's wall clock by a drawn D (1s to 1h, either way) for the hold.
Both run on --runtime sim, process and docker (faults inside gregor's broker).
--compose lets faults of different kinds overlap (a kill during a
partition): each kind draws its own timeline, partition and slow share one.

--workload group: the producers, and --consumers franz-go consumers in one
group that process each record (--processing-time, --failure-rate,
--failure-handling swallow|retry), commit (--commit-mode auto|auto-greedy|before|after|
on-revoked, --auto-commit-interval), with --assignor range|sticky|
cooperative-sticky, --static membership, --max-poll-records and
--max-poll-interval. The checker adds committed-skip, redelivered and group
figures (rebalance pauses, lag) to results.json and the report.
--nemesis-target: random, leader (of a drawn partition), controller (the
ControllerID Metadata reports: a live broker, not necessarily the active raft
leader), minority, majority, all, coordinator (of the --workload group
consumer group: FindCoordinator), share-coordinator (--workload share: the
share coordinator of a drawn partition, FindCoordinator key type SHARE). With brokers in combined mode, a majority
fault loses the controller quorum; add --controllers N for progress.
The schedule comes from --seed: the same seed replays it. Every run writes it
to schedule.json before the first fault (each step: start, kind, target rule,
shape, hold, pick, params; the nodes it hit once resolved); --schedule FILE
replays one instead (refused, exit 2, when it names kinds, a target or nodes
this run does not have), and gregor shrink uses it.

Store: <store>/<name>/<timestamp>/ holds history.jsonl and metadata.jsonl
(written as they happen), schedule.json and run.json (written before the
faults), test.json, results.json, report.html and
logs/node-N.log; <store>/<name>/latest points at the newest run. The check
reads the stored run back as gregor check would (DESIGN.md section 8).

Exit status (as gregor check):
  0  valid: no forbidden anomaly
  1  a forbidden anomaly was found
  2  bad input: an impossible configuration, refused before booting, or a
     stored file damaged before its last line (named with its line)
  3  unknown: a check could not finish, or the run was interrupted (the
     first Ctrl-C or SIGTERM: every phase ends within seconds, the history
     stays readable by gregor check)
  4  the store cannot be written (read-only, disk full): the error names the
     path; the run stops, and what it wrote stays readable by gregor check
  5  the cluster did not boot (a runtime failed to start it, or it was not
     ready in time): nothing was tested; gregor matrix retries such a cell
  130, 143  a second Ctrl-C (130) or SIGTERM (143) ended it at once, after
     killing the fault commands still running`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("seed") {
				cfg.Seed = rand.Int64N(1 << 53) // fits a JSON number exactly
			}
			clientDefaults(cmd.Flags(), &cfg)
			err := refuseOwnFlags(cmd.Flags(), cfg.Workload)
			// An external cluster's shape (its brokers) is known only once
			// it answers: harness.Run validates then (harness/attach.go).
			if err == nil && target.Runtime != "external" {
				err = cfg.Validate()
			}
			var secured *security.Config
			if err == nil {
				secured, err = sec.load()
			}
			cleanTLS := func() {}
			if err == nil && target.Runtime != "external" {
				cleanTLS, err = secureBoot(&cfg.Cluster, secured, target.Runtime)
			}
			defer cleanTLS()
			if err == nil && repeat != 1 && (target.Runtime != "sim" || repeat < 1) {
				err = fmt.Errorf("--repeat %d: give a positive count with --runtime sim (another runtime reruns a seed with a loop of runs)", repeat)
			}
			if err != nil {
				return &exitError{checkBadInput, err}
			}
			errOut := cmd.ErrOrStderr()
			if target.Runtime == "sim" && simChild == nil {
				fmt.Fprintf(errOut, "gregor run: seed %d\n", cfg.Seed)
				return runSim(cmd, &cfg, repeat)
			}
			if simChild == nil {
				fmt.Fprintf(errOut, "gregor run: seed %d\n", cfg.Seed)
			}
			bin, err := selfBinary()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if simChild == nil {
				// In gregor-sim the bubble's context is cmd's (sim_test.go):
				// a signal channel made in a bubble cannot hear the host.
				var stop context.CancelFunc
				ctx, stop = interruptContext(ctx, errOut)
				defer stop()
			}
			rt, err := pickTarget(ctx, target, errOut)
			if err != nil {
				return &exitError{checkBadInput, err}
			}
			runtimeDefaults(cmd.Flags(), &cfg, rt)
			test := harness.Test{Config: cfg, Runtime: rt, Binary: bin, Progress: errOut}
			if _, ok := rt.(runtime.Attached); ok {
				// The topic settings not asked for are the cluster's own.
				if !cmd.Flags().Changed("min-isr") {
					test.ClusterTopicDefaults = append(test.ClusterTopicDefaults, harness.ConfigMinISR)
				}
				if !cmd.Flags().Changed("unclean") {
					test.ClusterTopicDefaults = append(test.ClusterTopicDefaults, harness.ConfigUnclean)
				}
			}
			if simChild != nil {
				test.Started = simChild.started
			}
			rep, err := harness.Run(ctx, test)
			simChild.write(rep)
			if rep != nil && rep.Dir != "" {
				fmt.Fprintf(errOut, "gregor run: stored in %s\n", rep.Dir)
				for _, n := range rep.Notes {
					fmt.Fprintf(errOut, "gregor run: note: %s\n", n)
				}
			}
			if _, ok := errors.AsType[*harness.BadInputError](err); ok {
				return &exitError{checkBadInput, err}
			}
			if errors.Is(err, harness.ErrInterrupted) {
				return &exitError{checkUnknown, err}
			}
			if _, ok := errors.AsType[*harness.StoreError](err); ok {
				return &exitError{storeFailed, err}
			}
			if _, ok := errors.AsType[*harness.BootError](err); ok {
				return &exitError{bootFailed, err}
			}
			if _, ok := errors.AsType[*history.ParseError](err); ok {
				return &exitError{checkBadInput, err} // a stored file is damaged (history.ReadRun)
			}
			if err != nil {
				return err
			}
			return verdict(cmd, rep)
		},
	}
	registerRunCommand(cmd.Flags(), &cfg, &target, &sec, &repeat)
	return cmd
}

// registerRunCommand binds every flag of `gregor run`: its settings, its
// target and security, and --repeat.
func registerRunCommand(fl *pflag.FlagSet, cfg *harness.Config, target *targetFlags, sec *securityFlags, repeat *int) {
	registerRun(fl, cfg)
	registerTarget(fl, target)
	sec.register(fl)
	fl.IntVar(repeat, "repeat", 1, "--runtime sim: run the seed this many times and print how often each anomaly recurs (the schedule is the seed's; goroutine scheduling in the simulation is not deterministic, so runs of one seed differ)")
}

// plannedRecord is the test.json `gregor run args...` would record, read
// from run's own flags and defaults before anything runs: the one mapping
// from a matrix cell's arguments to the configuration the checker's theory
// (checker.Expect) reads. The settings are not validated here; the run
// validates them.
func plannedRecord(args []string) (history.Config, error) {
	var (
		cfg    harness.Config
		target targetFlags
		sec    securityFlags
		repeat int
	)
	fl := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fl.SetOutput(io.Discard)
	registerRunCommand(fl, &cfg, &target, &sec, &repeat)
	if err := fl.Parse(args); err != nil {
		return history.Config{}, fmt.Errorf("gregor run %s: %w", strings.Join(args, " "), err)
	}
	clientDefaults(fl, &cfg)
	return cfg.Record(target.Runtime), nil
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
	fmt.Fprintf(out, "results: %s\n", history.RunDir(rep.Dir).Results())
	switch res.Valid {
	case checker.ValidTrue:
		return nil
	case checker.ValidFalse:
		return &exitError{checkForbidden, errors.New("run: INVALID: forbidden anomalies found")}
	}
	return &exitError{checkUnknown, fmt.Errorf("run: valid is UNKNOWN (not a pass): %s", strings.Join(res.UnknownReasons, "; "))}
}

// pointList names the brokers' fault points, for --help.
func pointList() string {
	s := make([]string, len(faultpoint.Points))
	for i, p := range faultpoint.Points {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}
