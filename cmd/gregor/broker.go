package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"gregor/cluster"
	"gregor/cluster/group"
	"gregor/cluster/storage"
	"gregor/internal/security"
)

func init() { subcommands = append(subcommands, brokerCmd) }

// brokerFlags holds `gregor broker` flags; other commands (up) build the same
// flag list to start brokers as child processes.
type brokerFlags struct {
	nodeID       int32
	listen       string
	advertise    string
	data         string
	autoCreate   bool
	partitions   int32
	rf           int16
	minISR       int
	unclean      bool
	fsync        string
	lazyFS       bool
	writeback    time.Duration
	segmentBytes int64
	retentionMs  int64
	retentionB   int64
	lagMax       time.Duration
	// cgSession, cgHeartbeat: KIP-848 consumer groups' broker-side
	// session timeout and heartbeat interval.
	cgSession, cgHeartbeat time.Duration
	// groupProtocols is group.coordinator.rebalance.protocols.
	groupProtocols []string
	bugs           []string
	logLevel       string
	voters         string
	kafkaPeers     string
	ctrlOnly       bool
	quorum         []int
	session        time.Duration
	heartbeat      time.Duration
	raftTimeout    time.Duration
	metrics        string
	txnVersion     int16
	sec            brokerSecurityFlags
}

func (f *brokerFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.Int32Var(&f.nodeID, "node-id", 1, "broker id (node.id)")
	fl.StringVar(&f.listen, "listen", "127.0.0.1:9092", "Kafka listener [NAME://]host:port (port 0 picks one; NAME's protocol is in --listener-security-protocol-map, default PLAINTEXT)")
	fl.StringVar(&f.advertise, "advertise", "", "host:port told to clients (default: --listen)")
	fl.StringVar(&f.data, "data", "", "data directory (required)")
	fl.BoolVar(&f.autoCreate, "auto-create-topics", false, "create unknown topics on Metadata requests (auto.create.topics.enable)")
	fl.Int32Var(&f.partitions, "default-partitions", 1, "partitions of auto-created topics (num.partitions)")
	fl.Int16Var(&f.rf, "default-rf", 1, "replication factor of auto-created topics (default.replication.factor)")
	fl.IntVar(&f.minISR, "min-isr", 1, "broker default min.insync.replicas")
	fl.BoolVar(&f.unclean, "unclean", false, "broker default unclean.leader.election.enable")
	fl.StringVar(&f.fsync, "fsync", "never", "fsync policy: never | always | every:N (records)")
	fl.BoolVar(&f.lazyFS, "lazyfs", false, "keep unsynced writes in memory only, so a kill loses them like a power cut")
	fl.DurationVar(&f.writeback, "writeback-delay", 5*time.Second, "lazyfs: unsynced data becomes durable after this (the kernel's dirty_expire)")
	fl.Int64Var(&f.segmentBytes, "segment-bytes", 64<<20, "roll log segments past this size (log.segment.bytes)")
	fl.Int64Var(&f.retentionMs, "retention-ms", -1, "delete closed segments older than this, -1 keeps all (log.retention.ms)")
	fl.Int64Var(&f.retentionB, "retention-bytes", -1, "keep at most this many bytes per partition, -1 keeps all (log.retention.bytes)")
	fl.DurationVar(&f.lagMax, "replica-lag-max", 30*time.Second, "replica.lag.time.max.ms")
	fl.DurationVar(&f.cgSession, "consumer-session-timeout", 45*time.Second, "group.consumer.session.timeout.ms: a KIP-848 consumer group member silent this long is fenced")
	fl.DurationVar(&f.cgHeartbeat, "consumer-heartbeat-interval", 5*time.Second, "group.consumer.heartbeat.interval.ms: how often KIP-848 members are asked to heartbeat")
	fl.StringSliceVar(&f.groupProtocols, "group-protocols", group.DefaultRebalanceProtocols(), "group.coordinator.rebalance.protocols (Kafka 4.2's default): classic, plus consumer to offer KIP-848 consumer groups (ConsumerGroupHeartbeat, group.version) and/or share to offer KIP-932 share groups (ShareFetch, share.version); give every broker the same")
	fl.StringSliceVar(&f.bugs, "bug", nil, "plant a known bug (testing the harness): "+strings.Join(cluster.BugNames(), ", "))
	fl.StringVar(&f.logLevel, "log-level", "info", "debug | info | warn | error")
	fl.StringVar(&f.voters, "voters", "", "controller quorum voters id@host:raftport,... (every node of a multi-broker cluster); empty: a cluster of one")
	fl.StringVar(&f.kafkaPeers, "kafka-peers", "", "Kafka listeners of the voters id@host:port,... (with --voters)")
	fl.BoolVar(&f.ctrlOnly, "controller-only", false, "a controller quorum voter that is not a broker (process.roles=controller)")
	fl.IntSliceVar(&f.quorum, "quorum", nil, "node ids that vote in the controller quorum (dedicated controllers); the other --voters follow the metadata log as non-voters (default: all vote)")
	fl.DurationVar(&f.session, "session-timeout", 9*time.Second, "broker.session.timeout.ms: a broker silent this long is fenced")
	fl.DurationVar(&f.heartbeat, "heartbeat-interval", 0, "broker.heartbeat.interval.ms (default: min(2s, session/4))")
	fl.DurationVar(&f.raftTimeout, "raft-timeout", time.Second, "controller quorum heartbeat and election timeout")
	fl.StringVar(&f.metrics, "metrics-listen", "", "serve GET /metrics (Prometheus text) on this host:port")
	fl.Int16Var(&f.txnVersion, "transaction-version", 2, "the cluster's transaction.version feature: 1 (Kafka 3.x transactions) or 2 (KIP-890); give every broker the same")
	f.sec.register(fl)
}

