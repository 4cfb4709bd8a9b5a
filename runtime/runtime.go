// Package runtime is the seam between the harness and whatever runs the
// brokers: containers (runtime/docker) or local processes (runtime/process).
// It names no Docker type so that every runtime can implement it.
package runtime

import (
	"context"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"time"
)

// NodeSpec describes one broker. Args are the flags after `gregor broker`;
// they are expanded as text/template with Vars (see expand.go), so a node can
// be given its own address and the peer list: {{.ID}} {{.Host}} {{.Peers}}
// {{.KafkaAddr}} {{.RaftAddr}} {{.KafkaPort}} {{.RaftPort}} {{.DataDir}}.
type NodeSpec struct {
	ID   int32
	Args []string
	Env  map[string]string
	// ControllerOnly: the node is a controller-only quorum voter (KRaft
	// process.roles=controller), not a broker clients are seeded with.
	ControllerOnly bool
}

// ClusterSpec is everything a runtime needs to boot a cluster.
type ClusterSpec struct {
	// Name is the cluster's name; it must be a DNS label (letters, digits, '-')
	// because runtimes use it in object names and labels.
	Name string
	// Nodes: IDs are unique and positive. Invariant (checked by Validate):
	// 1 <= len(Nodes) <= MaxNodes.
	Nodes []NodeSpec
	// KafkaPort and RaftPort are the ports every node listens on. A runtime that
	// shares one host (process) may offset them per node; NodeInfo tells.
	KafkaPort, RaftPort int
	// Binary is the path to a static (CGO_ENABLED=0) gregor binary.
	Binary string
	// Labels are added to every object the runtime creates.
	Labels map[string]string
	// Ready, if set, is polled by Start after every node runs, until it returns
	// nil or ReadyTimeout passes. The harness passes one that checks that every
	// partition has a leader.
	Ready func(ctx context.Context, c Cluster) error
	// ReadyTimeout bounds the wait for Ready; zero means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// Settings are the brokers' settings, for runtimes whose nodes do not
	// take `gregor broker`'s Args (runtime/image renders them into an
	// image's own configuration).
	Settings BrokerSettings
	// Files are host files every node reads (a CA, its key, a password
	// file): each runtime makes them readable where its nodes run, and a
	// node's Args name where as {{.Files.NAME}} (FilePaths).
	Files []File
}

// File is a host file the nodes read, named once: Name is what Args (and
// an image spec's templates) call it; Path is where it is on this host.
// A runtime whose nodes share the host reads it there; one whose nodes
// run elsewhere (runtime/docker) copies it to FilesDir/Name in each node
// before it starts, so a secret is never an argument nor in an image.
type File struct {
	Name, Path string
}

// FilePaths is where the nodes see files: under dir, or with dir empty
// at their host paths (the nodes share the host).
func FilePaths(files []File, dir string) map[string]string {
	out := make(map[string]string, len(files))
	for _, f := range files {
		if dir == "" {
			out[f.Name] = f.Path
		} else {
			out[f.Name] = path.Join(dir, f.Name)
		}
	}
	return out
}

// BrokerSettings are the cluster settings an image spec may name.
type BrokerSettings struct {
	MinISR                        int
	Unclean                       bool
	ReplicaLagMax, SessionTimeout time.Duration
	// DefaultRF is the replication factor of internal and auto-created topics.
	DefaultRF int
	// Bugs are gregor's planted bug switches (gregor's own image only).
	Bugs []string
	// Dedicated: only the controller-only nodes vote in the controller
	// quorum; otherwise every node does (KRaft combined mode).
	Dedicated bool
	// Security is the listener's protocol and the brokers' own SASL user
	// (never the password: that is a File).
	Security SecuritySettings
}

// SecuritySettings are a secured cluster's, as an image spec may name
// them; the zero value is PLAINTEXT.
type SecuritySettings struct {
	Protocol, Mechanism, User string
	// The brokers' authorizer (`gregor broker --authorizer`), its
	// super.users and allow.everyone.if.no.acl.found.
	Authorizer           bool
	SuperUsers           []string
	AllowEveryoneIfNoACL bool
}

// Secured is a listener other than PLAINTEXT.
func (s SecuritySettings) Secured() bool { return s.Protocol != "" && s.Protocol != "PLAINTEXT" }

// MaxNodes bounds a cluster: every fault is a loop over the nodes.
const MaxNodes = 64

// DefaultReadyTimeout is the wait for ClusterSpec.Ready when none is given.
const DefaultReadyTimeout = 30 * time.Second

// NodeInfo is where the harness finds a node.
type NodeInfo struct {
	ID        int32
	Host      string // the IP the harness dials
	KafkaAddr string // host:port of the Kafka listener
	RaftAddr  string // host:port of the raft (controller quorum) listener
	// ControllerOnly is NodeSpec.ControllerOnly: no Kafka clients go to it.
	ControllerOnly bool
}

