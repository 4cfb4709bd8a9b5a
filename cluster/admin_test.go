package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The admin APIs of issue 19, each through franz-go's kadm against three
// in-process brokers.

func adminCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestAdminAPIs exercises the admin surface that changes no broker's
// liveness: CreatePartitions, IncrementalAlterConfigs and AlterConfigs
// (topic and broker), DescribeCluster, DescribeLogDirs, DeleteRecords,
// OffsetDelete and ElectLeaders (preferred).
func TestAdminAPIs(t *testing.T) {
	tc := startCluster(t, 3, nil)
	ctx := adminCtx(t)
	adm := kadm.NewClient(tc.client())

	t.Run("CreatePartitions", func(t *testing.T) {
		tc.createTopic("grow", 1, 2, nil)
		resp, err := adm.UpdatePartitions(ctx, 3, "grow")
		if err != nil || resp["grow"].Err != nil {
			t.Fatalf("grow to 3: %v %v", err, resp["grow"].Err)
		}
		tc.waitFor("3 partitions with leaders", 10*time.Second, func() error {
			top := tc.any().Image().Topics["grow"]
			if len(top.Partitions) != 3 {
				return fmt.Errorf("%d partitions", len(top.Partitions))
			}
			for _, p := range top.Partitions {
				if p.Leader < 0 || len(p.Replicas) != 2 {
					return fmt.Errorf("partition %d: leader %d replicas %v", p.Index, p.Leader, p.Replicas)
				}
			}
			return nil
		})
		// Every broker learns the new partitions a moment after broker 1.
		tc.waitFor("produce to a new partition", 10*time.Second, func() error {
			_, err := produceTo(tc.client(), "grow", 2, "on the new partition")
			return err
		})
		resp, err = adm.UpdatePartitions(ctx, 2, "grow")
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(resp["grow"].Err, kerr.InvalidPartitions) {
			t.Fatalf("shrinking answered %v, want INVALID_PARTITIONS", resp["grow"].Err)
		}
	})

	t.Run("AlterConfigs", func(t *testing.T) {
		tc.createTopic("cfg", 1, 3, nil)
		set := func(name, v string) []kadm.AlterConfig {
			return []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: kadm.StringPtr(v)}}
		}
		for _, bad := range []struct{ name, value string }{{"no.such.config", "1"}, {"min.insync.replicas", "0"}, {"min.insync.replicas", "4"}} {
			resp, err := adm.AlterTopicConfigs(ctx, set(bad.name, bad.value), "cfg")
			if err != nil {
				t.Fatal(err)
			}
			if !errors.Is(resp[0].Err, kerr.InvalidConfig) {
				t.Fatalf("%s=%s answered %v, want INVALID_CONFIG", bad.name, bad.value, resp[0].Err)
			}
		}
		resp, err := adm.AlterTopicConfigs(ctx, set("min.insync.replicas", "2"), "cfg")
		if err != nil || resp[0].Err != nil {
			t.Fatalf("min.insync.replicas=2: %v %v", err, resp)
		}
		// Every broker's replica takes the new min ISR from the metadata log.
		tc.waitFor("min ISR 2 on every replica", 10*time.Second, func() error {
			for _, b := range tc.brokers[:3] {
				if p := b.Partition("cfg", 0); p == nil || p.MinISR() != 2 {
					return fmt.Errorf("broker %d not yet", b.NodeID())
				}
			}
			return nil
		})
		describeIs(t, tc, "cfg", "min.insync.replicas", "2", kmsg.ConfigSourceDynamicTopicConfig)
		// The legacy AlterConfigs replaces the whole set: min ISR back to
		// the default.
		if resp, err := adm.AlterTopicConfigsState(ctx, set("retention.ms", "3600000"), "cfg"); err != nil || resp[0].Err != nil {
			t.Fatalf("AlterConfigs: %v %v", err, resp)
		}
		tc.waitFor("min ISR back to 1", 10*time.Second, func() error {
			if p := tc.brokers[0].Partition("cfg", 0); p == nil || p.MinISR() != 1 {
				return errors.New("not yet")
			}
			return nil
		})
		describeIs(t, tc, "cfg", "retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig)

		// A cluster-wide broker default changes at runtime:
		// message.max.bytes bounds topics that do not set max.message.bytes.
		bresp, err := adm.AlterBrokerConfigs(ctx, set("message.max.bytes", "1000"))
		if err != nil || bresp[0].Err != nil {
			t.Fatalf("message.max.bytes=1000: %v %+v", err, bresp)
		}
		describeIs(t, tc, "cfg", "max.message.bytes", "1000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
		tc.waitFor("every broker refuses 2000 bytes", 10*time.Second, func() error {
			if _, err := produceTo(tc.client(kgo.ProducerBatchCompression(kgo.NoCompression())), "cfg", 0, strings.Repeat("x", 2000)); !errors.Is(err, kerr.MessageTooLarge) {
				return fmt.Errorf("produce answered %v", err)
			}
			return nil
		})
		if bresp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "message.max.bytes"}}); err != nil || bresp[0].Err != nil {
			t.Fatalf("delete message.max.bytes: %v %+v", err, bresp)
		}
		if bresp, err := adm.AlterBrokerConfigs(ctx, set("num.io.threads", "4")); err != nil || !errors.Is(bresp[0].Err, kerr.InvalidConfig) {
			t.Fatalf("a broker config this cluster cannot change answered %v %+v", err, bresp)
		}
		// The broker default of min ISR is validated where it enters, as a
		// topic's is: no replica ever sees one below 1.
		if bresp, err := adm.AlterBrokerConfigs(ctx, set("min.insync.replicas", "0")); err != nil || !errors.Is(bresp[0].Err, kerr.InvalidConfig) {
			t.Fatalf("min.insync.replicas=0 as the cluster default answered %v %+v", err, bresp)
		}
		// A broker's own resource also describes its read-only
		// replica.lag.time.max.ms (the harness reads it back from a
		// cluster it attaches to), from the command line, not alterable.
		bcs, err := adm.DescribeBrokerConfigs(ctx, 2)
		if err != nil || len(bcs) != 1 || bcs[0].Err != nil {
			t.Fatalf("describe broker 2: %v %+v", err, bcs)
		}
		var lag *kadm.Config
		for i, c := range bcs[0].Configs {
			if c.Key == "replica.lag.time.max.ms" {
				lag = &bcs[0].Configs[i]
			}
		}
		if want := strconv.FormatInt(testLagMax.Milliseconds(), 10); lag == nil || lag.MaybeValue() != want || lag.Source != kmsg.ConfigSourceStaticBrokerConfig {
			t.Fatalf("broker 2 describes replica.lag.time.max.ms as %+v, want %s from its command line", lag, want)
		}
		if bresp, err := adm.AlterBrokerConfigs(ctx, set("replica.lag.time.max.ms", "1000"), 2); err != nil || !errors.Is(bresp[0].Err, kerr.InvalidConfig) {
			t.Fatalf("altering the read-only replica.lag.time.max.ms answered %v %+v", err, bresp)
		}
	})

	t.Run("DescribeCluster", func(t *testing.T) {
		req := kmsg.NewPtrDescribeClusterRequest()
		resp, err := req.RequestWith(ctx, tc.client())
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("%v %d", err, resp.ErrorCode)
		}
		if len(resp.Brokers) != 3 || resp.ControllerID < 1 || resp.ControllerID > 3 || resp.ClusterID != "gregor" {
			t.Fatalf("cluster %q, controller %d, %d brokers", resp.ClusterID, resp.ControllerID, len(resp.Brokers))
		}
	})

	t.Run("DeleteRecords", func(t *testing.T) {
		tc.createTopic("trim", 1, 3, nil)
		cl := tc.client(kgo.RequiredAcks(kgo.AllISRAcks()))
		for i := range 10 {
			if _, err := produceTo(cl, "trim", 0, fmt.Sprint(i)); err != nil {
				t.Fatal(err)
			}
		}
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 6})
		resp, err := adm.DeleteRecords(ctx, offs)
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := resp.Lookup("trim", 0); r.Err != nil || r.LowWatermark != 6 {
			t.Fatalf("low watermark %d err %v, want 6", r.LowWatermark, r.Err)
		}
		starts, err := adm.ListStartOffsets(ctx, "trim")
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := starts.Lookup("trim", 0); o.Offset != 6 {
			t.Fatalf("start offset %d after DeleteRecords, want 6", o.Offset)
		}
		tc.waitFor("followers' log start follows the leader's", 10*time.Second, func() error {
			for _, b := range tc.brokers[:3] {
				if start, _, _ := b.Partition("trim", 0).Offsets(); start != 6 {
					return fmt.Errorf("broker %d starts at %d", b.NodeID(), start)
				}
			}
			return nil
		})
		offs = kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 11})
		resp, _ = adm.DeleteRecords(ctx, offs)
		if r, _ := resp.Lookup("trim", 0); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
			t.Fatalf("DeleteRecords past the high watermark answered %v, want OFFSET_OUT_OF_RANGE", r.Err)
		}
	})

	t.Run("DescribeLogDirs", func(t *testing.T) {
		dirs, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{"trim": {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(dirs) != 3 {
			t.Fatalf("%d brokers described their log dirs", len(dirs))
		}
		for id, ds := range dirs {
			n := 0
			ds.EachPartition(func(p kadm.DescribedLogDirPartition) {
				if p.Topic == "trim" && p.Size > 0 {
					n++
				}
			})
			if n != 1 {
				t.Fatalf("broker %d: %d non-empty replicas of trim/0", id, n)
			}
		}
	})

	t.Run("OffsetDelete", func(t *testing.T) {
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 8})
		if err := adm.CommitAllOffsets(ctx, "g-del", offs); err != nil {
			t.Fatal(err)
		}
		resp, err := adm.DeleteOffsets(ctx, "g-del", kadm.TopicsSet{"trim": {0: {}}})
		if err != nil || resp.Error() != nil {
			t.Fatalf("%v %v", err, resp.Error())
		}
		fetched, err := adm.FetchOffsets(ctx, "g-del")
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := fetched.Lookup("trim", 0); ok && o.At >= 0 {
			t.Fatalf("offset %d still committed after OffsetDelete", o.At)
		}
		if _, err := adm.DeleteOffsets(ctx, "no-such-group", kadm.TopicsSet{"trim": {0: {}}}); !errors.Is(err, kerr.GroupIDNotFound) {
			t.Fatalf("unknown group answered %v, want GROUP_ID_NOT_FOUND", err)
		}
	})

	t.Run("ElectLeadersPreferred", func(t *testing.T) {
		res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"trim": {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		if r := res["trim"][0]; !errors.Is(r.Err, kerr.ElectionNotNeeded) {
			t.Fatalf("preferred leader already leads: answered %v, want ELECTION_NOT_NEEDED", r.Err)
		}
	})
}

