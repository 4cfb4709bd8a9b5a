package cluster

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/coordinator"
	"gregor/cluster/share"
)

// shareMember speaks KIP-932's protocol by hand (ShareGroupHeartbeat,
// ShareFetch, ShareAcknowledge) so a test sees every acquisition, delivery
// count and acknowledgement error the broker answers.
type shareMember struct {
	tc     *testCluster
	cl     *kgo.Client
	group  string
	member string
	topic  string
	id     [16]byte
	epochs map[int32]int32 // next share-session epoch per broker
}

func (tc *testCluster) shareMember(group, member, topic string) *shareMember {
	tc.t.Helper()
	var live []string
	for i, b := range tc.brokers[:tc.n] {
		if b != nil {
			live = append(live, tc.cfgs[i].Listen)
		}
	}
	// Seeded with the live brokers only: a dead seed is no way in.
	m := &shareMember{tc: tc, cl: tc.client(kgo.SeedBrokers(live...)), group: group, member: member, topic: topic,
		id: tc.any().Image().Topics[topic].ID, epochs: map[int32]int32{}}
	tc.waitFor(member+" joined "+group, 30*time.Second, func() error {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = group, member, 0, []string{topic}
		resp, err := req.RequestWith(context.Background(), m.cl)
		if err != nil {
			im := tc.any().Image()
			ot := im.Topics["__consumer_offsets"]
			p := ot.Partitions[coordinator.PartitionFor(group, int32(len(ot.Partitions)))]
			// A new client: franz-go keeps a coordinator it found (before
			// the election) across failed dials.
			m.cl = tc.client(kgo.SeedBrokers(live...))
			return fmt.Errorf("%w (the group's __consumer_offsets partition: leader %d, ISR %v)", err, p.Leader, p.ISR)
		}
		if e := kerr.ErrorForCode(resp.ErrorCode); e != nil {
			return e
		}
		if resp.Assignment == nil {
			return fmt.Errorf("no assignment")
		}
		return nil
	})
	return m
}

// fetch sends one ShareFetch for partition 0 to its leader, with acks, and
// returns the partition's answer (retrying while no leader or coordinator
// is ready, each retry in a new session).
func (m *shareMember) fetch(acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) kmsg.ShareFetchResponseTopicPartition {
	m.tc.t.Helper()
	var out kmsg.ShareFetchResponseTopicPartition
	m.tc.waitFor(m.member+" share fetch", 30*time.Second, func() error {
		leader := m.tc.leader(m.topic, 0)
		req := kmsg.NewPtrShareFetchRequest()
		req.SetVersion(2)
		req.GroupID, req.MemberID = kmsg.StringPtr(m.group), kmsg.StringPtr(m.member)
		req.ShareSessionEpoch = m.epochs[leader]
		req.MaxWaitMillis, req.MaxBytes, req.MaxRecords, req.BatchSize = 2000, 1<<20, 500, 500
		t := kmsg.NewShareFetchRequestTopic()
		t.TopicID = m.id
		p := kmsg.NewShareFetchRequestTopicPartition()
		p.AcknowledgementBatches = acks
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(context.Background(), m.cl.Broker(int(leader)))
		if err != nil {
			m.epochs[leader] = 0
			return fmt.Errorf("leader %d: %w", leader, err)
		}
		if e := kerr.ErrorForCode(resp.ErrorCode); e != nil {
			m.epochs[leader] = 0
			return e
		}
		m.epochs[leader]++
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if e := kerr.ErrorForCode(rp.ErrorCode); e != nil {
					return e
				}
				out = rp
			}
		}
		return nil
	})
	return out
}

// ack sends a standalone ShareAcknowledge of offsets first..last with one
// type and returns the partition's error code.
func (m *shareMember) ack(first, last int64, typ int8) int16 {
	m.tc.t.Helper()
	leader := m.tc.leader(m.topic, 0)
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.SetVersion(2)
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(m.group), kmsg.StringPtr(m.member), m.epochs[leader]
	t := kmsg.NewShareAcknowledgeRequestTopic()
	t.TopicID = m.id
	p := kmsg.NewShareAcknowledgeRequestTopicPartition()
	p.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: first, LastOffset: last, AcknowledgeTypes: []int8{typ}}}
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(context.Background(), m.cl.Broker(int(leader)))
	if err != nil {
		m.tc.t.Fatalf("ShareAcknowledge: %v", err)
	}
	if resp.ErrorCode != 0 {
		return resp.ErrorCode
	}
	m.epochs[leader]++
	return resp.Topics[0].Partitions[0].ErrorCode
}

func ackBatch(first, last int64, typ int8) kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
	return kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: first, LastOffset: last, AcknowledgeTypes: []int8{typ}}
}

// acquired lists a fetch's acquired offsets with their delivery counts.
func acquired(rp kmsg.ShareFetchResponseTopicPartition) map[int64]int16 {
	out := map[int64]int16{}
	for _, a := range rp.AcquiredRecords {
		for o := a.FirstOffset; o <= a.LastOffset; o++ {
			out[o] = a.DeliveryCount
		}
	}
	return out
}

