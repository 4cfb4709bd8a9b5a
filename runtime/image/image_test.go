package image

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gregor/runtime"
	"gregor/runtime/docker"
)

func specFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A spec without an image, with a template that does not render, or with
// an unknown field is refused, naming the field.
func TestLoadRefusals(t *testing.T) {
	cases := []struct{ body, want string }{
		{"command: [x]\n", "image: give the node image"},
		{"image: k\nenv: {KAFKA_NODE_ID: '{{.NodeId}}'}\n", "env.KAFKA_NODE_ID does not render"},
		{"image: k\ncommand: [start, '--id={{.NodeID']\n", "command[1] does not render"},
		{"image: '{{.Nope}}'\n", "image does not render"},
		{"image: k\nimage_name: x\n", "field image_name not found"},
		{"image: k\nready: {log: '('}\n", "ready.log"},
		{"image: k\nkafka_port: 9093\n", "kafka_port 9093, controller_port 9093"},
	}
	for _, c := range cases {
		_, err := Load(specFile(t, c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--image-spec") {
			t.Errorf("%q: got %v, want an error naming --image-spec and %q", c.body, err, c.want)
		}
	}
}

// Every shipped spec loads, and renders what its image documents for a
// node: gregor's its broker flags (empty elements left out), Kafka's its
// KRaft settings in combined and dedicated modes.
func TestShippedSpecsRender(t *testing.T) {
	nodes := func(n, controllers int) []runtime.NodeInfo {
		var out []runtime.NodeInfo
		for i := 1; i <= n+controllers; i++ {
			h := "10.1.0." + string(rune('0'+i))
			out = append(out, runtime.NodeInfo{ID: int32(i), Host: h, KafkaAddr: h + ":9092", RaftAddr: h + ":9093", ControllerOnly: i > n})
		}
		return out
	}
	set := runtime.BrokerSettings{MinISR: 2, ReplicaLagMax: 3 * time.Second, SessionTimeout: 2 * time.Second, DefaultRF: 3}
	load := func(name string) *Spec {
		s, err := Load(filepath.Join("specs", name))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	g := load("gregor.yaml")
	all := nodes(3, 0)
	r, err := g.render(all[1], all, runtime.BrokerSettings{MinISR: 2, DefaultRF: 3, Bugs: []string{"ack-before-isr"}}, nil, "cid", "gregor:abc")
	if err != nil {
		t.Fatal(err)
	}
	cmd := strings.Join(r.node.Cmd, " ")
	if r.image != "gregor:abc" || !strings.Contains(cmd, "broker --node-id=2 --listen=10.1.0.2:9092 --data=/data --min-isr=2 --bug=ack-before-isr") ||
		!strings.Contains(cmd, "--voters=1@10.1.0.1:9093,2@10.1.0.2:9093,3@10.1.0.3:9093") || strings.Contains(cmd, "--unclean") ||
		strings.Contains(cmd, "--quorum") || slices.Contains(r.node.Cmd, "") {
		t.Fatalf("gregor node 2: image %s, command %q", r.image, r.node.Cmd)
	}

	k := load("kafka-kraft-combined.yaml")
	r, err = k.render(all[0], all, set, nil, "cid", "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"KAFKA_NODE_ID": "1", "KAFKA_PROCESS_ROLES": "broker,controller", "CLUSTER_ID": "cid",
		"KAFKA_CONTROLLER_QUORUM_VOTERS": "1@10.1.0.1:9093,2@10.1.0.2:9093,3@10.1.0.3:9093", "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://10.1.0.1:9092",
		"KAFKA_MIN_INSYNC_REPLICAS": "2", "KAFKA_UNCLEAN_LEADER_ELECTION_ENABLE": "false", "KAFKA_REPLICA_LAG_TIME_MAX_MS": "3000",
		"KAFKA_LOG_DIRS": "/var/lib/kafka/data"}
	for key, v := range want {
		if r.node.Env[key] != v {
			t.Errorf("kafka combined %s=%q, want %q", key, r.node.Env[key], v)
		}
	}

	kc := load("kafka-kraft-controllers.yaml")
	all = nodes(3, 3)
	ded := set
	ded.Dedicated = true
	for _, c := range []struct {
		node             int
		roles, listeners string
	}{{0, "broker", "PLAINTEXT://:9092"}, {4, "controller", "CONTROLLER://:9093"}} {
		r, err = kc.render(all[c.node], all, ded, nil, "cid", "")
		if err != nil {
			t.Fatal(err)
		}
		if r.node.Env["KAFKA_PROCESS_ROLES"] != c.roles || r.node.Env["KAFKA_LISTENERS"] != c.listeners ||
			r.node.Env["KAFKA_CONTROLLER_QUORUM_VOTERS"] != "4@10.1.0.4:9093,5@10.1.0.5:9093,6@10.1.0.6:9093" {
			t.Errorf("kafka dedicated node %d: %v", c.node+1, r.node.Env)
		}
	}

	rp := load("redpanda.yaml")
	all = nodes(3, 0)
	r, err = rp.render(all[2], all, set, nil, "cid", "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(r.node.Cmd, "--seeds=10.1.0.1:9093,10.1.0.2:9093,10.1.0.3:9093") || !slices.Contains(r.node.Cmd, "--node-id=3") {
		t.Fatalf("redpanda node 3: %q", r.node.Cmd)
	}
}

// Controller-only nodes are refused, naming the spec, when its image runs
// none.
func TestControllerOnlyNeedsSupport(t *testing.T) {
	s, err := Load(filepath.Join("specs", "redpanda.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(s, nil).Start(context.Background(), runtime.ClusterSpec{Name: "x", Nodes: []runtime.NodeSpec{{ID: 1}, {ID: 2, ControllerOnly: true}}})
	if err == nil || !strings.Contains(err.Error(), "controller_only: false") {
		t.Fatalf("got %v", err)
	}
}

// A secured cluster renders into gregor.yaml's command with the files at
// their place in the container and no secret among the arguments; a spec
// that renders no security settings refuses it rather than boot it open.
func TestImageSpecSecurity(t *testing.T) {
	g, err := Load(filepath.Join("specs", "gregor.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	all := sampleNodes()
	set := runtime.BrokerSettings{MinISR: 2, DefaultRF: 3, Security: runtime.SecuritySettings{Protocol: "SASL_SSL",
		Mechanism: "SCRAM-SHA-512", User: "admin", Authorizer: true, SuperUsers: []string{"User:ops"}}}
	files := runtime.FilePaths([]runtime.File{{Name: "saslpassword", Path: "/host/pw"}, {Name: "tlsca", Path: "/host/ca"},
		{Name: "tlscakey", Path: "/host/cakey"}}, docker.FilesDir)
	r, err := g.render(all[0], all, set, files, "cid", "gregor:abc")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--listen=SASL_SSL://10.0.0.1:9092", "--sasl-mechanism=SCRAM-SHA-512", "--sasl-user=admin",
		"--sasl-password-file=" + docker.FilesDir + "/saslpassword", "--tls-ca=" + docker.FilesDir + "/tlsca",
		"--tls-ca-key=" + docker.FilesDir + "/tlscakey", "--authorizer", "--super-users=User:ops"} {
		if !slices.Contains(r.node.Cmd, want) {
			t.Errorf("secured gregor node 1: %q lacks %s", r.node.Cmd, want)
		}
	}
	if strings.Contains(strings.Join(r.node.Cmd, " "), "/host/") {
		t.Errorf("secured gregor node 1 names a host path: %q", r.node.Cmd)
	}

	k, err := Load(filepath.Join("specs", "kafka-kraft-combined.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range []runtime.SecuritySettings{{Protocol: "SASL_SSL", Mechanism: "PLAIN", User: "a"}, {Authorizer: true}} {
		_, err = New(k, nil).Start(context.Background(), runtime.ClusterSpec{Name: "x", Nodes: []runtime.NodeSpec{{ID: 1}},
			Settings: runtime.BrokerSettings{Security: sec}})
		if err == nil || !strings.Contains(err.Error(), "security: true") {
			t.Errorf("kafka spec with %+v: got %v, want a refusal naming security: true", sec, err)
		}
	}
}
