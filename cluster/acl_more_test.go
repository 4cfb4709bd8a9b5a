package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// allowBob grants bob op on a literal resource and waits until check
// (asked at every broker's answer) passes.
func allowBob(t *testing.T, tc *testCluster, adm *kadm.Client, b *kadm.ACLBuilder, what string, check func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := adm.CreateACLs(ctx, b.Allow("User:bob").AllowHosts("*").ResourcePatternType(kadm.ACLPatternLiteral)); err != nil {
		t.Fatal(err)
	}
	tc.waitFor(what, 10*time.Second, check)
}

func adminClient(tc *testCluster) *kgo.Client {
	return tc.client(kgo.SASL(scram.Auth{User: testAdmin, Pass: testPassword}.AsSha512Mechanism()))
}

// FindCoordinator as KafkaApis.getCoordinator: bob may find neither the
// coordinator of a group nor of a TransactionalId he may not DESCRIBE
// (GROUP_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, per
// key from v4, top-level and node -1 before), and may once he may (READ on
// the group and WRITE on the TransactionalId imply DESCRIBE).
func TestACLsFindCoordinator(t *testing.T) {
	tc, adm, users := aclCluster(t, nil)
	groupCoordinatorOf(tc, adm, "g1") // __consumer_offsets exists: no refusal is a missing topic
	// FindCoordinator v3 at most for v3's answers: kgo sends the highest
	// version both ends speak.
	v3 := kversion.Stable()
	v3.SetMaxKeyVersion(10, 3)
	leader := int(ordersLeader(tc))
	bob, bobV3 := tc.client(users["bob"]).Broker(leader), tc.client(users["bob"], kgo.MaxVersions(v3)).Broker(leader)
	find := func(version int16, keyType int8, key string) (int16, int32) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.SetVersion(version)
		req.CoordinatorType, req.CoordinatorKey, req.CoordinatorKeys = keyType, key, []string{key}
		to := bob
		if version < 4 {
			to = bobV3
		}
		r, err := req.RequestWith(ctx, to)
		if err != nil {
			t.Fatalf("bob's FindCoordinator v%d: %v", version, err)
		}
		if (r.Version < 4) != (version < 4) {
			t.Fatalf("bob's FindCoordinator went as v%d, not v%d", r.Version, version)
		}
		if version < 4 {
			return r.ErrorCode, r.NodeID
		}
		if len(r.Coordinators) != 1 || r.Coordinators[0].Key != key {
			t.Fatalf("bob's FindCoordinator v%d: %+v", version, r)
		}
		return r.Coordinators[0].ErrorCode, r.Coordinators[0].NodeID
	}
	for _, c := range []struct {
		version int16
		keyType int8
		key     string
		want    *kerr.Error
	}{{4, 0, "g1", kerr.GroupAuthorizationFailed}, {3, 0, "g1", kerr.GroupAuthorizationFailed},
		{4, 1, "tx1", kerr.TransactionalIDAuthorizationFailed}, {3, 1, "tx1", kerr.TransactionalIDAuthorizationFailed}} {
		if code, node := find(c.version, c.keyType, c.key); code != c.want.Code || node != -1 {
			t.Errorf("bob's FindCoordinator v%d of %q: %v node %d, want %v node -1", c.version, c.key, kerr.ErrorForCode(code), node, c.want)
		}
	}
	found := func(keyType int8, key string) func() error {
		return func() error {
			if code, node := find(4, keyType, key); code != 0 || node < 0 {
				return fmt.Errorf("%v node %d", kerr.ErrorForCode(code), node)
			}
			return nil
		}
	}
	allowBob(t, tc, adm, kadm.NewACLs().Groups("g1").Operations(kadm.OpRead), "bob finds g1's coordinator with READ on it", found(0, "g1"))
	allowBob(t, tc, adm, kadm.NewACLs().TransactionalIDs("tx1").Operations(kadm.OpWrite), "bob finds tx1's coordinator with WRITE on it", found(1, "tx1"))
}

