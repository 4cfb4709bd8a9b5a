package runtime

import (
	"strings"
	"testing"
)

func nodes3() []NodeInfo {
	return []NodeInfo{
		{ID: 3, Host: "10.1.0.13", KafkaAddr: "10.1.0.13:9092", RaftAddr: "10.1.0.13:9093"},
		{ID: 1, Host: "10.1.0.11", KafkaAddr: "10.1.0.11:9092", RaftAddr: "10.1.0.11:9093"},
		{ID: 2, Host: "10.1.0.12", KafkaAddr: "10.1.0.12:9092", RaftAddr: "10.1.0.12:9093"},
	}
}

func TestExpandArgsGivesEachNodeItsAddressAndPeers(t *testing.T) {
	all := nodes3()
	v := VarsFor(all[2], all, "/data")
	got, err := ExpandArgs([]string{"--node-id={{.ID}}", "--listen", "{{.KafkaAddr}}", "--voters={{.Peers}}", "--data={{.DataDir}}", "--bootstrap={{.KafkaPeers}}", "plain"}, v)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--node-id=2", "--listen", "10.1.0.12:9092",
		"--voters=1@10.1.0.11:9093,2@10.1.0.12:9093,3@10.1.0.13:9093", "--data=/data",
		"--bootstrap=1@10.1.0.11:9092,2@10.1.0.12:9092,3@10.1.0.13:9092", "plain"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if v.KafkaPort != 9092 || v.RaftPort != 9093 {
		t.Fatalf("ports %d %d", v.KafkaPort, v.RaftPort)
	}
}

func TestExpandArgsRefusesUnknownField(t *testing.T) {
	_, err := ExpandArgs([]string{"--x={{.Hots}}"}, Vars{})
	if err == nil || !strings.Contains(err.Error(), "Hots") {
		t.Fatalf("want an error naming the bad field, got %v", err)
	}
}

func TestValidate(t *testing.T) {
	ok := ClusterSpec{Name: "c1", Nodes: []NodeSpec{{ID: 1}, {ID: 2}}, KafkaPort: 9092, RaftPort: 9093, Binary: "/bin/gregor"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid spec refused: %v", err)
	}
	bad := map[string]func(s *ClusterSpec){
		"name":      func(s *ClusterSpec) { s.Name = "a b" },
		"no nodes":  func(s *ClusterSpec) { s.Nodes = nil },
		"dup id":    func(s *ClusterSpec) { s.Nodes = []NodeSpec{{ID: 1}, {ID: 1}} },
		"zero id":   func(s *ClusterSpec) { s.Nodes = []NodeSpec{{ID: 0}} },
		"same port": func(s *ClusterSpec) { s.RaftPort = s.KafkaPort },
		"no binary": func(s *ClusterSpec) { s.Binary = "" },
		"file name": func(s *ClusterSpec) { s.Files = []File{{Name: "tls-ca", Path: "/ca.pem"}} },
		"file twice": func(s *ClusterSpec) {
			s.Files = []File{{Name: "ca", Path: "/a.pem"}, {Name: "ca", Path: "/b.pem"}}
		},
		"relative file": func(s *ClusterSpec) { s.Files = []File{{Name: "ca", Path: "ca.pem"}} },
	}
	for name, mutate := range bad {
		s := ok
		s.Nodes = append([]NodeSpec(nil), ok.Nodes...)
		mutate(&s)
		if err := s.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestCapabilitiesDefaultUnsupported(t *testing.T) {
	c := Capabilities{FaultKill: {Support: Real, How: "SIGKILL"}}
	if c.Get(FaultDelay).Support != Unsupported {
		t.Fatal("missing fault should be unsupported")
	}
	if !strings.Contains(c.String(), "kill: real (SIGKILL)") {
		t.Fatalf("report line: %q", c.String())
	}
}

// A node file is named once and expanded where the runtime places it: the
// host path for a runtime whose nodes share the host, a directory of the
// node's own otherwise; a name no file has is an error, not an empty flag.
func TestExpandArgsNamesFilesWhereTheNodeSeesThem(t *testing.T) {
	all := nodes3()
	files := []File{{Name: "saslpassword", Path: "/home/u/pw"}, {Name: "tlsca", Path: "/tmp/x/ca.pem"}}
	args := []string{"--sasl-password-file", "{{.Files.saslpassword}}", "--tls-ca={{.Files.tlsca}}"}
	for dir, want := range map[string]string{
		"":              "--sasl-password-file /home/u/pw --tls-ca=/tmp/x/ca.pem",
		"/gregor-files": "--sasl-password-file /gregor-files/saslpassword --tls-ca=/gregor-files/tlsca",
	} {
		v := VarsFor(all[0], all, "/data")
		v.Files = FilePaths(files, dir)
		got, err := ExpandArgs(args, v)
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("files under %q: %q %v, want %q", dir, got, err, want)
		}
	}
	v := VarsFor(all[0], all, "/data")
	v.Files = FilePaths(files[:1], "")
	if _, err := ExpandArgs(args, v); err == nil || !strings.Contains(err.Error(), "tlsca") {
		t.Errorf("an arg naming a file the spec lacks: %v, want an error naming it", err)
	}
}
