package harness

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gregor/cluster"
	"gregor/internal/security"
	"gregor/runtime"
)

// ClusterConfig is how the brokers run: the `gregor broker` flags every
// node gets. gregor up and gregor run boot clusters from it, and a run's
// test.json records the settings the checker's theory reads.
type ClusterConfig struct {
	// Nodes are the brokers, ids 1..Nodes.
	Nodes int
	// Controllers are controller-only voters after the brokers (ids
	// Nodes+1..), so the quorum outlives the loss of most brokers.
	Controllers int
	// Dedicated: only the controller-only nodes vote; brokers follow the
	// metadata log as raft non-voters and are never the active controller
	// (KRaft with process.roles=controller nodes).
	Dedicated bool
	// MinISR is min.insync.replicas, the brokers' default (a run's topic
	// sets the same value as its own config).
	MinISR int
	// Unclean is unclean.leader.election.enable, the brokers' default (and
	// a run's topic config).
	Unclean bool
	// Fsync is the brokers' fsync policy: never | always | every:N.
	Fsync string
	// LazyFS: unsynced writes are lost when a broker is killed.
	LazyFS bool
	// ReplicaLagMax is replica.lag.time.max.ms; 0 is the broker's default.
	ReplicaLagMax time.Duration
	// SessionTimeout is broker.session.timeout.ms; 0 is the broker's default.
	SessionTimeout time.Duration
	// Bugs are planted bug switches (DESIGN.md section 6), on every broker.
	Bugs []string
	// AutoCreateTopics creates an unknown topic on Metadata.
	AutoCreateTopics bool
	// TransactionVersion is the cluster's transaction.version feature: 1
	// (Kafka 3.x transactions) or 2 (KIP-890); 0 is the broker's default.
	TransactionVersion int16
	// Authorizer runs the brokers' authorizer (`gregor broker
	// --authorizer`); Config.Validate sets it for a workload that
	// Authorizes (kit.Descriptor).
	Authorizer bool
	// SuperUsers (super.users) and AllowEveryoneIfNoACL
	// (allow.everyone.if.no.acl.found) are the authorizer's, set by
	// `gregor up --authorizer`; the brokers' own user is always a super user.
	SuperUsers           []string
	AllowEveryoneIfNoACL bool
	// BrokerArgs are extra flags for every broker, after the others (a
	// later flag wins).
	BrokerArgs []string
	// Security, when not PLAINTEXT, is the brokers' listener protocol and
	// their bootstrap user (the clients' too); CAKey is the key of its
	// CAFile, the CA the command that boots the cluster made, with which
	// each broker issues itself a certificate. Neither is in run.json.
	Security security.Config `json:"-"`
	CAKey    string          `json:"-"`
}

// DefaultCluster is a one-broker cluster with Kafka's defaults
// (replica.lag.time.max.ms 30 s, broker.session.timeout.ms 9 s): gregor
// up's. A run shortens the timeouts (DefaultConfig).
func DefaultCluster() ClusterConfig {
	return ClusterConfig{Nodes: 1, MinISR: 1, Fsync: "never", ReplicaLagMax: 30 * time.Second,
		SessionTimeout: 9 * time.Second, AutoCreateTopics: true, TransactionVersion: cluster.DefaultTransactionVersion}
}

// Validate refuses a cluster that cannot boot or could never take an
// acks=all write; each message names the fix.
func (c *ClusterConfig) Validate() error {
	if c.Nodes < 1 || c.Nodes > runtime.MaxNodes {
		return fmt.Errorf("--nodes %d: give 1..%d", c.Nodes, runtime.MaxNodes)
	}
	if c.Controllers < 0 || c.Nodes+c.Controllers > runtime.MaxNodes {
		return fmt.Errorf("--controllers %d: give 0..%d", c.Controllers, runtime.MaxNodes-c.Nodes)
	}
	if c.Dedicated && c.Controllers < 1 {
		return errors.New("--dedicated-controllers with --controllers 0: there would be no voter; add --controllers 1 (or 3 to survive a controller fault)")
	}
	if c.MinISR < 1 {
		return fmt.Errorf("--min-isr %d: give at least 1", c.MinISR)
	}
	if c.MinISR > c.Nodes {
		return fmt.Errorf("--min-isr %d > --nodes %d: no topic could take acks=all writes; lower --min-isr", c.MinISR, c.Nodes)
	}
	if c.ReplicaLagMax < 0 || c.SessionTimeout < 0 {
		return fmt.Errorf("--replica-lag-max %v, --session-timeout %v: give positive durations", c.ReplicaLagMax, c.SessionTimeout)
	}
	if err := cluster.PlantBugs(&cluster.Config{}, c.Bugs); err != nil {
		return fmt.Errorf("--bug: %w", err)
	}
	if c.TransactionVersion != 0 {
		if err := cluster.CheckTransactionVersion(c.TransactionVersion); err != nil {
			return err
		}
	}
	return nil
}