// shareCluster is 3 brokers with an RF 3 topic of n records, a share
// group reading it from the earliest offset, and share settings mod.
func shareCluster(t *testing.T, n int, mod func(*Config)) (*testCluster, string) {
	// Two controller-only voters: the quorum outlives two brokers.
	tc := startClusterWith(t, 3, 2, func(c *Config) {
		c.Groups.ShareProtocol = true // --group-protocols classic,share
		if mod != nil {
			mod(c)
		}
	})
	tc.createTopic("q", 1, 3, nil)
	cl := tc.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite())
	for i := 0; i < n; i++ {
		if _, err := produce(cl, "q", fmt.Sprint("v", i)); err != nil {
			t.Fatal(err)
		}
	}
	group := "g-" + t.Name()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("setting the group config: %v %+v", err, resp)
	}
	tc.waitFor("group config applied", 10*time.Second, func() error {
		for _, b := range tc.brokers[:3] {
			if b.Image().GroupConfigs[group]["share.auto.offset.reset"] != "earliest" {
				return fmt.Errorf("broker %d has not got it", b.cfg.NodeID)
			}
		}
		return nil
	})
	return tc, group
}

// KIP-932's acknowledgement semantics: accept is final, release makes a
// record available again with its delivery count kept, reject archives it,
// and a record released at the delivery count limit is archived.
func TestShareAcknowledgeSemantics(t *testing.T) {
	tc, group := shareCluster(t, 10, func(c *Config) { c.Share.DeliveryLimit = 2 })
	a := tc.shareMember(group, "member-a", "q")
	got := acquired(a.fetch())
	if len(got) != 10 || got[0] != 1 || got[9] != 1 {
		t.Fatalf("first fetch acquired %v, want offsets 0-9 at delivery count 1", got)
	}
	// accept 0-2, release 3-5, reject 6; 7-9 stay acquired.
	got = acquired(a.fetch(ackBatch(0, 2, 1), ackBatch(3, 5, 2), ackBatch(6, 6, 3)))
	if len(got) != 3 || got[3] != 2 || got[5] != 2 {
		t.Fatalf("after release, fetch acquired %v, want 3-5 at delivery count 2", got)
	}
	// Released again at the limit (2 deliveries): archived, never again.
	if code := a.ack(3, 5, 2); code != 0 {
		t.Fatalf("second release: error %d", code)
	}
	b := tc.shareMember(group, "member-b", "q")
	if got := acquired(b.fetch()); len(got) != 0 {
		t.Fatalf("another member acquired %v: accepted, rejected, archived and held records must not be delivered", got)
	}
	// 7-9 are a's: b cannot acknowledge them.
	if code := b.ack(7, 9, 1); code != kerr.InvalidRecordState.Code {
		t.Fatalf("b accepting a's records: error %d, want INVALID_RECORD_STATE", code)
	}
}

// An expired acquisition lock releases the records to others with the
// delivery count raised, and the consumer whose lock expired can no longer
// acknowledge them; the planted bug takes its acknowledgement.
func TestShareLockExpiry(t *testing.T) {
	for _, bug := range []bool{false, true} {
		t.Run(fmt.Sprintf("bug=%v", bug), func(t *testing.T) {
			tc, group := shareCluster(t, 4, func(c *Config) {
				c.Share.LockDuration, c.Share.MinLockDuration = 300*time.Millisecond, 100*time.Millisecond
				c.Share.Bugs.AckAfterLockExpiry = bug
			})
			a := tc.shareMember(group, "member-a", "q")
			if got := acquired(a.fetch()); len(got) != 4 {
				t.Fatalf("a acquired %v, want 4 records", got)
			}
			b := tc.shareMember(group, "member-b", "q")
			// Event-based: b's long poll returns once a's lock lapses.
			var got map[int64]int16
			tc.waitFor("a's lock expired", 20*time.Second, func() error {
				if got = acquired(b.fetch()); len(got) == 0 {
					return fmt.Errorf("nothing released yet")
				}
				return nil
			})
			if len(got) != 4 || got[0] != 2 {
				t.Fatalf("b acquired %v after a's lock expired, want 0-3 at delivery count 2", got)
			}
			if code := b.ack(0, 1, 2); code != 0 {
				t.Fatalf("b releasing 0-1: error %d", code)
			}
			// 0-1 are available again (a's lock lapsed, b released them):
			// a's late acknowledgement must fail.
			code := a.ack(0, 1, 1)
			switch {
			case !bug && code != kerr.InvalidRecordState.Code:
				t.Fatalf("a accepting after its lock expired: error %d, want INVALID_RECORD_STATE", code)
			case bug && code != 0:
				t.Fatalf("planted %s: error %d, want the acknowledgement taken", BugShareAckAfterLockExpiry, code)
			}
		})
	}
}

