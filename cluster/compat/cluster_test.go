package compat

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/cluster"
)

// testCluster is three in-process brokers, each on its own loopback address
// (port 9092, as a user's cluster would be), all controller voters.
type testCluster struct {
	t         *testing.T
	brokers   []*cluster.Broker
	bootstrap string
}

func startCluster(t *testing.T) *testCluster { return startClusterWith(t, "", nil) }

// startClusterWith starts the cluster on block (a 127.a.b prefix; "" picks
// one), each broker's config changed by mod.
func startClusterWith(t *testing.T, block string, mod func(*cluster.Config)) *testCluster {
	t.Helper()
	if block == "" {
		block = fmt.Sprintf("127.%d.%d", 1+rand.IntN(254), rand.IntN(255))
	}
	var peers []cluster.Peer
	for i := 1; i <= 3; i++ {
		host := block + "." + strconv.Itoa(i)
		peers = append(peers, cluster.Peer{ID: int32(i), RaftAddr: net.JoinHostPort(host, "9093"), KafkaAddr: net.JoinHostPort(host, "9092")})
	}
	tc := &testCluster{t: t}
	var addrs []string
	for _, p := range peers {
		cfg := cluster.Config{NodeID: p.ID, Listen: p.KafkaAddr, DataDir: t.TempDir(),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Peers: peers,
			RaftTimeout: 500 * time.Millisecond, SessionTimeout: 1500 * time.Millisecond,
			HeartbeatInterval: 250 * time.Millisecond, ReplicaLagMax: 2 * time.Second, ShutdownTimeout: 5 * time.Second}
		if mod != nil {
			mod(&cfg)
		}
		b, err := cluster.Start(cfg)
		if err != nil {
			t.Fatalf("start broker %d: %v", p.ID, err)
		}
		tc.brokers = append(tc.brokers, b)
		addrs = append(addrs, p.KafkaAddr)
	}
	t.Cleanup(func() {
		for _, b := range tc.brokers {
			if b != nil {
				b.Close()
			}
		}
	})
	tc.bootstrap = strings.Join(addrs, ",")
	tc.waitFor("three live brokers", 20*time.Second, func() error {
		live := 0
		for _, b := range tc.brokers[0].Image().Brokers {
			if !b.Fenced {
				live++
			}
		}
		if live != 3 {
			return fmt.Errorf("%d live", live)
		}
		return nil
	})
	return tc
}

// in is tc for subtest t: the helpers fail t, not the test that started
// the cluster (FailNow from a subtest on its parent is an error of its own).
func (tc *testCluster) in(t *testing.T) *testCluster {
	c := *tc
	c.t = t
	return &c
}

// waitFor polls cond until it returns nil, failing the test after limit.
func (tc *testCluster) waitFor(what string, limit time.Duration, cond func() error) {
	tc.t.Helper()
	deadline := time.Now().Add(limit)
	var last error
	for time.Now().Before(deadline) {
		if last = cond(); last == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	tc.t.Fatalf("%s: not within %v: %v", what, limit, last)
}

// admin is a franz-go admin client, the suite's independent observer.
func (tc *testCluster) admin() *kadm.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(tc.bootstrap, ",")...))
	if err != nil {
		tc.t.Fatal(err)
	}
	tc.t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// endOffsets are the topic's end offsets by partition, and their sum.
func (tc *testCluster) endOffsets(topic string) (map[int32]int64, int64) {
	tc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	offs, err := tc.admin().ListEndOffsets(ctx, topic)
	if err != nil {
		tc.t.Fatal(err)
	}
	out := map[int32]int64{}
	var sum int64
	offs.Each(func(o kadm.ListedOffset) {
		out[o.Partition] = o.Offset
		sum += o.Offset
	})
	return out, sum
}

// committed are a group's committed offsets on topic, by partition.
func (tc *testCluster) committed(group, topic string) map[int32]int64 {
	tc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	offs, err := tc.admin().FetchOffsets(ctx, group)
	if err != nil {
		tc.t.Fatal(err)
	}
	out := map[int32]int64{}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic {
			out[o.Partition] = o.At
		}
	})
	return out
}

// requireTool fails (never skips) when a client is not installed: the
// suite must not pass silently on a machine without it.
func requireTool(t *testing.T, name, debianPackage string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: install it with `apt-get install %s` (.ci/run does)", name, debianPackage)
	}
	return path
}

// requirePython fails when Debian's python3 lacks module.
func requirePython(t *testing.T, module, debianPackage string) {
	t.Helper()
	if out, err := exec.Command(python, "-c", "import "+module).CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import %s: install it with `apt-get install %s` (.ci/run does): %s", python, module, debianPackage, out)
	}
}

// python is Debian's interpreter: Debian's Python modules load there, not
// in another python3 earlier on PATH.
const python = "/usr/bin/python3"

// run runs a client command with a bound, feeding stdin, and returns its
// standard output; it fails the test on a non-zero exit unless wantFail.
func run(t *testing.T, limit time.Duration, stdin string, wantFail bool, name string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %s did not exit within %v (stdout %q, stderr %q)", name, strings.Join(args, " "), limit, tail(stdout.String()), tail(stderr.String()))
	}
	if (err != nil) != wantFail {
		t.Fatalf("%s %s: exit %v, want failure %v (stdout %q, stderr %q)", name, strings.Join(args, " "), err, wantFail, tail(stdout.String()), tail(stderr.String()))
	}
	return stdout.String(), stderr.String()
}

func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}