// describeIs waits until every broker describes one topic config with the
// value and source given (a broker learns a change from the metadata log a
// moment after the controller applied it).
func describeIs(t *testing.T, tc *testCluster, topic, name, value string, src kmsg.ConfigSource) {
	t.Helper()
	tc.waitFor(name+" described", 10*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, b := range tc.brokers[:tc.n] {
			req := kmsg.NewPtrDescribeConfigsRequest()
			r := kmsg.NewDescribeConfigsRequestResource()
			r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{name}
			req.Resources = append(req.Resources, r)
			resp := kmsg.NewPtrDescribeConfigsResponse()
			resp.SetVersion(4)
			req.SetVersion(4)
			if err := rawRoundTrip(ctx, b.Addr(), req, resp); err != nil {
				return err
			}
			if len(resp.Resources) != 1 || len(resp.Resources[0].Configs) != 1 {
				return fmt.Errorf("broker %d: %+v", b.NodeID(), resp.Resources)
			}
			c := resp.Resources[0].Configs[0]
			if c.Value == nil || *c.Value != value || c.Source != src {
				return fmt.Errorf("broker %d describes %s as %v (%v), want %s (%v)", b.NodeID(), name, c.Value, c.Source, value, src)
			}
		}
		return nil
	})
}

// produceTo sends one record to a partition and returns its error.
func produceTo(cl *kgo.Client, topic string, partition int32, v string) (*kgo.Record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := &kgo.Record{Topic: topic, Partition: partition, Value: []byte(v)}
	return r, cl.ProduceSync(ctx, r).FirstErr()
}

