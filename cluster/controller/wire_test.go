package controller

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/kconn"
)

// serveKafka is a minimal Kafka-protocol front for Handle, standing in for
// the broker's wire server so the kconn transport is tested end to end.
func serveKafka(t *testing.T, c *Controller) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go serveConn(nc, c)
		}
	}()
	return ln.Addr().String()
}

func serveConn(nc net.Conn, c *Controller) {
	defer nc.Close()
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(nc, hdr[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(nc, frame); err != nil {
			return
		}
		key := int16(binary.BigEndian.Uint16(frame))
		ver := int16(binary.BigEndian.Uint16(frame[2:]))
		corr := frame[4:8]
		idLen := int16(binary.BigEndian.Uint16(frame[8:]))
		body := frame[10:]
		if idLen > 0 {
			body = body[idLen:]
		}
		req := kmsg.RequestForKey(key)
		req.SetVersion(ver)
		if req.IsFlexible() {
			body = body[1:] // empty header tag section
		}
		if err := req.ReadFrom(body); err != nil {
			return
		}
		var resp kmsg.Response
		if key == 18 {
			r := req.ResponseKind().(*kmsg.ApiVersionsResponse)
			for _, k := range []int16{19, 20, 56, 62, 63} {
				ak := kmsg.NewApiVersionsResponseApiKey()
				ak.ApiKey, ak.MaxVersion = k, kmsg.RequestForKey(k).MaxVersion()
				r.ApiKeys = append(r.ApiKeys, ak)
			}
			resp = r
		} else {
			var err error
			if resp, err = c.Handle(context.Background(), req); err != nil {
				return
			}
		}
		out := append([]byte{0, 0, 0, 0}, corr...)
		if req.IsFlexible() && key != 18 {
			out = append(out, 0)
		}
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := nc.Write(out); err != nil {
			return
		}
	}
}

func TestKconnTransportAndAlterPartitionVersions(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	tc.active()
	tc.waitUnfenced(1, 2, 3)
	addrs := map[int32]string{}
	for id, n := range tc.nodes {
		addrs[id] = serveKafka(t, n.c)
	}
	tr := &KconnTransport{Addrs: addrs, Options: kconn.Options{ClientID: "broker-1", Negotiate: true}}
	defer tr.Close()
	cl := &Client{Transport: tr, Active: tc.nodes[1].c.ActiveController, Nodes: []int32{1, 2, 3}}

	tc.mustCreate(topicSpec{name: "w", assignment: [][]int32{{1, 2, 3}}})
	img := tc.converged()
	top := img.Topics["w"]
	p := top.Partitions[0]
	epoch := func(id int32) int64 { return tc.img().Brokers[id].Epoch }

	// v3 over TCP (negotiated): by topic id, ISR members with broker epochs.
	alter := func(isr []int32, epochs []int64, le, pe int32) (*kmsg.AlterPartitionResponse, error) {
		req := kmsg.NewPtrAlterPartitionRequest()
		req.BrokerID, req.BrokerEpoch = 1, epoch(1)
		rt := kmsg.NewAlterPartitionRequestTopic()
		rt.TopicID = top.ID
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.LeaderEpoch, rp.PartitionEpoch = le, pe
		for i, id := range isr {
			e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			e.BrokerID, e.BrokerEpoch = id, epochs[i]
			rp.NewEpochISR = append(rp.NewEpochISR, e)
		}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := cl.Request(t.Context(), req)
		if err != nil {
			return nil, err
		}
		if req.GetVersion() != 3 {
			t.Fatalf("negotiated AlterPartition v%d, want 3", req.GetVersion())
		}
		return resp.(*kmsg.AlterPartitionResponse), nil
	}
	resp, err := alter([]int32{1, 2}, []int64{epoch(1), epoch(2)}, p.LeaderEpoch, p.PartitionEpoch)
	if err != nil {
		t.Fatal(err)
	}
	got := resp.Topics[0].Partitions[0]
	if got.ErrorCode != 0 || !slices.Equal(got.ISR, []int32{1, 2}) || got.PartitionEpoch != p.PartitionEpoch+1 {
		t.Fatalf("shrink over kconn: %+v", got)
	}
	if resp.Topics[0].TopidID != top.ID {
		t.Fatal("response lost the topic id")
	}
	resp, err = alter([]int32{1, 2, 3}, []int64{-1, -1, epoch(3) - 1}, p.LeaderEpoch, got.PartitionEpoch)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.IneligibleReplica.Code {
		t.Fatalf("old incarnation added: %v, want INELIGIBLE_REPLICA", kerr.ErrorForCode(code))
	}
	resp, err = alter([]int32{1, 2, 3}, []int64{-1, -1, -1}, p.LeaderEpoch, p.PartitionEpoch)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("stale partition epoch: %v", kerr.ErrorForCode(code))
	}

	// v1 helper (by name) with a stale leader epoch.
	_, err = tc.client(1).AlterISR(t.Context(), 1, epoch(1), ISRChange{Topic: "w", Partition: 0,
		LeaderEpoch: p.LeaderEpoch - 1, PartitionEpoch: got.PartitionEpoch, NewISR: []int32{1}})
	if !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Fatalf("stale leader epoch: %v", err)
	}

	// A fenced broker cannot be added (KIP-841).
	tc.stopBroker(3)
	waitFor(t, fenceBound, "broker 3 fenced", func() bool { return tc.img().Brokers[3].Fenced })
	cur := tc.part("w", 0)
	_, err = tc.client(1).AlterISR(t.Context(), 1, epoch(1), ISRChange{Topic: "w", Partition: 0,
		LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch, NewISR: []int32{1, 2, 3}})
	if !errors.Is(err, kerr.IneligibleReplica) {
		t.Fatalf("fenced addition: %v", err)
	}

	// Transport errors are retried: the hinted node's address is dead.
	act := tc.active().id
	dead := act%3 + 1 // some other node
	bad := map[int32]string{}
	for id, a := range addrs {
		bad[id] = a
	}
	bad[dead] = "127.0.0.1:1"
	tr2 := &KconnTransport{Addrs: bad, Options: kconn.Options{DialTimeout: time.Second}}
	defer tr2.Close()
	cl2 := &Client{Transport: tr2, Active: func() int32 { return dead }, Nodes: []int32{1, 2, 3}, Backoff: 10 * time.Millisecond}
	if _, err := cl2.Heartbeat(t.Context(), 2, epoch(2), 0, false, false); err != nil {
		t.Fatalf("heartbeat through retries: %v", err)
	}
}
