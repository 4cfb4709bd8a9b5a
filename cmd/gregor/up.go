package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"gregor/harness"
	"gregor/runtime"
)

func init() { subcommands = append(subcommands, upCmd) }

// registerCluster binds the flags shared by commands that boot a cluster
// to c, with def's values as their defaults.
func registerCluster(fl *pflag.FlagSet, c *harness.ClusterConfig, def harness.ClusterConfig) {
	*c = def
	fl.IntVar(&c.Nodes, "nodes", def.Nodes, "brokers in the cluster")
	fl.IntVar(&c.MinISR, "min-isr", def.MinISR, "broker default min.insync.replicas")
	fl.BoolVar(&c.Unclean, "unclean", def.Unclean, "broker default unclean.leader.election.enable")
	fl.StringVar(&c.Fsync, "fsync", def.Fsync, "fsync policy: never | always | every:N")
	fl.BoolVar(&c.LazyFS, "lazyfs", def.LazyFS, "unsynced writes are lost on kill, like a power cut")
	fl.DurationVar(&c.ReplicaLagMax, "replica-lag-max", def.ReplicaLagMax, "replica.lag.time.max.ms")
	fl.StringSliceVar(&c.Bugs, "bug", def.Bugs, "plant a known bug in every broker")
	fl.BoolVar(&c.AutoCreateTopics, "auto-create-topics", def.AutoCreateTopics, "create unknown topics on Metadata")
	fl.StringArrayVar(&c.BrokerArgs, "broker-arg", def.BrokerArgs, "extra flag passed to every broker (repeatable)")
	fl.IntVar(&c.Controllers, "controllers", def.Controllers, "extra controller-only quorum voters (KRaft process.roles=controller)")
	fl.DurationVar(&c.SessionTimeout, "session-timeout", def.SessionTimeout, "broker.session.timeout.ms")
	fl.Int16Var(&c.TransactionVersion, "transaction-version", def.TransactionVersion, "the cluster's transaction.version: 1 (Kafka 3.x transactions: explicit AddPartitionsToTxn, the epoch kept across transactions) or 2 (KIP-890: partitions join on produce, every commit and abort bumps the epoch)")
	fl.BoolVar(&c.Dedicated, "dedicated-controllers", def.Dedicated, "only the --controllers nodes vote in the controller quorum; brokers are raft non-voters, never the active controller (KRaft with separate controllers)")
}

// registerRuntime binds --runtime.
func registerRuntime(fl *pflag.FlagSet, name *string) {
	fl.StringVar(name, "runtime", "auto", "docker | process | auto (docker when an engine answers)")
}

func upCmd() *cobra.Command {
	var (
		c           harness.ClusterConfig
		runtimeName string
		name        string
		sec         securityFlags
		authz       upAuthzFlags
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local cluster of the embedded broker and keep it up until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.Validate(); err != nil {
				return &exitError{checkBadInput, err}
			}
			if err := authz.apply(&c); err != nil {
				return &exitError{checkBadInput, err}
			}
			secured, err := sec.load()
			if err != nil {
				return &exitError{checkBadInput, err}
			}
			cleanTLS, err := secureBoot(&c, secured, runtimeName)
			if err != nil {
				return &exitError{checkBadInput, err}
			}
			defer cleanTLS()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			bin, err := selfBinary()
			if err != nil {
				return err
			}
			start := time.Now()
			if err := checkNotUp(name); err != nil {
				return &exitError{checkBadInput, err}
			}
			rt, err := pickRuntime(ctx, runtimeName, cmd.ErrOrStderr())
			if err != nil {
				return &exitError{checkBadInput, err}
			}
			cl, err := rt.Start(ctx, c.Spec(name, bin))
			if err != nil {
				return err
			}
			defer func() {
				cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				cl.Close(cctx)
			}()
			dir, stopControl, err := serveControl(ctx, name, rt.Name(), cl)
			if err != nil {
				return err
			}
			defer stopControl()
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "cluster %s up in %v\n", name, time.Since(start).Round(time.Millisecond))
			for _, n := range snapshot(name, rt.Name(), "", cl).Nodes {
				pid := ""
				if n.Pid > 0 {
					pid = fmt.Sprintf("  pid %d", n.Pid)
				}
				fmt.Fprintf(out, "  node %d  kafka %s%s\n", n.ID, n.Kafka, pid)
			}
			fmt.Fprintf(out, "bootstrap: %s\n", strings.Join(cl.Bootstrap(), ","))
			if secured.Secured() {
				fmt.Fprintf(out, "security: %s\n", secured)
			}
			if secured.TLS() {
				fmt.Fprintf(out, "tls ca: %s\n", secured.CAFile)
			}
			fmt.Fprintf(out, "nodes file: %s\n", filepath.Join(dir, controlFile))
			fmt.Fprintf(out, "faults: gregor node kill|stop|start|pause|resume|isolate|heal|pid N --cluster %s\n", name)
			fmt.Fprintln(out, "Ctrl-C to stop and remove the cluster")
			<-ctx.Done()
			fmt.Fprintln(out, "stopping")
			return nil
		},
	}
	registerCluster(cmd.Flags(), &c, harness.DefaultCluster())
	registerRuntime(cmd.Flags(), &runtimeName)
	cmd.Flags().StringVar(&name, "name", "up", "the cluster's name: gregor node --cluster NAME controls it (letters, digits, '-')")
	sec.register(cmd.Flags())
	authz.register(cmd.Flags())
	return cmd
}

// upAuthzFlags are up's authorizer settings, passed to every broker
// (`gregor broker --authorizer`, --super-users,
// --allow-everyone-if-no-acl-found).
type upAuthzFlags struct {
	on, allowNoACL bool
	superUsers     string
}

func (f *upAuthzFlags) register(fl *pflag.FlagSet) {
	fl.BoolVar(&f.on, "authorizer", false, "the brokers check every request against the ACLs (StandardAuthorizer); without SASL a SASL_PLAINTEXT super user is made")
	fl.StringVar(&f.superUsers, "super-users", "", "super.users: User:NAME;User:NAME (with --authorizer; --sasl-user is always one)")
	fl.BoolVar(&f.allowNoACL, "allow-everyone-if-no-acl-found", false, "allow.everyone.if.no.acl.found (with --authorizer)")
}

// apply checks the flags once and sets them on c.
func (f *upAuthzFlags) apply(c *harness.ClusterConfig) error {
	if !f.on && (f.superUsers != "" || f.allowNoACL) {
		return errors.New("--super-users and --allow-everyone-if-no-acl-found are the authorizer's: add --authorizer")
	}
	users, err := (&brokerSecurityFlags{superUsers: f.superUsers}).superUserList()
	if err != nil {
		return err
	}
	c.Authorizer, c.SuperUsers, c.AllowEveryoneIfNoACL = f.on, users, f.allowNoACL
	return nil
}

// pickAndStart picks the named runtime and boots c on it.
func pickAndStart(ctx context.Context, runtimeName string, c harness.ClusterConfig, name, bin string, cmd *cobra.Command) (runtime.Cluster, error) {
	rt, err := pickRuntime(ctx, runtimeName, cmd.ErrOrStderr())
	if err != nil {
		return nil, err
	}
	return rt.Start(ctx, c.Spec(name, bin))
}