// ShareFetch and ShareAcknowledge as KafkaApis.handleShareFetchRequest and
// handleShareAcknowledgeRequest: with READ on the share group but not on
// the topic, bob's fetch of a partition holding a record is answered
// TOPIC_AUTHORIZATION_FAILED and acquires nothing, and his acknowledgement
// of it TOPIC_AUTHORIZATION_FAILED; the partition stays in his share
// session, so once READ on the topic is granted his next (incremental)
// fetch acquires the record.
func TestACLsShareFetchNeedsTopicRead(t *testing.T) {
	tc, adm, users := aclCluster(t, func(c *Config) {
		// One state partition: fifty, made at once under -race, churn
		// their ISRs for longer than a fetch's read timeout.
		c.Groups.ShareProtocol, c.Share.StatePartitions = true, 1
	})
	admin := adminClient(tc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The group reads from the earliest offset (share.auto.offset.reset).
	cfg := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sg"
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("earliest")}}
	cfg.Resources = append(cfg.Resources, res)
	if r, err := cfg.RequestWith(ctx, admin); err != nil || r.Resources[0].ErrorCode != 0 {
		t.Fatalf("share.auto.offset.reset: %+v %v", r, err)
	}
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	groupCoordinatorOf(tc, adm, "sg")
	leader := ordersLeader(tc)
	bob := tc.client(users["bob"]).Broker(int(leader))
	allowBob(t, tc, adm, kadm.NewACLs().Groups("sg").Operations(kadm.OpRead), "bob's READ on sg applied at orders' leader", func() error {
		// Closing a session that does not exist: refused at the group
		// check, else SHARE_SESSION_NOT_FOUND.
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr("sg"), kmsg.StringPtr("probe"), -1
		r, err := req.RequestWith(ctx, bob)
		if err == nil && r.ErrorCode == kerr.GroupAuthorizationFailed.Code {
			err = kerr.GroupAuthorizationFailed
		}
		return err
	})
	id := tc.brokers[leader-1].Image().Topics["orders"].ID
	epoch := int32(0)
	fetchErr := func(withTopic bool, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) (kmsg.ShareFetchResponseTopicPartition, error) {
		rp, err := shareFetchAs(ctx, bob, "bob-member-1", epoch, id, withTopic, acks...)
		if err == nil {
			epoch++
		}
		return rp, err
	}
	fetch := func(withTopic bool, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) kmsg.ShareFetchResponseTopicPartition {
		t.Helper()
		rp, err := fetchErr(withTopic, acks...)
		if err != nil {
			t.Fatal(err)
		}
		return rp
	}
	// The share partition made ready (its state read from the share
	// coordinator) by the admin, whose closed session releases the record.
	adminAt := admin.Broker(int(leader))
	tc.waitFor("the admin's share fetch acquires orders' record", 30*time.Second, func() error {
		rp, err := shareFetchAs(ctx, adminAt, "admin-primer", 0, id, true)
		if err == nil && (rp.ErrorCode != 0 || len(rp.AcquiredRecords) == 0) {
			err = fmt.Errorf("%v, %d acquired", kerr.ErrorForCode(rp.ErrorCode), len(rp.AcquiredRecords))
		}
		return err
	})
	if _, err := shareFetchAs(ctx, adminAt, "admin-primer", -1, id, false); err != nil {
		t.Fatalf("closing the admin's share session: %v", err)
	}
	rp := fetch(true)
	if rp.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(rp.AcquiredRecords) != 0 {
		t.Fatalf("bob's ShareFetch without READ on orders: %v, %d acquired; want TOPIC_AUTHORIZATION_FAILED, none", kerr.ErrorForCode(rp.ErrorCode), len(rp.AcquiredRecords))
	}
	rp = fetch(true, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}})
	if rp.AcknowledgeErrorCode != kerr.TopicAuthorizationFailed.Code || rp.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("bob's piggybacked acknowledgement without READ on orders: ack %v, fetch %v; want TOPIC_AUTHORIZATION_FAILED for both",
			kerr.ErrorForCode(rp.AcknowledgeErrorCode), kerr.ErrorForCode(rp.ErrorCode))
	}
	sa := kmsg.NewPtrShareAcknowledgeRequest()
	sa.SetVersion(2)
	sa.GroupID, sa.MemberID, sa.ShareSessionEpoch = kmsg.StringPtr("sg"), kmsg.StringPtr("bob-member-1"), epoch
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = id
	at.Partitions = []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0, AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{
		{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}}}}
	sa.Topics = append(sa.Topics, at)
	if r, err := sa.RequestWith(ctx, bob); err != nil || r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("bob's ShareAcknowledge: %+v %v", r, err)
	} else if c := r.Topics[0].Partitions[0].ErrorCode; c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("bob's ShareAcknowledge without READ on orders: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(c))
	}
	epoch++
	allowBob(t, tc, adm, kadm.NewACLs().Topics("orders").Operations(kadm.OpRead), "bob's session fetches orders with READ on it", func() error {
		rp, err := fetchErr(false)
		if err == nil && (rp.ErrorCode != 0 || len(rp.AcquiredRecords) == 0) {
			err = fmt.Errorf("%v, %d acquired", kerr.ErrorForCode(rp.ErrorCode), len(rp.AcquiredRecords))
		}
		return err
	})
}