// offlineWithStaleFollower brings topic/0 (RF 2, replicas [a, b]) to
// Kafka's unclean-election situation: b left the ISR, then a died; b is back
// and live but out of sync, so the partition stays offline while unclean
// election is off. It returns a and b.
func offlineWithStaleFollower(t *testing.T, tc *testCluster, topic string) (int32, int32) {
	tc.createTopic(topic, 1, 2, nil)
	p := tc.any().Image().Topics[topic].Partitions[0]
	a, b := p.Leader, p.Replicas[0]
	if b == a {
		b = p.Replicas[1]
	}
	tc.kill(int(b))
	tc.waitFor("ISR shrinks to the leader", 15*time.Second, func() error {
		if isr := tc.isr(topic, 0); !slices.Equal(isr, []int32{a}) {
			return fmt.Errorf("isr %v", isr)
		}
		return nil
	})
	if _, err := produce(tc.client(kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()), topic, "only on the leader"); err != nil {
		t.Fatal(err)
	}
	tc.kill(int(a))
	tc.start(int(b))
	tc.waitFor("b live, partition offline", 15*time.Second, func() error {
		im := tc.any().Image()
		if br, ok := im.Brokers[b]; !ok || br.Fenced {
			return errors.New("b not live")
		}
		if l := im.Topics[topic].Partitions[0].Leader; l != -1 {
			return fmt.Errorf("leader %d", l)
		}
		return nil
	})
	return a, b
}