// The share-partition state is in __share_group_state, written before an
// acknowledgement is answered: after the partition leader and the share
// coordinator are killed, the new leader reloads it, so accepted records
// are never delivered again and the rest come back with their counts.
func TestShareStateSurvivesFailover(t *testing.T) {
	tc, group := shareCluster(t, 10, nil)
	a := tc.shareMember(group, "member-a", "q")
	if got := acquired(a.fetch()); len(got) != 10 {
		t.Fatalf("a acquired %v, want 10", got)
	}
	if code := a.ack(0, 4, 1); code != 0 {
		t.Fatalf("accepting 0-4: error %d", code)
	}
	if code := a.ack(5, 6, 2); code != 0 {
		t.Fatalf("releasing 5-6: error %d", code)
	}
	// One broker down at a time: the partition leader, then (when it is
	// another broker) the share coordinator, after the first is back.
	old := tc.leader("q", 0)
	coord := tc.shareStateLeader(group, "q")
	tc.kill(int(old))
	b := tc.shareMember(group, "member-b", "q")
	got := acquired(b.fetch())
	for o := int64(0); o <= 4; o++ {
		if _, again := got[o]; again {
			t.Fatalf("after the leader's failover b acquired %v: accepted offset %d delivered again", got, o)
		}
	}
	if len(got) != 5 || got[5] != 2 || got[6] != 2 || got[7] != 2 {
		t.Fatalf("after the leader's failover b acquired %v, want 5-9 at delivery count 2 (released, and the acquired ones' locks died with the leader)", got)
	}
	if code := b.ack(5, 9, 1); code != 0 {
		t.Fatalf("b accepting 5-9: error %d", code)
	}
	if coord == old {
		return
	}
	tc.start(int(old))
	tc.waitFor("old leader back in the ISR", 30*time.Second, func() error {
		if len(tc.isr("q", 0)) < 3 {
			return fmt.Errorf("ISR %v", tc.isr("q", 0))
		}
		return nil
	})
	tc.kill(int(coord))
	c := tc.shareMember(group, "member-c", "q")
	if got := acquired(c.fetch()); len(got) != 0 {
		t.Fatalf("after the share coordinator's failover c acquired %v: every record was accepted", got)
	}
}

// shareStateLeader is the broker leading the __share_group_state
// partition of group's share partition topic/0: its share coordinator.
func (tc *testCluster) shareStateLeader(group, topic string) int32 {
	im := tc.any().Image()
	t := im.Topics["__share_group_state"]
	if t == nil {
		tc.t.Fatal("__share_group_state was never created")
	}
	k := share.StateKey{Group: group, TopicID: im.Topics[topic].ID, Partition: 0}
	return t.Partitions[coordinator.PartitionFor(k.CoordinatorKey(), int32(len(t.Partitions)))].Leader
}

// lockedBuffer is a log sink the brokers' goroutines share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Issue 30's false alarm at the broker: a member whose lock lapsed and
// that acquired the records again (its client fetching ahead) has the
// acknowledgement it sends for the first delivery applied to the second
// (an acknowledgement names a member and offsets: Kafka's
// SharePartition.acknowledge), and its acknowledgement of the second is
// refused (INVALID_RECORD_STATE, the records acknowledged). The node log's
// debug trace shows both: what each acknowledgement met, and the request
// that carried it.
func TestShareAckAppliesToTheMembersReacquisition(t *testing.T) {
	logs := &lockedBuffer{}
	tc, group := shareCluster(t, 4, func(c *Config) {
		c.Share.LockDuration, c.Share.MinLockDuration = 300*time.Millisecond, 100*time.Millisecond
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	a := tc.shareMember(group, "member-a", "q")
	if got := acquired(a.fetch()); len(got) != 4 || got[0] != 1 {
		t.Fatalf("a acquired %v, want 0-3 at delivery count 1", got)
	}
	// Event-based: a's own long poll returns once its lock lapses.
	var got map[int64]int16
	tc.waitFor("a's lock expired", 20*time.Second, func() error {
		if got = acquired(a.fetch()); len(got) == 0 {
			return fmt.Errorf("nothing released yet")
		}
		return nil
	})
	if len(got) != 4 || got[0] != 2 {
		t.Fatalf("a acquired %v again, want 0-3 at delivery count 2", got)
	}
	if code := a.ack(0, 3, 1); code != 0 {
		t.Fatalf("a accepting (sent for count 1, held at count 2): error %d, want taken", code)
	}
	if code := a.ack(0, 3, 2); code != kerr.InvalidRecordState.Code {
		t.Fatalf("a releasing the accepted records: error %d, want INVALID_RECORD_STATE", code)
	}
	trace := logs.String()
	for _, want := range []string{`msg="share partition: lock expired"`, `runs=0-3@1`, `runs=0-3@2`,
		`via=ShareAcknowledge acks=0-3:[1] met="0-3=held@2" err=none`,
		`via=ShareAcknowledge acks=0-3:[2] met="0-3=done@0" err=INVALID_RECORD_STATE`} {
		if !strings.Contains(trace, want) {
			t.Errorf("node log lacks %q", want)
		}
	}
	if t.Failed() {
		for _, l := range strings.Split(trace, "\n") {
			if strings.Contains(l, "share partition") {
				t.Log(l)
			}
		}
	}
}