// shareFetchAs sends one ShareFetch of orders-0 (topic id) to a broker as
// a share-group member of sg; the partition's answer, or the request's
// error.
func shareFetchAs(ctx context.Context, to kmsg.Requestor, member string, epoch int32, id [16]byte, withTopic bool,
	acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) (kmsg.ShareFetchResponseTopicPartition, error) {
	req := kmsg.NewPtrShareFetchRequest()
	req.SetVersion(2)
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr("sg"), kmsg.StringPtr(member), epoch
	if epoch >= 0 {
		req.MaxWaitMillis, req.MaxBytes, req.MaxRecords, req.BatchSize = 500, 1<<20, 500, 500
	}
	if withTopic {
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = id
		p := kmsg.NewShareFetchRequestTopicPartition()
		p.AcknowledgementBatches = acks
		rt.Partitions = append(rt.Partitions, p)
		req.Topics = append(req.Topics, rt)
	}
	r, err := req.RequestWith(ctx, to)
	if err == nil {
		err = kerr.ErrorForCode(r.ErrorCode)
	}
	if err != nil {
		return kmsg.ShareFetchResponseTopicPartition{}, fmt.Errorf("%s's ShareFetch (epoch %d): %w", member, epoch, err)
	}
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			return rp, nil
		}
	}
	return kmsg.NewShareFetchResponseTopicPartition(), nil
}

