// Package image is the runtime for any Kafka-protocol container image:
// an image spec (YAML, --image-spec) says which image, how each node's
// command and environment are rendered from its place in the cluster
// ({{.NodeID}}, {{.Voters}}, {{.Bootstrap}}, {{.DataDir}}, its listener host
// and ports, the run's broker settings), where its data volume is mounted,
// when it is ready (a log line, then the Kafka readiness probe every runtime
// uses), and whether it can run controller-only nodes. The containers run
// on the docker runtime's machinery (runtime/docker, Options.Foreign): kill,
// stop and pause are container operations, partitions and slow links the
// same `gregor nsfault` helper, run in the node's network namespace.
package image

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"gregor/internal/strictyaml"
	"gregor/runtime"
	"gregor/runtime/docker"
)

// Spec is an image spec file.
type Spec struct {
	// Path is where it was read from, for messages.
	Path string `yaml:"-"`
	// Image is the node image, a template: {{.GregorImage}} is gregor's own
	// image, built from the running binary.
	Image string `yaml:"image"`
	// Entrypoint and Command replace the image's; each element is a
	// template, and one that renders empty is left out.
	Entrypoint []string `yaml:"entrypoint"`
	Command    []string `yaml:"command"`
	// Env is each node's environment; values are templates.
	Env  map[string]string `yaml:"env"`
	User string            `yaml:"user"`
	// DataDir is where each node's data volume is mounted ({{.DataDir}}).
	DataDir string `yaml:"data_dir"`
	// KafkaPort and ControllerPort are every node's listener ports.
	KafkaPort      int `yaml:"kafka_port"`
	ControllerPort int `yaml:"controller_port"`
	Ready          struct {
		// Log is a regular expression a line of every node's log matches
		// once it is up; the Kafka probe (every broker answers Metadata,
		// every partition has a leader) follows either way.
		Log string `yaml:"log"`
		// Timeout bounds the wait (default 120s: a JVM starts slower than
		// gregor).
		Timeout time.Duration `yaml:"timeout"`
	} `yaml:"ready"`
	// ControllerOnly says the image can run controller-only nodes
	// (--controllers N); Roles in the templates says which a node is.
	ControllerOnly bool `yaml:"controller_only"`
	// Security says the templates render a secured cluster's settings
	// (.SecurityProtocol, .SASLMechanism, .SASLUser, .Files, .Authorizer,
	// .SuperUsers, .AllowEveryoneIfNoACL): without it a secured cluster or
	// the brokers' authorizer is refused, not booted open.
	Security bool `yaml:"security"`

	readyLog *regexp.Regexp
}

// Vars are what a spec's templates may name.
type Vars struct {
	NodeID         int32
	Host           string // the node's IP on the cluster's network
	KafkaPort      int
	ControllerPort int
	KafkaAddr      string // Host:KafkaPort
	ControllerAddr string // Host:ControllerPort
	DataDir        string
	// ControllerOnly: a controller-only node; Voter: a controller quorum
	// voter; Roles is KRaft's process.roles for the node: "broker",
	// "controller" or "broker,controller".
	ControllerOnly bool
	Voter          bool
	Roles          string
	// Voters is KRaft's controller.quorum.voters: "1@10.0.0.10:9093,...";
	// VoterIDs their ids, "1,2,3"; VoterBootstrap their controller
	// listeners, "10.0.0.10:9093,..." (controller.quorum.bootstrap.servers).
	Voters, VoterIDs, VoterBootstrap string
	// Bootstrap is the brokers' Kafka listeners, "10.0.0.10:9092,...".
	Bootstrap string
	// Peers and KafkaPeers are every node as id@host:controllerport and
	// id@host:kafkaport (gregor's --voters and --kafka-peers).
	Peers, KafkaPeers string
	// Seeds is every node's host, comma-separated (Redpanda's seeds).
	Seeds string
	// Nodes are the cluster's nodes, for templates that range over them.
	Nodes []runtime.NodeInfo
	// ClusterID is a fresh KRaft cluster id (22 characters, base64url).
	ClusterID string
	// The run's broker settings.
	MinISR                            int
	Unclean                           bool
	ReplicaLagMaxMs, SessionTimeoutMs int64
	DefaultRF                         int
	Bugs                              []string
	Dedicated                         bool
	GregorImage                       string
	// A secured cluster's listener protocol (empty: PLAINTEXT), the
	// brokers' own SASL user and mechanism, and where each node holds the
	// files they read (runtime.ClusterSpec.Files, by name: saslpassword,
	// tlsca, tlscakey; `index .Files "tlsca"` renders empty without one).
	SecurityProtocol, SASLMechanism, SASLUser string
	Files                                     map[string]string
	// The brokers' authorizer: on, its super.users ("User:a;User:b"),
	// allow.everyone.if.no.acl.found.
	Authorizer           bool
	SuperUsers           string
	AllowEveryoneIfNoACL bool
}