// NodeState is what Status reports.
type NodeState int

const (
	StateUnknown NodeState = iota
	StateRunning
	StatePaused
	StateStopped // exited: killed, stopped, or crashed
)

func (s NodeState) String() string {
	switch s {
	case StateRunning:
		return "running"
	case StatePaused:
		return "paused"
	case StateStopped:
		return "stopped"
	}
	return "unknown"
}

// Cluster is a running cluster. Every method is safe for concurrent use.
// Node arguments are node IDs; an unknown ID is an error.
type Cluster interface {
	Name() string
	Nodes() []NodeInfo
	// Bootstrap is the Kafka listener of every node, for client seeds.
	Bootstrap() []string

	// Kill sends SIGKILL; the node's data stays for Start.
	Kill(ctx context.Context, id int32) error
	// Stop sends SIGTERM, then SIGKILL after grace.
	Stop(ctx context.Context, id int32, grace time.Duration) error
	// Start restarts a killed or stopped node with its data; the network
	// faults in force (Partition, Slow) are applied to it again.
	Start(ctx context.Context, id int32) error
	// Pause freezes every process of the node (SIGSTOP / cgroup freezer).
	Pause(ctx context.Context, id int32) error
	Resume(ctx context.Context, id int32) error

	// Partition drops traffic, both directions, between every two listed
	// nodes that no group holds together. With disjoint groups that is "drop
	// between groups"; overlapping groups give the other shapes: a bridge is
	// {{1,2,3},{3,4,5}}, a majorities ring on 5 nodes is its edges
	// {{1,2},{2,3},{3,4},{4,5},{5,1}}. Nodes not listed are left alone.
	// Partitions accumulate until Heal.
	Partition(ctx context.Context, groups [][]int32) error
	// Heal removes every network fault: partitions and slow links.
	Heal(ctx context.Context) error
	// Slow adds delay (+- jitter) and loss (percent, 0..100) to the node's links.
	Slow(ctx context.Context, id int32, delay, jitter time.Duration, lossPct float64) error
	Unslow(ctx context.Context, id int32) error

	// Logs returns the node's output (stdout and stderr) so far.
	Logs(ctx context.Context, id int32) (io.ReadCloser, error)
	Status(ctx context.Context, id int32) (NodeState, error)
	// Capabilities says which faults are real and which emulated, for reports.
	Capabilities() Capabilities
	// Close removes everything the cluster created. It is idempotent.
	Close(ctx context.Context) error
}

// Runtime boots clusters.
type Runtime interface {
	Name() string
	// Available returns nil if the runtime can start clusters here, else an
	// error that names the fix.
	Available(ctx context.Context) error
	Start(ctx context.Context, spec ClusterSpec) (Cluster, error)
}

// Validate checks what every runtime relies on, before anything boots.
func (s ClusterSpec) Validate() error {
	if !isDNSLabel(s.Name) {
		return fmt.Errorf("cluster name %q: use 1-40 letters, digits or '-', not starting with '-'", s.Name)
	}
	if len(s.Nodes) == 0 || len(s.Nodes) > MaxNodes {
		return fmt.Errorf("cluster %s: %d nodes; use 1 to %d", s.Name, len(s.Nodes), MaxNodes)
	}
	seen := make(map[int32]bool, len(s.Nodes))
	for _, n := range s.Nodes {
		if n.ID <= 0 {
			return fmt.Errorf("node id %d: ids must be positive", n.ID)
		}
		if seen[n.ID] {
			return fmt.Errorf("node id %d appears twice", n.ID)
		}
		seen[n.ID] = true
	}
	if s.KafkaPort <= 0 || s.KafkaPort > 65535 || s.RaftPort <= 0 || s.RaftPort > 65535 {
		return fmt.Errorf("ports kafka=%d raft=%d: each must be in 1..65535", s.KafkaPort, s.RaftPort)
	}
	if s.KafkaPort == s.RaftPort {
		return fmt.Errorf("kafka and raft ports are both %d: give them different ports", s.KafkaPort)
	}
	if s.Binary == "" {
		return fmt.Errorf("no gregor binary given: build one with `make build` (CGO_ENABLED=0)")
	}
	named := map[string]bool{}
	for _, f := range s.Files {
		if !isIdent(f.Name) || named[f.Name] {
			return fmt.Errorf("node file %q: give each file a distinct name of letters and digits (Args name it {{.Files.NAME}})", f.Name)
		}
		named[f.Name] = true
		if !filepath.IsAbs(f.Path) {
			return fmt.Errorf("node file %s: path %q is not absolute: give an absolute path", f.Name, f.Path)
		}
	}
	return nil
}

func isIdent(s string) bool {
	for i, r := range s {
		ok := (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return s != ""
}

func isDNSLabel(s string) bool {
	if len(s) == 0 || len(s) > 40 || s[0] == '-' {
		return false
	}
	for _, r := range s {
		ok := r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return true
}