func (f *brokerFlags) config() (cluster.Config, error) {
	pol, err := storage.ParseFsyncPolicy(f.fsync)
	if err != nil {
		return cluster.Config{}, err
	}
	var peers []cluster.Peer
	if f.voters != "" || f.kafkaPeers != "" {
		if peers, err = cluster.ParsePeers(f.voters, f.kafkaPeers); err != nil {
			return cluster.Config{}, err
		}
	}
	var quorum []int32
	for _, id := range f.quorum {
		quorum = append(quorum, int32(id))
	}
	if len(quorum) > 0 {
		if len(peers) == 0 {
			return cluster.Config{}, errors.New("--quorum without --voters: a cluster of one has no quorum to split; drop --quorum or add --voters")
		}
		ids := map[int32]bool{}
		for _, p := range peers {
			ids[p.ID] = true
		}
		for _, id := range quorum {
			if !ids[id] {
				return cluster.Config{}, fmt.Errorf("--quorum names node %d, which is not in --voters; list ids from --voters", id)
			}
		}
		if f.ctrlOnly && !slices.Contains(quorum, f.nodeID) {
			return cluster.Config{}, fmt.Errorf("--controller-only node %d is not in --quorum %v: a controller that does not vote does nothing; add it to --quorum", f.nodeID, f.quorum)
		}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return cluster.Config{}, fmt.Errorf("--log-level %q: give debug, info, warn or error", f.logLevel)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	name, listen, protocol, err := f.sec.listener(f.listen)
	if err != nil {
		return cluster.Config{}, err
	}
	supers, err := f.sec.superUserList()
	if err != nil {
		return cluster.Config{}, err
	}
	cfg := cluster.Config{
		Security: cluster.Security{ListenerName: name, Protocol: protocol, Mechanisms: splitList(f.sec.mechanisms),
			CertFile: f.sec.certFile, KeyFile: f.sec.keyFile, CAKeyFile: f.sec.caKeyFile, SuperUsers: supers,
			Authorizer: f.sec.authorizer, AllowEveryoneIfNoACL: f.sec.allowNoACL,
			Inter: security.Config{Mechanism: f.sec.mechanism, User: f.sec.user, PasswordFile: f.sec.password, CAFile: f.sec.caFile}},
		NodeID: f.nodeID, Listen: listen, Advertise: f.advertise, DataDir: f.data,
		AutoCreateTopics: f.autoCreate, DefaultPartitions: f.partitions, DefaultRF: f.rf,
		MinISR: f.minISR, Unclean: f.unclean,
		Storage: storage.Options{
			SegmentBytes: f.segmentBytes, RetentionMs: f.retentionMs, RetentionBytes: f.retentionB,
			Fsync: pol, LazyFS: f.lazyFS, WritebackDelay: f.writeback,
		},
		ReplicaLagMax: f.lagMax,
		Peers:         peers, ControllerOnly: f.ctrlOnly, Quorum: quorum,
		SessionTimeout: f.session, HeartbeatInterval: f.heartbeat, RaftTimeout: f.raftTimeout,
		TransactionVersion: f.txnVersion,
		MetricsListen:      f.metrics,
		Logger:             logger,
	}
	if f.cgSession <= 0 || f.cgHeartbeat <= 0 || f.cgHeartbeat >= f.cgSession {
		return cluster.Config{}, fmt.Errorf("--consumer-heartbeat-interval %v, --consumer-session-timeout %v: give both above 0, the interval below the timeout (Kafka: 5s and 45s)", f.cgHeartbeat, f.cgSession)
	}
	cfg.Groups.ConsumerSessionTimeout, cfg.Groups.ConsumerHeartbeatInterval = f.cgSession, f.cgHeartbeat
	if cfg.Groups.ConsumerProtocol, cfg.Groups.ShareProtocol, err = group.ParseRebalanceProtocols(f.groupProtocols); err != nil {
		return cluster.Config{}, err
	}
	if err := cluster.PlantBugs(&cfg, f.bugs); err != nil {
		return cluster.Config{}, err
	}
	return cfg, nil
}

func brokerCmd() *cobra.Command {
	var f brokerFlags
	cmd := &cobra.Command{
		Use:   "broker --node-id N --listen ADDR --data DIR",
		Short: "Run one broker of the embedded Kafka-protocol cluster",
		Long: `Run one broker. It speaks the Kafka protocol on --listen, stores partitions
under --data, and runs until SIGINT or SIGTERM (a controlled shutdown: logs
are synced and marked clean). SIGKILL is a crash: recovery on the next start
truncates any torn tail.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config()
			if err != nil {
				return &exitError{2, err}
			}
			b, err := cluster.Start(cfg)
			if err != nil {
				return err
			}
			// Printed on stdout so a parent process learns the address.
			fmt.Printf("gregor broker %d listening on %s\n", cfg.NodeID, b.Advertised())
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
			<-sig
			return b.Close()
		},
	}
	f.register(cmd)
	return cmd
}
