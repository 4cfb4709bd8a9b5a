package runtime

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestor answers every request with one Metadata response.
type requestor struct {
	resp  *kmsg.MetadataResponse
	asked []string
}

func (r *requestor) Request(_ context.Context, req kmsg.Request) (kmsg.Response, error) {
	m, ok := req.(*kmsg.MetadataRequest)
	if !ok {
		return nil, errors.New("not a metadata request")
	}
	for _, t := range m.Topics {
		r.asked = append(r.asked, *t.Topic)
	}
	if m.Topics == nil {
		r.asked = append(r.asked, "<all>")
	}
	return r.resp, nil
}

// The view is what every watcher reads: partitions sorted, error codes by
// name, never-nil replica lists, the controller and the brokers.
func TestAskMetadataView(t *testing.T) {
	resp := kmsg.NewPtrMetadataResponse()
	resp.ControllerID = 2
	for _, id := range []int32{3, 1, 2} {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID = id
		resp.Brokers = append(resp.Brokers, b)
	}
	top := kmsg.NewMetadataResponseTopic()
	top.Topic = kmsg.StringPtr("q")
	p1 := kmsg.NewMetadataResponseTopicPartition()
	p1.Partition, p1.Leader, p1.LeaderEpoch, p1.Replicas, p1.ISR = 1, 2, 4, []int32{1, 2, 3}, []int32{2, 3}
	p0 := kmsg.NewMetadataResponseTopicPartition()
	p0.Partition, p0.Leader, p0.ErrorCode = 0, -1, kerr.LeaderNotAvailable.Code
	top.Partitions = []kmsg.MetadataResponseTopicPartition{p1, p0}
	gone := kmsg.NewMetadataResponseTopic()
	gone.Topic, gone.ErrorCode = kmsg.StringPtr("gone"), kerr.UnknownTopicOrPartition.Code
	resp.Topics = []kmsg.MetadataResponseTopic{top, gone}

	r := &requestor{resp: resp}
	v, err := AskMetadata(context.Background(), r, time.Second, "q", "gone")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.asked, ",") != "q,gone" || v.Controller != 2 || len(v.Brokers) != 3 || v.Brokers[0] != 1 || v.Brokers[2] != 3 {
		t.Fatalf("asked %v, view %+v", r.asked, v)
	}
	q, ok := v.Topic("q")
	if !ok || len(q.Partitions) != 2 || q.Partitions[0].Partition != 0 || q.Partitions[1].LeaderEpoch != 4 {
		t.Fatalf("topic q: %+v", q)
	}
	if p := q.Partitions[0]; p.Error != kerr.LeaderNotAvailable.Error() || p.Replicas == nil || p.ISR == nil || p.Leader != -1 {
		t.Errorf("partition 0: %+v (want its error by name and empty, not nil, lists)", p)
	}
	if g, _ := v.Topic("gone"); g.Error != kerr.UnknownTopicOrPartition.Error() {
		t.Errorf("topic error: %+v", g)
	}
	if _, ok := v.Topic("nope"); ok {
		t.Error("a topic not in the answer was found")
	}
	// No topic named: every topic (a nil list, not an empty one).
	r.asked = nil
	if _, err := AskMetadata(context.Background(), r, time.Second); err != nil || strings.Join(r.asked, ",") != "<all>" {
		t.Fatalf("all topics: asked %v, %v", r.asked, err)
	}
}

// fakeCluster is a Cluster that only has a name, for WaitReady.
type fakeCluster struct{ Cluster }

// WaitReady polls until the probe passes, and past the timeout names the
// cluster, the probe's last error and where to look.
func TestWaitReady(t *testing.T) {
	calls := 0
	spec := ClusterSpec{Name: "w", ReadyTimeout: 5 * time.Second, Ready: func(context.Context, Cluster) error {
		calls++
		if calls < 3 {
			return io.ErrUnexpectedEOF
		}
		return nil
	}}
	if err := WaitReady(context.Background(), spec, fakeCluster{}, "logs"); err != nil || calls != 3 {
		t.Fatalf("ready on the third probe: %v after %d", err, calls)
	}
	spec.ReadyTimeout = 300 * time.Millisecond
	spec.Ready = func(context.Context, Cluster) error { return io.ErrUnexpectedEOF }
	err := WaitReady(context.Background(), spec, fakeCluster{}, "broker logs under /x")
	if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "cluster w not ready within 300ms") ||
		!strings.Contains(err.Error(), "broker logs under /x") {
		t.Fatalf("never ready: %v", err)
	}
}
