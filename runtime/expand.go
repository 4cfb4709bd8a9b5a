package runtime

import (
	"bytes"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"text/template"
)

// Vars are the values a node's Args may name as {{.Field}}.
type Vars struct {
	ID        int32
	Host      string // the node's own IP
	KafkaPort int
	RaftPort  int
	KafkaAddr string // Host:KafkaPort
	RaftAddr  string // Host:RaftPort
	DataDir   string
	// Peers is every node of the cluster (itself included), sorted by ID, as
	// KRaft's controller.quorum.voters spells it: "1@10.0.0.2:9093,2@...".
	Peers string
	// KafkaPeers is the same list with Kafka listeners: "1@10.0.0.2:9092,...".
	KafkaPeers string
	// Files are where the node sees ClusterSpec.Files, by name
	// ({{.Files.tlsca}}): FilePaths.
	Files map[string]string
}

// PeerList renders nodes as "id@addr,..." sorted by ID, with addr chosen by pick.
func PeerList(nodes []NodeInfo, pick func(NodeInfo) string) string {
	sorted := append([]NodeInfo(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	parts := make([]string, len(sorted))
	for i, n := range sorted {
		parts[i] = strconv.Itoa(int(n.ID)) + "@" + pick(n)
	}
	return strings.Join(parts, ",")
}

// VarsFor builds the Vars of node self from the cluster's node list; the
// caller sets Files where its nodes see them.
func VarsFor(self NodeInfo, all []NodeInfo, dataDir string) Vars {
	_, kp, _ := net.SplitHostPort(self.KafkaAddr)
	_, rp, _ := net.SplitHostPort(self.RaftAddr)
	kport, _ := strconv.Atoi(kp)
	rport, _ := strconv.Atoi(rp)
	return Vars{
		ID: self.ID, Host: self.Host,
		KafkaPort: kport, RaftPort: rport,
		KafkaAddr: self.KafkaAddr, RaftAddr: self.RaftAddr,
		DataDir:    dataDir,
		Peers:      PeerList(all, func(n NodeInfo) string { return n.RaftAddr }),
		KafkaPeers: PeerList(all, func(n NodeInfo) string { return n.KafkaAddr }),
	}
}

// ExpandArgs expands every arg as a template over v. An unknown field is an
// error, so a typo fails before anything boots instead of reaching a broker.
func ExpandArgs(args []string, v Vars) ([]string, error) {
	out := make([]string, len(args))
	for i, a := range args {
		if !strings.Contains(a, "{{") {
			out[i] = a
			continue
		}
		t, err := template.New("arg").Option("missingkey=error").Parse(a)
		if err != nil {
			return nil, fmt.Errorf("arg %q: %w", a, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, v); err != nil {
			return nil, fmt.Errorf("arg %q: %w", a, err)
		}
		out[i] = b.String()
	}
	return out, nil
}
