package controller

import (
	"context"
	"fmt"
	"io"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/meta"
)

// Short timings for in-process clusters under -race on a shared 2-core
// machine: fast enough to test, slow enough not to flap.
const (
	testRaftTimeout = 500 * time.Millisecond
	testHeartbeat   = 100 * time.Millisecond
	testSession     = 1500 * time.Millisecond
	// fenceBound bounds a wait for a fencing that is due one session after
	// the broker's last heartbeat: a bound against hanging, not a
	// measurement (a loaded machine with -race can take several sessions;
	// tests that measure fencing time measure it, against the session).
	fenceBound = 10 * testSession
	waitLong   = 20 * time.Second
)

type testNode struct {
	id  int32
	ip  string
	dir string
	c   *Controller
	lc  *Lifecycle
}

type testCluster struct {
	t      *testing.T
	voters []Voter
	nodes  map[int32]*testNode
	fnet   *faultNet
	lt     *LocalTransport
	mod    func(*Config)
}

// newTestCluster starts n controller nodes (ids 1..n, raft on 127.0.0.<id+10>)
// and a broker lifecycle on each.
func newTestCluster(t *testing.T, n int, mod func(*Config)) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, nodes: map[int32]*testNode{}, fnet: newFaultNet(), lt: &LocalTransport{}, mod: mod}
	lns := map[int32]net.Listener{}
	for i := 1; i <= n; i++ {
		id := int32(i)
		ip := fmt.Sprintf("127.0.0.%d", i+10)
		ln, err := net.Listen("tcp", ip+":0")
		if err != nil {
			t.Fatal(err)
		}
		lns[id] = ln
		tc.voters = append(tc.voters, Voter{ID: id, RaftAddr: ln.Addr().String()})
		tc.fnet.ipNode[ip] = id
		tc.nodes[id] = &testNode{id: id, ip: ip, dir: t.TempDir()}
	}
	for id := range tc.nodes {
		tc.startNode(id, lns[id])
	}
	t.Cleanup(tc.close)
	for id := range tc.nodes {
		tc.startBroker(id)
	}
	return tc
}

func (tc *testCluster) startNode(id int32, ln net.Listener) {
	tc.t.Helper()
	n := tc.nodes[id]
	if ln == nil {
		var err error
		// Bounded: the port was ours a moment ago; retry a few times
		// while the kernel releases it.
		for i := 0; i < 50; i++ {
			if ln, err = net.Listen("tcp", tc.addr(id)); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			tc.t.Fatal(err)
		}
	}
	cfg := Config{
		NodeID: id, Voters: tc.voters, DataDir: n.dir,
		Listener:         &faultListener{Listener: ln, self: id, f: tc.fnet},
		Dial:             tc.fnet.dialer(id, n.ip),
		HeartbeatTimeout: testRaftTimeout, ElectionTimeout: testRaftTimeout,
		LeaderLeaseTimeout: testRaftTimeout / 2, CommitTimeout: 20 * time.Millisecond,
		RaftIOTimeout: time.Second, ApplyTimeout: 3 * time.Second,
		SessionTimeout: testSession, StrictInvariants: true, LogOutput: io.Discard,
	}
	if tc.mod != nil {
		tc.mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		tc.t.Fatal(err)
	}
	n.c = c
	tc.lt.Set(id, c)
}

func (tc *testCluster) addr(id int32) string {
	for _, v := range tc.voters {
		if v.ID == id {
			return v.RaftAddr
		}
	}
	return ""
}

func (tc *testCluster) client(id int32) *Client {
	var ids []int32
	for _, v := range tc.voters {
		ids = append(ids, v.ID)
	}
	n := tc.nodes[id]
	return &Client{Transport: tc.lt, Active: func() int32 {
		if n.c == nil {
			return -1
		}
		return n.c.ActiveController()
	}, Nodes: ids, Backoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Timeout: 10 * time.Second}
}

func (tc *testCluster) startBroker(id int32) {
	n := tc.nodes[id]
	n.lc = StartLifecycle(LifecycleConfig{BrokerID: id, Host: n.ip, Port: 9092, Client: tc.client(id),
		HeartbeatInterval: testHeartbeat, RequestTimeout: 5 * time.Second})
}

func (tc *testCluster) stopBroker(id int32) {
	if n := tc.nodes[id]; n.lc != nil {
		n.lc.Stop()
		n.lc = nil
	}
}

// crashNode stops a node's broker and its controller (a kill).
func (tc *testCluster) crashNode(id int32) {
	tc.stopBroker(id)
	n := tc.nodes[id]
	tc.lt.Set(id, nil)
	if n.c != nil {
		n.c.Close()
		n.c = nil
	}
}

func (tc *testCluster) close() {
	for id := range tc.nodes {
		tc.crashNode(id)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < timeout {
		if cond() {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s", timeout, what)
	return 0
}

// active waits for exactly one node to be the active controller.
func (tc *testCluster) active() *testNode {
	tc.t.Helper()
	var found *testNode
	waitFor(tc.t, waitLong, "an active controller", func() bool {
		found = nil
		count := 0
		for _, n := range tc.nodes {
			if n.c != nil && n.c.IsActive() {
				found = n
				count++
			}
		}
		return count == 1
	})
	return found
}

// img is the active controller's image.
func (tc *testCluster) img() *Image { return tc.active().c.Image() }

func (tc *testCluster) waitUnfenced(ids ...int32) {
	tc.t.Helper()
	waitFor(tc.t, waitLong, fmt.Sprintf("brokers %v registered and unfenced", ids), func() bool {
		img := tc.img()
		for _, id := range ids {
			b, ok := img.Brokers[id]
			if !ok || b.Fenced {
				return false
			}
		}
		return true
	})
}

// converged waits until every running node holds an identical image.
func (tc *testCluster) converged() *Image {
	tc.t.Helper()
	var img *Image
	waitFor(tc.t, waitLong, "images to converge", func() bool {
		img = nil
		for _, n := range tc.nodes {
			if n.c == nil {
				continue
			}
			if img == nil {
				img = n.c.Image()
			} else if !reflect.DeepEqual(img, n.c.Image()) {
				return false
			}
		}
		return true
	})
	return img
}

type topicSpec struct {
	name       string
	partitions int32
	rf         int16
	assignment [][]int32
	configs    map[string]string
}

func (tc *testCluster) createTopic(via int32, s topicSpec) *kmsg.CreateTopicsResponseTopic {
	tc.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = s.name, s.partitions, s.rf
	for i, reps := range s.assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), reps
		t.ReplicaAssignment = append(t.ReplicaAssignment, a)
		t.NumPartitions, t.ReplicationFactor = -1, -1
	}
	for k, v := range s.configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	resp, err := tc.client(via).Request(context.Background(), req)
	if err != nil {
		tc.t.Fatal(err)
	}
	rt := resp.(*kmsg.CreateTopicsResponse).Topics[0]
	return &rt
}

func (tc *testCluster) mustCreate(s topicSpec) {
	tc.t.Helper()
	if rt := tc.createTopic(1, s); rt.ErrorCode != 0 {
		tc.t.Fatalf("create %s: %v", s.name, kerr.ErrorForCode(rt.ErrorCode))
	}
}

func (tc *testCluster) part(topic string, p int32) meta.Partition {
	ps, ok := tc.img().Partition(topic, p)
	if !ok {
		tc.t.Fatalf("no partition %s/%d", topic, p)
	}
	return ps
}
