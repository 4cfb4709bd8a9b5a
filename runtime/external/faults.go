package external

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"gregor/history"
	"gregor/internal/strictyaml"
)

// Verb is a fault command's name in a fault file.
type Verb string

// The verbs a fault file may give a command for. Kill, stop and pause end
// with start, start and resume; isolate (cut the node off from {{.Peers}})
// ends with heal, slow with unslow.
const (
	VerbKill    Verb = "kill"
	VerbStart   Verb = "start"
	VerbStop    Verb = "stop"
	VerbPause   Verb = "pause"
	VerbResume  Verb = "resume"
	VerbIsolate Verb = "isolate"
	VerbHeal    Verb = "heal"
	VerbSlow    Verb = "slow"
	VerbUnslow  Verb = "unslow"
)

// Verbs lists every verb, in the order a fault file documents them.
var Verbs = []Verb{VerbKill, VerbStart, VerbStop, VerbPause, VerbResume, VerbIsolate, VerbHeal, VerbSlow, VerbUnslow}

// Commands are one node's fault commands: shell command lines (run with
// sh -c) written as Go templates over Vars.
type Commands struct {
	Kill    string `yaml:"kill,omitempty"`
	Start   string `yaml:"start,omitempty"`
	Stop    string `yaml:"stop,omitempty"`
	Pause   string `yaml:"pause,omitempty"`
	Resume  string `yaml:"resume,omitempty"`
	Isolate string `yaml:"isolate,omitempty"`
	Heal    string `yaml:"heal,omitempty"`
	Slow    string `yaml:"slow,omitempty"`
	Unslow  string `yaml:"unslow,omitempty"`
}

func (c *Commands) field(v Verb) *string {
	switch v {
	case VerbKill:
		return &c.Kill
	case VerbStart:
		return &c.Start
	case VerbStop:
		return &c.Stop
	case VerbPause:
		return &c.Pause
	case VerbResume:
		return &c.Resume
	case VerbIsolate:
		return &c.Isolate
	case VerbHeal:
		return &c.Heal
	case VerbSlow:
		return &c.Slow
	case VerbUnslow:
		return &c.Unslow
	}
	panic("unknown verb " + string(v))
}

// Get is v's command line template ("" when none).
func (c Commands) Get(v Verb) string { return *c.field(v) }

// Vars are what a fault command may name as {{.Field}}.
type Vars struct {
	NodeID    int32
	Host      string // the broker's host, as Metadata advertises it
	KafkaAddr string // host:port
	// Peers are the node ids an isolate cuts the node off from,
	// comma-separated ("2,3"); PeerHosts their hosts, likewise.
	Peers     string
	PeerHosts string
	// DelayMs, JitterMs and LossPct are a slow fault's impairment; GraceSeconds
	// is a stop's grace period before a kill.
	DelayMs, JitterMs int
	LossPct           float64
	GraceSeconds      int
}

// FaultFile is --faults: how each fault is made on each node of a cluster
// gregor did not boot.
type FaultFile struct {
	// Path is where it was read from, for messages.
	Path string `yaml:"-"`
	// Timeout bounds each command (default DefaultTimeout).
	Timeout time.Duration `yaml:"timeout"`
	// Commands apply to every node; Nodes override them per node id, and a
	// node named there must be a broker of the cluster.
	Commands Commands           `yaml:"commands"`
	Nodes    map[int32]Commands `yaml:"nodes"`
}

// DefaultTimeout bounds a fault command when the file gives none.
const DefaultTimeout = 30 * time.Second

// MaxTimeout bounds the timeout a file may give: a command is a step of the
// schedule, and the run waits for it.
const MaxTimeout = 5 * time.Minute

// LoadFaults reads and checks a fault file: known verbs only, every
// template rendering. Whether its nodes exist is checked against the
// cluster (CheckNodes).
func LoadFaults(path string) (*FaultFile, error) {
	f := &FaultFile{Path: path}
	if err := strictyaml.Load(path, f); err != nil {
		return nil, fmt.Errorf("--faults: %w (verbs: %s)", err, verbList())
	}
	if f.Timeout == 0 {
		f.Timeout = DefaultTimeout
	}
	if f.Timeout < 0 || f.Timeout > MaxTimeout {
		return nil, fmt.Errorf("--faults %s: timeout %v: give 1s to %v", path, f.Timeout, MaxTimeout)
	}
	check := func(where string, c Commands) error {
		for _, v := range Verbs {
			if t := c.Get(v); t != "" {
				if _, err := render(t, sampleVars); err != nil {
					return fmt.Errorf("--faults %s: %s.%s: %w", path, where, v, err)
				}
			}
		}
		return nil
	}
	if err := check("commands", f.Commands); err != nil {
		return nil, err
	}
	for _, id := range f.nodeIDs() {
		if id <= 0 {
			return nil, fmt.Errorf("--faults %s: nodes.%d: node ids are the brokers' node.id, positive", path, id)
		}
		if err := check("nodes."+strconv.Itoa(int(id)), f.Nodes[id]); err != nil {
			return nil, err
		}
	}
	return f, nil
}

