package controller

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/meta"
)

func TestQuorumElectsAndImagesConverge(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	act := tc.active()
	tc.waitUnfenced(1, 2, 3)
	tc.mustCreate(topicSpec{name: "events", partitions: 3, rf: 3,
		configs: map[string]string{meta.ConfigMinISR: "2"}})

	img := tc.converged()
	top, ok := img.Topics["events"]
	if !ok || len(top.Partitions) != 3 || top.Configs[meta.ConfigMinISR] != "2" {
		t.Fatalf("topic in converged image: %+v", top)
	}
	leaders := map[int32]bool{}
	for _, p := range top.Partitions {
		if len(p.Replicas) != 3 || len(p.ISR) != 3 || p.Leader != p.Replicas[0] || p.LeaderEpoch != 0 {
			t.Fatalf("initial state %+v", p)
		}
		leaders[p.Leader] = true
	}
	if len(leaders) != 3 {
		t.Fatalf("initial leaders not spread: %v", leaders)
	}
	for id, n := range tc.nodes {
		if got := n.c.ActiveController(); got != act.id {
			t.Fatalf("node %d thinks %d is active, want %d", id, got, act.id)
		}
	}
	if img.Version == 0 || len(img.Brokers) != 3 {
		t.Fatalf("image version %d brokers %d", img.Version, len(img.Brokers))
	}
}

func TestTopicRequestsAndNotController(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	act := tc.active()
	tc.waitUnfenced(1, 2, 3)

	if rt := tc.createTopic(1, topicSpec{name: "big", partitions: 1, rf: 4}); rt.ErrorCode != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("RF 4 on 3 brokers: %v", kerr.ErrorForCode(rt.ErrorCode))
	}
	tc.mustCreate(topicSpec{name: "a", partitions: 2, rf: 2})
	if rt := tc.createTopic(2, topicSpec{name: "a", partitions: 2, rf: 2}); rt.ErrorCode != kerr.TopicAlreadyExists.Code {
		t.Fatalf("second create: %v", kerr.ErrorForCode(rt.ErrorCode))
	}

	// A follower answers NOT_CONTROLLER directly...
	var follower *testNode
	for _, n := range tc.nodes {
		if n != act {
			follower = n
		}
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(5)
	req.TopicNames = []string{"a"}
	resp, err := follower.c.Handle(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode; code != kerr.NotController.Code {
		t.Fatalf("follower answered %v", kerr.ErrorForCode(code))
	}
	// ...and a client misled into asking it retries and reaches the active one.
	cl := tc.client(follower.id)
	cl.Active = func() int32 { return follower.id }
	resp, err = cl.Request(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(code))
	}
	if _, ok := tc.converged().Topics["a"]; ok {
		t.Fatal("deleted topic still in the image")
	}
}

func TestSubscribeDeliversLatestImage(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	tc.active()
	ch, cancel, err := tc.nodes[2].c.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	tc.waitUnfenced(1, 2, 3)
	tc.mustCreate(topicSpec{name: "s", partitions: 1, rf: 1})
	// Nobody read while several applies happened: the channel holds one
	// image, and reading until "s" shows up takes a bounded number of reads.
	for i := 0; i < 100; i++ {
		img := <-ch
		if _, ok := img.Topics["s"]; ok {
			return
		}
	}
	t.Fatal("subscriber never saw the new topic")
}
