package kconn

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newFake(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "seeded"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestApiVersionsBothHeaderForms(t *testing.T) {
	addr := newFake(t)
	ctx := testCtx(t)
	c, err := Dial(ctx, addr, Options{ClientID: "kconn-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// v0 is not flexible; v3 is flexible but its response header is still v0.
	for _, v := range []int16{0, 3} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(v)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "gregor", "0"
		resp, err := c.Request(ctx, req)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		r := resp.(*kmsg.ApiVersionsResponse)
		if r.ErrorCode != 0 {
			t.Fatalf("v%d: error code %d", v, r.ErrorCode)
		}
		keys := map[int16]bool{}
		for _, k := range r.ApiKeys {
			keys[k.ApiKey] = true
		}
		if !keys[0] || !keys[3] || !keys[19] {
			t.Fatalf("v%d: ApiKeys lacks produce/metadata/createtopics: %v", v, keys)
		}
	}
}

func TestNegotiatedMetadataAndCreateTopics(t *testing.T) {
	addr := newFake(t)
	ctx := testCtx(t)
	var dials atomic.Int32
	c, err := Dial(ctx, addr, Options{
		Negotiate: true,
		Dial: func(ctx context.Context, network, a string) (net.Conn, error) {
			dials.Add(1)
			var d net.Dialer
			return d.DialContext(ctx, network, a)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if dials.Load() != 1 {
		t.Fatalf("dial hook called %d times, want 1", dials.Load())
	}
	if v, ok := c.PeerMaxVersion(3); !ok || v < 9 {
		t.Fatalf("peer metadata max version %d %v, want a flexible one", v, ok)
	}

	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "made", 2, 1
	create.Topics = append(create.Topics, ct)
	resp, err := c.Request(ctx, create)
	if err != nil {
		t.Fatal(err)
	}
	if create.GetVersion() < 5 {
		t.Fatalf("negotiation left CreateTopics at v%d", create.GetVersion())
	}
	if code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create: %v", kerr.ErrorForCode(code))
	}
	again := kmsg.NewPtrCreateTopicsRequest()
	again.Topics = create.Topics
	resp, err = c.Request(ctx, again)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != kerr.TopicAlreadyExists.Code {
		t.Fatalf("second create: code %d, want TOPIC_ALREADY_EXISTS", code)
	}

	md := kmsg.NewPtrMetadataRequest()
	for _, name := range []string{"seeded", "made"} {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(name)
		md.Topics = append(md.Topics, mt)
	}
	resp, err = c.Request(ctx, md)
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string]int{}
	for _, tp := range resp.(*kmsg.MetadataResponse).Topics {
		parts[*tp.Topic] = len(tp.Partitions)
	}
	if parts["seeded"] != 3 || parts["made"] != 2 {
		t.Fatalf("metadata partitions %v, want seeded:3 made:2", parts)
	}
}

func TestPinnedVersions(t *testing.T) {
	addr := newFake(t)
	ctx := testCtx(t)
	// Metadata v1 is not flexible, v12 is: both header forms must decode.
	for _, v := range []int16{1, 12} {
		c, err := Dial(ctx, addr, Options{Versions: map[int16]int16{3: v}})
		if err != nil {
			t.Fatal(err)
		}
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(0) // overridden by the pin
		resp, err := c.Request(ctx, md)
		c.Close()
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if md.GetVersion() != v || resp.GetVersion() != v {
			t.Fatalf("sent v%d, decoded v%d, want v%d", md.GetVersion(), resp.GetVersion(), v)
		}
		if n := len(resp.(*kmsg.MetadataResponse).Brokers); n != 1 {
			t.Fatalf("v%d: %d brokers, want 1", v, n)
		}
	}
}