// TestUncleanElectionAtRuntime: Kafka applies unclean.leader.election.enable
// at runtime: turning it on for an offline partition elects its live
// out-of-sync replica, which then takes writes.
func TestUncleanElectionAtRuntime(t *testing.T) {
	tc := startClusterWith(t, 3, 0, nil)
	ctx := adminCtx(t)
	_, b := offlineWithStaleFollower(t, tc, "dirty")
	// The unclean config must not change anything for another reason:
	// the partition stays offline for a moment with unclean election off.
	if l := tc.leader("dirty", 0); l != -1 {
		t.Fatalf("leader %d before unclean election was enabled", l)
	}
	adm := kadm.NewClient(tc.client())
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "unclean.leader.election.enable", Value: kadm.StringPtr("true")}}, "dirty")
	if err != nil || resp[0].Err != nil {
		t.Fatalf("%v %+v", err, resp)
	}
	tc.waitFor("the out-of-sync replica leads", 10*time.Second, func() error {
		if l := tc.leader("dirty", 0); l != b {
			return fmt.Errorf("leader %d, want %d", l, b)
		}
		return nil
	})
	if _, err := produce(tc.client(), "dirty", "after the unclean election"); err != nil {
		t.Fatalf("produce after the unclean election: %v", err)
	}
}

// TestElectLeadersUnclean: ElectLeaders with ElectionType unclean (KIP-460)
// elects a live out-of-sync replica for an offline partition, and answers
// ELECTION_NOT_NEEDED for a partition that has a leader.
func TestElectLeadersUnclean(t *testing.T) {
	tc := startClusterWith(t, 3, 0, nil)
	ctx := adminCtx(t)
	_, b := offlineWithStaleFollower(t, tc, "offline")
	adm := kadm.NewClient(tc.client())
	res, err := adm.ElectLeaders(ctx, kadm.ElectLiveReplica, kadm.TopicsSet{"offline": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res["offline"][0]; r.Err != nil {
		t.Fatalf("unclean election answered %v", r.Err)
	}
	tc.waitFor("the out-of-sync replica leads", 10*time.Second, func() error {
		if l := tc.leader("offline", 0); l != b {
			return fmt.Errorf("leader %d, want %d", l, b)
		}
		return nil
	})
	res, err = adm.ElectLeaders(ctx, kadm.ElectLiveReplica, kadm.TopicsSet{"offline": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res["offline"][0]; !errors.Is(r.Err, kerr.ElectionNotNeeded) {
		t.Fatalf("second election answered %v, want ELECTION_NOT_NEEDED", r.Err)
	}
}

// TestReassignmentMovesReplicas: AlterPartitionReassignments (KIP-455) moves
// a partition from broker 1 to brokers 2 and 3 while it holds data: the
// target replicas catch up and join the ISR, leadership moves to one of
// them, broker 1 leaves, ListPartitionReassignments shows the move while it
// runs and nothing after, and every record reads back.
func TestReassignmentMovesReplicas(t *testing.T) {
	tc := startCluster(t, 3, nil)
	ctx := adminCtx(t)
	tc.createTopic("move", 1, 1, nil)
	from := tc.leader("move", 0)
	var to []int32
	for id := int32(1); id <= 3; id++ {
		if id != from {
			to = append(to, id)
		}
	}
	cl := tc.client(kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range 50 {
		if _, err := produce(cl, "move", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(tc.client())
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign("move", 0, to)
	resp, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil || resp.Error() != nil {
		t.Fatalf("%v %v", err, resp.Error())
	}
	tc.waitFor("reassignment complete", 20*time.Second, func() error {
		p := tc.any().Image().Topics["move"].Partitions[0]
		if !slices.Equal(p.Replicas, to) || !slices.Contains(to, p.Leader) {
			return fmt.Errorf("replicas %v leader %d", p.Replicas, p.Leader)
		}
		listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"move": {0: {}}})
		if err != nil {
			return err
		}
		if len(listed["move"]) != 0 {
			return fmt.Errorf("still listed: %+v", listed["move"])
		}
		return nil
	})
	tc.waitFor("the old replica is gone", 10*time.Second, func() error {
		if tc.brokers[from-1].Partition("move", 0) != nil {
			return errors.New("still there")
		}
		return nil
	})
	got := tc.readAll("move")
	if len(got) != 50 {
		t.Fatalf("read %d records after the move, want 50", len(got))
	}
	for i, v := range got {
		if v != fmt.Sprint(i) {
			t.Fatalf("record %d is %q", i, v)
		}
	}
	// Cancelling when nothing is in progress is NO_REASSIGNMENT_IN_PROGRESS.
	cancelReq := kadm.AlterPartitionAssignmentsReq{}
	cancelReq.CancelAssign("move", 0)
	resp, err = adm.AlterPartitionAssignments(ctx, cancelReq)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(resp.Error(), kerr.NoReassignmentInProgress) {
		t.Fatalf("cancel answered %v, want NO_REASSIGNMENT_IN_PROGRESS", resp.Error())
	}
}