// Spec is the runtime's view of the cluster: every node runs `gregor
// broker` from binary with c's flags. Nodes 1..Nodes are brokers, the rest
// controller-only voters.
func (c *ClusterConfig) Spec(name, binary string) runtime.ClusterSpec {
	args := []string{"--node-id", "{{.ID}}", "--listen", "{{.KafkaAddr}}", "--data", "{{.DataDir}}",
		"--min-isr", strconv.Itoa(c.MinISR)}
	if c.Fsync != "" {
		args = append(args, "--fsync", c.Fsync)
	}
	if c.ReplicaLagMax > 0 {
		args = append(args, "--replica-lag-max", c.ReplicaLagMax.String())
	}
	if c.Unclean {
		args = append(args, "--unclean")
	}
	if c.LazyFS {
		args = append(args, "--lazyfs")
	}
	if c.AutoCreateTopics {
		args = append(args, "--auto-create-topics")
	}
	for _, b := range c.Bugs {
		args = append(args, "--bug", b)
	}
	if c.SessionTimeout > 0 {
		args = append(args, "--session-timeout", c.SessionTimeout.String())
	}
	if c.TransactionVersion != 0 {
		args = append(args, "--transaction-version", strconv.Itoa(int(c.TransactionVersion)))
	}
	if c.Authorizer {
		args = append(args, "--authorizer")
		if len(c.SuperUsers) > 0 {
			args = append(args, "--super-users", strings.Join(c.SuperUsers, ";"))
		}
		if c.AllowEveryoneIfNoACL {
			args = append(args, "--allow-everyone-if-no-acl-found")
		}
	}
	if c.Nodes+c.Controllers > 1 {
		// Every node is a voter of the controller quorum (combined mode).
		args = append(args, "--voters", "{{.Peers}}", "--kafka-peers", "{{.KafkaPeers}}")
	}
	if c.Dedicated {
		var ids []string
		for i := c.Nodes + 1; i <= c.Nodes+c.Controllers; i++ {
			ids = append(ids, strconv.Itoa(i))
		}
		args = append(args, "--quorum", strings.Join(ids, ","))
	}
	args = append(args, "--default-rf", strconv.Itoa(min(3, c.Nodes)), "--metrics-listen", "{{.Host}}:9094")
	args = append(args, c.securityArgs()...)
	args = append(args, c.BrokerArgs...)
	spec := runtime.ClusterSpec{Name: name, KafkaPort: 9092, RaftPort: 9093, Binary: binary,
		Labels: map[string]string{}, Ready: runtime.KafkaReady(c.Nodes), ReadyTimeout: 30 * time.Second,
		Settings: runtime.BrokerSettings{MinISR: c.MinISR, Unclean: c.Unclean, ReplicaLagMax: c.ReplicaLagMax,
			SessionTimeout: c.SessionTimeout, DefaultRF: min(3, c.Nodes), Bugs: c.Bugs, Dedicated: c.Dedicated,
			Security: runtime.SecuritySettings{Protocol: c.Security.Protocol, Mechanism: c.Security.Mechanism, User: c.Security.User,
				Authorizer: c.Authorizer, SuperUsers: c.SuperUsers, AllowEveryoneIfNoACL: c.AllowEveryoneIfNoACL}},
		Files: c.nodeFiles()}
	for i := 1; i <= c.Nodes+c.Controllers; i++ {
		a := args
		if i > c.Nodes {
			a = append(append([]string(nil), args...), "--controller-only")
		}
		spec.Nodes = append(spec.Nodes, runtime.NodeSpec{ID: int32(i), Args: a, ControllerOnly: i > c.Nodes})
	}
	return spec
}

// securityArgs make every broker's listener the cluster's protocol, with
// the bootstrap user as inter-broker credential and a certificate each
// broker issues itself from the cluster's CA. The password stays in its
// file: it is never an argument. The files are named once (nodeFiles):
// each runtime places them where its brokers run ({{.Files.NAME}}).
func (c *ClusterConfig) securityArgs() []string {
	s := c.Security
	if !s.Secured() {
		return nil
	}
	args := []string{"--listen", s.Protocol + "://{{.KafkaAddr}}"}
	if s.SASL() {
		args = append(args, "--sasl-mechanism", s.Mechanism, "--sasl-user", s.User, "--sasl-password-file", "{{.Files."+FilePassword+"}}")
	}
	if s.TLS() {
		args = append(args, "--tls-ca", "{{.Files."+FileCA+"}}", "--tls-ca-key", "{{.Files."+FileCAKey+"}}")
	}
	return args
}

// The names of the files a secured cluster's brokers read.
const (
	FilePassword = "saslpassword" // the bootstrap user's password file
	FileCA       = "tlsca"        // the cluster's CA certificate
	FileCAKey    = "tlscakey"     // its key: each broker issues its own certificate
)

// nodeFiles are the host files securityArgs name.
func (c *ClusterConfig) nodeFiles() []runtime.File {
	s := c.Security
	var out []runtime.File
	if !s.Secured() {
		return nil
	}
	if s.SASL() {
		out = append(out, runtime.File{Name: FilePassword, Path: s.PasswordFile})
	}
	if s.TLS() {
		out = append(out, runtime.File{Name: FileCA, Path: s.CAFile}, runtime.File{Name: FileCAKey, Path: c.CAKey})
	}
	return out
}
