package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"gregor/harness"
	"gregor/runtime"
)

func init() { subcommands = append(subcommands, upCmd) }

// clusterOpts are the flags shared by commands that boot a cluster.
type clusterOpts struct {
	nodes      int
	runtime    string
	minISR     int
	unclean    bool
	fsync      string
	lazyFS     bool
	lagMax     time.Duration
	bugs       []string
	autoCreate bool
	extra      []string
	// controllers are extra controller-only voters (ids after the brokers),
	// so the quorum outlives the loss of most brokers.
	controllers int
	// dedicated: only the controller-only nodes vote; brokers follow the
	// metadata log as raft non-voters and are never the active controller.
	dedicated bool
	session   time.Duration
	metrics   bool
	// txnVersion is the cluster's transaction.version (1 or 2).
	txnVersion int16
}

func (o *clusterOpts) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVar(&o.nodes, "nodes", 1, "brokers in the cluster")
	fl.StringVar(&o.runtime, "runtime", "auto", "docker | process | auto (docker when an engine answers)")
	fl.IntVar(&o.minISR, "min-isr", 1, "broker default min.insync.replicas")
	fl.BoolVar(&o.unclean, "unclean", false, "broker default unclean.leader.election.enable")
	fl.StringVar(&o.fsync, "fsync", "never", "fsync policy: never | always | every:N")
	fl.BoolVar(&o.lazyFS, "lazyfs", false, "unsynced writes are lost on kill, like a power cut")
	fl.DurationVar(&o.lagMax, "replica-lag-max", 30*time.Second, "replica.lag.time.max.ms")
	fl.StringSliceVar(&o.bugs, "bug", nil, "plant a known bug in every broker")
	fl.BoolVar(&o.autoCreate, "auto-create-topics", true, "create unknown topics on Metadata")
	fl.StringArrayVar(&o.extra, "broker-arg", nil, "extra flag passed to every broker (repeatable)")
	fl.IntVar(&o.controllers, "controllers", 0, "extra controller-only quorum voters (KRaft process.roles=controller)")
	fl.DurationVar(&o.session, "session-timeout", 9*time.Second, "broker.session.timeout.ms")
	fl.Int16Var(&o.txnVersion, "transaction-version", 2, "the cluster's transaction.version: 1 (Kafka 3.x transactions: explicit AddPartitionsToTxn, the epoch kept across transactions) or 2 (KIP-890: partitions join on produce, every commit and abort bumps the epoch)")
	fl.BoolVar(&o.dedicated, "dedicated-controllers", false, "only the --controllers nodes vote in the controller quorum; brokers are raft non-voters, never the active controller (KRaft with separate controllers)")
}

func (o *clusterOpts) validate() error {
	if o.nodes < 1 || o.nodes > runtime.MaxNodes {
		return fmt.Errorf("--nodes %d: give 1..%d", o.nodes, runtime.MaxNodes)
	}
	if o.controllers < 0 || o.nodes+o.controllers > runtime.MaxNodes {
		return fmt.Errorf("--controllers %d: give 0..%d", o.controllers, runtime.MaxNodes-o.nodes)
	}
	if o.dedicated && o.controllers < 1 {
		return errors.New("--dedicated-controllers with --controllers 0: there would be no voter; add --controllers 1 (or 3 to survive a controller fault)")
	}
	if o.txnVersion != 1 && o.txnVersion != 2 {
		return fmt.Errorf("--transaction-version %d: give 1 (Kafka 3.x transactions) or 2 (KIP-890)", o.txnVersion)
	}
	if o.minISR > o.nodes {
		return fmt.Errorf("--min-isr %d > --nodes %d: no topic could take acks=all writes; lower --min-isr", o.minISR, o.nodes)
	}
	return nil
}

// spec builds a ClusterSpec whose nodes run `gregor broker` with o's flags.
func (o *clusterOpts) spec(name, binary string) runtime.ClusterSpec {
	args := []string{"--node-id", "{{.ID}}", "--listen", "{{.KafkaAddr}}", "--data", "{{.DataDir}}",
		"--min-isr", strconv.Itoa(o.minISR), "--fsync", o.fsync, "--replica-lag-max", o.lagMax.String()}
	if o.unclean {
		args = append(args, "--unclean")
	}
	if o.lazyFS {
		args = append(args, "--lazyfs")
	}
	if o.autoCreate {
		args = append(args, "--auto-create-topics")
	}
	for _, b := range o.bugs {
		args = append(args, "--bug", b)
	}
	if o.session > 0 {
		args = append(args, "--session-timeout", o.session.String())
	}
	if o.txnVersion != 0 {
		args = append(args, "--transaction-version", strconv.Itoa(int(o.txnVersion)))
	}
	if o.nodes+o.controllers > 1 {
		// Every node is a voter of the controller quorum (combined mode).
		args = append(args, "--voters", "{{.Peers}}", "--kafka-peers", "{{.KafkaPeers}}")
	}
	if o.dedicated {
		var ids []string
		for i := o.nodes + 1; i <= o.nodes+o.controllers; i++ {
			ids = append(ids, strconv.Itoa(i))
		}
		args = append(args, "--quorum", strings.Join(ids, ","))
	}
	args = append(args, "--default-rf", strconv.Itoa(min(3, o.nodes)), "--metrics-listen", "{{.Host}}:9094")
	args = append(args, o.extra...)
	spec := runtime.ClusterSpec{Name: name, KafkaPort: 9092, RaftPort: 9093, Binary: binary,
		Labels: map[string]string{}, Ready: harness.KafkaReady(o.nodes), ReadyTimeout: 30 * time.Second}
	for i := 1; i <= o.nodes+o.controllers; i++ {
		a := args
		if i > o.nodes {
			a = append(append([]string(nil), args...), "--controller-only")
		}
		spec.Nodes = append(spec.Nodes, runtime.NodeSpec{ID: int32(i), Args: a})
	}
	return spec
}

func upCmd() *cobra.Command {
	var o clusterOpts
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local cluster of the embedded broker and keep it up until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return &exitError{2, err}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			bin, err := selfBinary()
			if err != nil {
				return err
			}
			start := time.Now()
			c, err := pickAndStart(ctx, &o, "up", bin, cmd)
			if err != nil {
				return err
			}
			defer func() {
				cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				c.Close(cctx)
			}()
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "cluster up in %v\n", time.Since(start).Round(time.Millisecond))
			for _, n := range c.Nodes() {
				fmt.Fprintf(out, "  node %d  kafka %s\n", n.ID, n.KafkaAddr)
			}
			fmt.Fprintf(out, "bootstrap: %s\n", strings.Join(c.Bootstrap(), ","))
			fmt.Fprintln(out, "Ctrl-C to stop and remove the cluster")
			<-ctx.Done()
			fmt.Fprintln(out, "stopping")
			return nil
		},
	}
	o.register(cmd)
	return cmd
}

// pickAndStart picks the runtime o names and boots a cluster on it.
func pickAndStart(ctx context.Context, o *clusterOpts, name, bin string, cmd *cobra.Command) (runtime.Cluster, error) {
	rt, err := pickRuntime(ctx, o.runtime, cmd.ErrOrStderr())
	if err != nil {
		return nil, err
	}
	return rt.Start(ctx, o.spec(name, bin))
}