var sampleVars = Vars{NodeID: 1, Host: "h", KafkaAddr: "h:9092", Peers: "2,3", PeerHosts: "h2,h3", DelayMs: 1, LossPct: 1, GraceSeconds: 1}

func verbList() string {
	s := make([]string, len(Verbs))
	for i, v := range Verbs {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

func (f *FaultFile) nodeIDs() []int32 {
	var ids []int32
	for id := range f.Nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Command is node id's command template for v: its own, else the file's
// default; "" when neither gives one.
func (f *FaultFile) Command(id int32, v Verb) string {
	if c, ok := f.Nodes[id]; ok {
		if t := c.Get(v); t != "" {
			return t
		}
	}
	return f.Commands.Get(v)
}

// CheckNodes refuses a file naming a node the cluster does not have.
func (f *FaultFile) CheckNodes(brokers []int32) error {
	for _, id := range f.nodeIDs() {
		if !slices.Contains(brokers, id) {
			return fmt.Errorf("--faults %s: nodes.%d: the cluster has no broker %d (its brokers: %s); fix the node ids or --bootstrap", f.Path, id, id, idList(brokers))
		}
	}
	return nil
}

// kindVerbs are the commands each nemesis kind needs on every node it may
// hit. Kinds missing here act on clients or through the Kafka protocol
// (client-crash, consumer-restart, consumer-join, reassign, and the client
// link faults, which the harness makes on every runtime) and need none.
var kindVerbs = map[string][]Verb{
	history.NemesisKill:         {VerbKill, VerbStart},
	history.NemesisStop:         {VerbStop, VerbStart},
	history.NemesisPause:        {VerbPause, VerbResume},
	history.NemesisPartition:    {VerbIsolate, VerbHeal},
	history.NemesisSlow:         {VerbSlow, VerbUnslow},
	history.NemesisStrandLeader: {VerbIsolate, VerbHeal, VerbKill, VerbStart},
	history.NemesisKIP101:       {VerbSlow, VerbIsolate, VerbHeal, VerbKill, VerbStart},
	history.NemesisRestartStorm: {VerbKill, VerbStart},
	// A power loss is a kill on a lazyfs cluster, which only gregor's own
	// brokers model.
	history.NemesisPowerLoss: nil,
}

// CheckKinds refuses nemesis kinds the file cannot make on every broker.
func (f *FaultFile) CheckKinds(kinds []string, brokers []int32) error {
	for _, k := range kinds {
		if k == history.NemesisPowerLoss {
			return fmt.Errorf("--nemesis power-loss: an external cluster's page cache is not gregor's to drop; use kill")
		}
		for _, v := range kindVerbs[k] {
			var missing []int32
			for _, id := range brokers {
				if f.Command(id, v) == "" {
					missing = append(missing, id)
				}
			}
			if len(missing) > 0 && f.Path == NoFaultFile {
				return fmt.Errorf("--nemesis %s on --runtime external needs fault commands: give --faults FILE with a %q command (and the others it needs: %s)", k, v, verbNames(kindVerbs[k]))
			}
			if len(missing) > 0 {
				return fmt.Errorf("--faults %s: --nemesis %s needs a %q command for every broker; none for node(s) %s: add commands.%s (or nodes.N.%s)",
					f.Path, k, v, idList(missing), v, v)
			}
		}
	}
	return nil
}

// NoFaultFile is the Path of the empty fault file a run without --faults has.
const NoFaultFile = "(none)"

func verbNames(vs []Verb) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

func idList(ids []int32) string {
	s := make([]string, len(ids))
	sorted := append([]int32(nil), ids...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	for i, id := range sorted {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// render expands a command template; an unknown field is an error.
func render(t string, v Vars) (string, error) {
	tp, err := template.New("cmd").Option("missingkey=error").Parse(t)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := tp.Execute(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}