// DefaultReadyTimeout bounds the readiness wait when the spec gives none.
const DefaultReadyTimeout = 120 * time.Second

// Load reads and checks an image spec: an image named, every template
// rendering; each refusal names the field.
func Load(path string) (*Spec, error) {
	s := &Spec{Path: path}
	if err := strictyaml.Load(path, s); err != nil {
		return nil, fmt.Errorf("--image-spec: %w", err)
	}
	if strings.TrimSpace(s.Image) == "" {
		return nil, fmt.Errorf("--image-spec %s: image: give the node image (e.g. apache/kafka:3.9.0, or {{.GregorImage}} for gregor's own)", path)
	}
	if s.KafkaPort == 0 {
		s.KafkaPort = 9092
	}
	if s.ControllerPort == 0 {
		s.ControllerPort = 9093
	}
	if s.KafkaPort < 1 || s.KafkaPort > 65535 || s.ControllerPort < 1 || s.ControllerPort > 65535 || s.KafkaPort == s.ControllerPort {
		return nil, fmt.Errorf("--image-spec %s: kafka_port %d, controller_port %d: give two different ports in 1..65535", path, s.KafkaPort, s.ControllerPort)
	}
	if s.DataDir == "" {
		s.DataDir = "/data"
	}
	if s.Ready.Timeout == 0 {
		s.Ready.Timeout = DefaultReadyTimeout
	}
	if s.Ready.Log != "" {
		var err error
		if s.readyLog, err = regexp.Compile(s.Ready.Log); err != nil {
			return nil, fmt.Errorf("--image-spec %s: ready.log: %w", path, err)
		}
	}
	// Every template must render for a node of a sample cluster.
	all := sampleNodes()
	if _, err := s.render(all[0], all, runtime.BrokerSettings{MinISR: 2, DefaultRF: 3, Bugs: []string{"b"}}, nil, "cid", "gregor:x"); err != nil {
		return nil, err
	}
	if s.Security {
		// And for a secured one, with every file.
		sec := runtime.BrokerSettings{MinISR: 2, DefaultRF: 3, Security: runtime.SecuritySettings{Protocol: "SASL_SSL",
			Mechanism: "SCRAM-SHA-512", User: "admin", Authorizer: true, SuperUsers: []string{"User:a"}}}
		files := map[string]string{"saslpassword": "/f/p", "tlsca": "/f/ca", "tlscakey": "/f/cakey"}
		if _, err := s.render(all[0], all, sec, files, "cid", "gregor:x"); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func sampleNodes() []runtime.NodeInfo {
	var out []runtime.NodeInfo
	for i := int32(1); i <= 3; i++ {
		h := "10.0.0." + strconv.Itoa(int(i))
		out = append(out, runtime.NodeInfo{ID: i, Host: h, KafkaAddr: h + ":9092", RaftAddr: h + ":9093"})
	}
	return out
}

// rendered is one node's container, and the image.
type rendered struct {
	image string
	node  docker.ForeignNode
}

// vars are node self's template values.
func (s *Spec) vars(self runtime.NodeInfo, all []runtime.NodeInfo, set runtime.BrokerSettings, files map[string]string, clusterID, gregorImage string) Vars {
	sorted := append([]runtime.NodeInfo(nil), all...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	voter := func(n runtime.NodeInfo) bool { return !set.Dedicated || n.ControllerOnly }
	var voters, voterIDs, voterBS, bootstrap, seeds []string
	for _, n := range sorted {
		if voter(n) {
			voters = append(voters, fmt.Sprintf("%d@%s", n.ID, n.RaftAddr))
			voterIDs = append(voterIDs, strconv.Itoa(int(n.ID)))
			voterBS = append(voterBS, n.RaftAddr)
		}
		if !n.ControllerOnly {
			bootstrap = append(bootstrap, n.KafkaAddr)
		}
		seeds = append(seeds, n.Host)
	}
	v := Vars{NodeID: self.ID, Host: self.Host, KafkaPort: s.KafkaPort, ControllerPort: s.ControllerPort,
		KafkaAddr: self.KafkaAddr, ControllerAddr: self.RaftAddr, DataDir: s.DataDir,
		ControllerOnly: self.ControllerOnly, Voter: voter(self),
		Voters: strings.Join(voters, ","), VoterIDs: strings.Join(voterIDs, ","), VoterBootstrap: strings.Join(voterBS, ","),
		Bootstrap:  strings.Join(bootstrap, ","),
		Peers:      runtime.PeerList(sorted, func(n runtime.NodeInfo) string { return n.RaftAddr }),
		KafkaPeers: runtime.PeerList(sorted, func(n runtime.NodeInfo) string { return n.KafkaAddr }),
		Seeds:      strings.Join(seeds, ","), Nodes: sorted, ClusterID: clusterID,
		MinISR: set.MinISR, Unclean: set.Unclean, ReplicaLagMaxMs: set.ReplicaLagMax.Milliseconds(),
		SessionTimeoutMs: set.SessionTimeout.Milliseconds(), DefaultRF: set.DefaultRF, Bugs: set.Bugs,
		Dedicated: set.Dedicated, GregorImage: gregorImage,
		SASLMechanism: set.Security.Mechanism, SASLUser: set.Security.User, Files: files,
		Authorizer: set.Security.Authorizer, SuperUsers: strings.Join(set.Security.SuperUsers, ";"),
		AllowEveryoneIfNoACL: set.Security.AllowEveryoneIfNoACL}
	if set.Security.Secured() {
		v.SecurityProtocol = set.Security.Protocol
	}
	switch {
	case self.ControllerOnly:
		v.Roles = "controller"
	case v.Voter:
		v.Roles = "broker,controller"
	default:
		v.Roles = "broker"
	}
	return v
}

var funcs = template.FuncMap{"join": strings.Join}

func expand(field, t string, v Vars) (string, error) {
	tp, err := template.New(field).Funcs(funcs).Option("missingkey=error").Parse(t)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := tp.Execute(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

// render renders node self's container; an error names the field.
func (s *Spec) render(self runtime.NodeInfo, all []runtime.NodeInfo, set runtime.BrokerSettings, files map[string]string, clusterID, gregorImage string) (rendered, error) {
	v := s.vars(self, all, set, files, clusterID, gregorImage)
	fail := func(field string, err error) (rendered, error) {
		return rendered{}, fmt.Errorf("--image-spec %s: %s does not render: %w", s.Path, field, err)
	}
	var r rendered
	var err error
	if r.image, err = expand("image", s.Image, v); err != nil {
		return fail("image", err)
	}
	list := func(name string, ts []string) ([]string, error) {
		if ts == nil {
			return nil, nil
		}
		out := []string{}
		for i, t := range ts {
			a, err := expand(name, t, v)
			if err != nil {
				return nil, fmt.Errorf("--image-spec %s: %s[%d] does not render: %w", s.Path, name, i, err)
			}
			if a != "" {
				out = append(out, a)
			}
		}
		return out, nil
	}
	if r.node.Entrypoint, err = list("entrypoint", s.Entrypoint); err != nil {
		return rendered{}, err
	}
	if r.node.Cmd, err = list("command", s.Command); err != nil {
		return rendered{}, err
	}
	r.node.Env = map[string]string{}
	for k, t := range s.Env {
		if r.node.Env[k], err = expand("env."+k, t, v); err != nil {
			return fail("env."+k, err)
		}
	}
	r.node.User = s.User
	return r, nil
}

func newClusterID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Runtime runs clusters of an image spec's image.
type Runtime struct {
	spec *Spec
	log  io.Writer
}

var _ runtime.Runtime = (*Runtime)(nil)

// New returns the runtime for spec; log receives progress lines.
func New(spec *Spec, log io.Writer) *Runtime {
	if log == nil {
		log = io.Discard
	}
	return &Runtime{spec: spec, log: log}
}

// Name implements runtime.Runtime.
func (*Runtime) Name() string { return "image" }

// ForeignBrokers implements runtime.ForeignBrokers: the image's brokers take
// their settings from the spec's templates, so the run reads them back.
func (*Runtime) ForeignBrokers() bool { return true }

// Available implements runtime.Runtime: a Docker engine answers.
func (r *Runtime) Available(ctx context.Context) error {
	return docker.New(docker.Options{}).Available(ctx)
}

// Start implements runtime.Runtime: the spec's image, one container per
// node of cs (cs's node arguments are gregor's and are not used; its
// Settings are rendered into the templates).
func (r *Runtime) Start(ctx context.Context, cs runtime.ClusterSpec) (runtime.Cluster, error) {
	s := r.spec
	if sec := cs.Settings.Security; !s.Security && (sec.Secured() || sec.Authorizer) {
		return nil, fmt.Errorf("--image-spec %s renders no security settings (security: false): a %s cluster (authorizer %v) would boot open; give an image spec whose templates render them (security: true, as specs/gregor.yaml), or no security settings", s.Path, sec.Protocol, sec.Authorizer)
	}
	files := runtime.FilePaths(cs.Files, docker.FilesDir)
	for _, n := range cs.Nodes {
		if n.ControllerOnly && !s.ControllerOnly {
			return nil, fmt.Errorf("--controllers with --image-spec %s: the image runs no controller-only nodes (controller_only: false)", s.Path)
		}
	}
	cs.KafkaPort, cs.RaftPort = s.KafkaPort, s.ControllerPort
	if cs.ReadyTimeout < s.Ready.Timeout {
		cs.ReadyTimeout = s.Ready.Timeout
	}
	d := docker.New(docker.Options{Log: r.log})
	gregorImage, _, err := d.EnsureImage(ctx, cs.Binary)
	if err != nil {
		return nil, fmt.Errorf("gregor's image (the nsfault helper): %w", err)
	}
	clusterID := newClusterID()
	first := rendered{}
	all := sampleNodes()
	if first, err = s.render(all[0], all, cs.Settings, files, clusterID, gregorImage); err != nil {
		return nil, err
	}
	if first.image == "" {
		return nil, errors.New("--image-spec " + s.Path + ": image renders empty")
	}
	f := &docker.Foreign{Image: first.image, DataDir: s.DataDir, ReadyLog: s.readyLog,
		Node: func(self runtime.NodeInfo, nodes []runtime.NodeInfo) (docker.ForeignNode, error) {
			rd, err := s.render(self, nodes, cs.Settings, files, clusterID, gregorImage)
			return rd.node, err
		}}
	return docker.New(docker.Options{Log: r.log, Foreign: f}).Start(ctx, cs)
}