// The authorized-operations fields as AuthHelper.authorizedOperations
// fills them: Metadata's per topic (IncludeTopicAuthorizedOperations) and,
// v8-10, the cluster's (none without DESCRIBE on it); DescribeGroups' per
// group (v3+, IncludeAuthorizedOperations). bob with READ on orders and
// DESCRIBE on g1 gets exactly those (READ implying DESCRIBE); the admin
// (a super user) every operation of each resource type; unasked, the
// schema's default.
func TestACLsAuthorizedOperations(t *testing.T) {
	tc, adm, users := aclCluster(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 0, LeaderEpoch: -1})
	tc.waitFor("the admin commits to g1", 20*time.Second, func() error {
		r, err := adm.CommitOffsets(ctx, "g1", offs)
		if err == nil {
			err = r.Error()
		}
		return err
	})
	bits := func(ops ...kmsg.ACLOperation) int32 {
		var b int32
		for _, op := range ops {
			b |= 1 << int8(op)
		}
		return b
	}
	allTopic := bits(kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs)
	allGroup := bits(kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs)
	metadata := func(cl *kgo.Client, version int16, ask bool) *kmsg.MetadataResponse {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(version)
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
		req.IncludeTopicAuthorizedOperations, req.IncludeClusterAuthorizedOperations = ask, ask
		r, err := req.RequestWith(ctx, cl.Broker(int(ordersLeader(tc))))
		if err != nil || len(r.Topics) != 1 || r.Version != version {
			t.Fatalf("Metadata v%d: %+v %v", version, r, err)
		}
		return r
	}
	bobCl, admin := tc.client(users["bob"]), adminClient(tc)
	// Metadata v10 at most, for its cluster field: kgo sends the highest
	// version both ends speak.
	v10 := kversion.Stable()
	v10.SetMaxKeyVersion(3, 10)
	bobV10 := tc.client(users["bob"], kgo.MaxVersions(v10))
	adminV10 := tc.client(kgo.SASL(scram.Auth{User: testAdmin, Pass: testPassword}.AsSha512Mechanism()), kgo.MaxVersions(v10))
	allowBob(t, tc, adm, kadm.NewACLs().Topics("orders").Operations(kadm.OpRead), "bob describes orders", func() error {
		if c := metadata(bobCl, 12, true).Topics[0].ErrorCode; c != 0 {
			return kerr.ErrorForCode(c)
		}
		return nil
	})
	if got := metadata(bobCl, 12, true).Topics[0].AuthorizedOperations; got != bits(kmsg.ACLOperationRead, kmsg.ACLOperationDescribe) {
		t.Errorf("bob's operations on orders: %b, want READ and DESCRIBE", got)
	}
	if got := metadata(admin, 12, true).Topics[0].AuthorizedOperations; got != allTopic {
		t.Errorf("the admin's operations on orders: %b, want %b", got, allTopic)
	}
	if got := metadata(admin, 12, false).Topics[0].AuthorizedOperations; got != notRequestedOps {
		t.Errorf("the admin's operations on orders, not asked: %d, want %d", got, notRequestedOps)
	}
	if got := metadata(bobV10, 10, true).AuthorizedOperations; got != 0 {
		t.Errorf("bob's cluster operations in Metadata v10 (no DESCRIBE on it): %b, want none", got)
	}
	if got := metadata(adminV10, 10, true).AuthorizedOperations; got != bits(clusterOps...) {
		t.Errorf("the admin's cluster operations in Metadata v10: %b, want %b", got, bits(clusterOps...))
	}
	describe := func(cl *kgo.Client) (int32, error) {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups, req.IncludeAuthorizedOperations = []string{"g1"}, true
		r, err := req.RequestWith(ctx, cl)
		if err != nil || len(r.Groups) != 1 || r.Groups[0].ErrorCode != 0 {
			return 0, fmt.Errorf("DescribeGroups: %+v %v", r, err)
		}
		return r.Groups[0].AuthorizedOperations, nil
	}
	allowBob(t, tc, adm, kadm.NewACLs().Groups("g1").Operations(kadm.OpDescribe), "bob describes g1", func() error {
		_, err := describe(bobCl)
		return err
	})
	if got, err := describe(bobCl); err != nil || got != bits(kmsg.ACLOperationDescribe) {
		t.Errorf("bob's operations on g1: %b %v, want DESCRIBE", got, err)
	}
	if got, err := describe(admin); err != nil || got != allGroup {
		t.Errorf("the admin's operations on g1: %b %v, want %b", got, err, allGroup)
	}
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{"g1"}
	if r, err := req.RequestWith(ctx, admin); err != nil || len(r.Groups) != 1 || r.Groups[0].AuthorizedOperations != notRequestedOps {
		t.Errorf("the admin's DescribeGroups, operations not asked: %+v %v, want %d", r, err, notRequestedOps)
	}
}

// clusterOps are AclEntry.supportedOperations(CLUSTER); notRequestedOps
// the authorized-operations fields' default.
var clusterOps = []kmsg.ACLOperation{kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs,
	kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe}

const notRequestedOps = -1 << 31

// ConsumerGroupDescribe and ShareGroupDescribe as KafkaApis since
// KAFKA-18813 and KAFKA-18817: bob, who may DESCRIBE the group but not the
// topic its member is assigned, gets the group as TOPIC_AUTHORIZATION_FAILED
// without its members; with DESCRIBE on the topic, the group and its
// member, and (asked) his operations on the group.
func TestACLsGroupDescribeHidesUndescribableTopics(t *testing.T) {
	tc, adm, users := aclCluster(t, func(c *Config) { c.Groups.ConsumerProtocol, c.Groups.ShareProtocol = true, true })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := adminClient(tc)
	// The admin joins g848 (KIP-848) and sg (KIP-932), subscribed to orders,
	// until a member is assigned it.
	tc.waitFor("the admin's member of g848 is assigned orders", 20*time.Second, func() error {
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.SetVersion(1)
		hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "g848", "admin-member-0000000001", 0, 30000
		hb.SubscribedTopicNames, hb.Topics = []string{"orders"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		r, err := hb.RequestWith(ctx, admin)
		if err == nil {
			err = kerr.ErrorForCode(r.ErrorCode)
		}
		if err == nil && (r.Assignment == nil || len(r.Assignment.Topics) == 0) {
			err = errors.New("no assignment yet")
		}
		return err
	})
	tc.waitFor("the admin's member of sg is assigned orders", 20*time.Second, func() error {
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = "sg", "admin-member-0000000002", 0, []string{"orders"}
		r, err := hb.RequestWith(ctx, admin)
		if err == nil {
			err = kerr.ErrorForCode(r.ErrorCode)
		}
		if err == nil && (r.Assignment == nil || len(r.Assignment.TopicPartitions) == 0) {
			err = errors.New("no assignment yet")
		}
		return err
	})
	bobCl := tc.client(users["bob"])
	consumer := func() (kmsg.ConsumerGroupDescribeResponseGroup, error) {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups, req.IncludeAuthorizedOperations = []string{"g848"}, true
		r, err := req.RequestWith(ctx, bobCl)
		if err != nil || len(r.Groups) != 1 {
			return kmsg.ConsumerGroupDescribeResponseGroup{}, fmt.Errorf("%+v %v", r, err)
		}
		return r.Groups[0], nil
	}
	shared := func() (kmsg.ShareGroupDescribeResponseGroup, error) {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs, req.IncludeAuthorizedOperations = []string{"sg"}, true
		r, err := req.RequestWith(ctx, bobCl)
		if err != nil || len(r.Groups) != 1 {
			return kmsg.ShareGroupDescribeResponseGroup{}, fmt.Errorf("%+v %v", r, err)
		}
		return r.Groups[0], nil
	}
	allowBob(t, tc, adm, kadm.NewACLs().Groups("g848", "sg").Operations(kadm.OpDescribe), "bob may describe g848 and sg", func() error {
		g, err := consumer()
		if err == nil && g.ErrorCode == kerr.GroupAuthorizationFailed.Code {
			err = kerr.GroupAuthorizationFailed
		}
		return err
	})
	tc.waitFor("sg described to bob", 10*time.Second, func() error {
		g, err := shared()
		if err == nil && g.ErrorCode == kerr.GroupAuthorizationFailed.Code {
			err = kerr.GroupAuthorizationFailed
		}
		return err
	})
	if g, _ := consumer(); g.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(g.Members) != 0 || g.ErrorMessage == nil {
		t.Errorf("g848 to bob without DESCRIBE on orders: %v %d members, want TOPIC_AUTHORIZATION_FAILED with a message and none", kerr.ErrorForCode(g.ErrorCode), len(g.Members))
	}
	if g, _ := shared(); g.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(g.Members) != 0 {
		t.Errorf("sg to bob without DESCRIBE on orders: %v %d members, want TOPIC_AUTHORIZATION_FAILED and none", kerr.ErrorForCode(g.ErrorCode), len(g.Members))
	}
	allowBob(t, tc, adm, kadm.NewACLs().Topics("orders").Operations(kadm.OpDescribe), "bob sees g848's member with DESCRIBE on orders", func() error {
		g, err := consumer()
		if err == nil && (g.ErrorCode != 0 || len(g.Members) != 1) {
			err = fmt.Errorf("%v, %d members", kerr.ErrorForCode(g.ErrorCode), len(g.Members))
		}
		return err
	})
	if g, _ := consumer(); g.AuthorizedOperations != 1<<int8(kmsg.ACLOperationDescribe) {
		t.Errorf("bob's operations on g848: %b, want DESCRIBE", g.AuthorizedOperations)
	}
	// sg's coordinator may be another broker, which applies the ACL in its time.
	tc.waitFor("bob sees sg's member with DESCRIBE on orders", 10*time.Second, func() error {
		g, err := shared()
		if err == nil && (g.ErrorCode != 0 || len(g.Members) != 1) {
			err = fmt.Errorf("%v, %d members", kerr.ErrorForCode(g.ErrorCode), len(g.Members))
		}
		return err
	})
	if g, _ := shared(); g.AuthorizedOperations != 1<<int8(kmsg.ACLOperationDescribe) {
		t.Errorf("bob's operations on sg: %b, want DESCRIBE", g.AuthorizedOperations)
	}
}

// ConsumerGroupHeartbeat and ShareGroupHeartbeat as KafkaApis since
// KAFKA-18813 and KAFKA-18817: with READ on the group, bob's heartbeat
// subscribing a topic he may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED;
// with DESCRIBE on it, he joins.
func TestACLsGroupHeartbeatNeedsTopicDescribe(t *testing.T) {
	tc, adm, users := aclCluster(t, func(c *Config) { c.Groups.ConsumerProtocol, c.Groups.ShareProtocol = true, true })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bob := tc.client(users["bob"])
	consumer := func() int16 {
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.SetVersion(1)
		hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "gbob", "bob-member-00000000001", 0, 30000
		hb.SubscribedTopicNames, hb.Topics = []string{"orders"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		r, err := hb.RequestWith(ctx, bob)
		if err != nil {
			return -1
		}
		return r.ErrorCode
	}
	shared := func() int16 {
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = "sbob", "bob-member-00000000002", 0, []string{"orders"}
		r, err := hb.RequestWith(ctx, bob)
		if err != nil {
			return -1
		}
		return r.ErrorCode
	}
	allowBob(t, tc, adm, kadm.NewACLs().Groups("gbob", "sbob").Operations(kadm.OpRead), "bob's heartbeats pass the group check", func() error {
		for _, c := range []int16{consumer(), shared()} {
			if c == kerr.GroupAuthorizationFailed.Code || c == -1 {
				return fmt.Errorf("heartbeat: %v", kerr.ErrorForCode(c))
			}
		}
		return nil
	})
	if c := consumer(); c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("bob's ConsumerGroupHeartbeat subscribing orders without DESCRIBE on it: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(c))
	}
	if c := shared(); c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("bob's ShareGroupHeartbeat subscribing orders without DESCRIBE on it: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(c))
	}
	allowBob(t, tc, adm, kadm.NewACLs().Topics("orders").Operations(kadm.OpDescribe), "bob joins with DESCRIBE on orders", func() error {
		if c, s := consumer(), shared(); c != 0 || s != 0 {
			return fmt.Errorf("consumer %v, share %v", kerr.ErrorForCode(c), kerr.ErrorForCode(s))
		}
		return nil
	})
}
