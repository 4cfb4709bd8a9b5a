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

// The group APIs as KafkaApis checks them: bob, without any ACL, is
// refused DescribeGroups, DeleteGroups and ConsumerGroupDescribe
// (GROUP_AUTHORIZATION_FAILED per group) and lists none of the groups the
// admin (a super user) lists; a DESCRIBE ACL on the group lets him see it.
func TestACLsGuardTheGroupAPIs(t *testing.T) {
	tc, adm, users := aclCluster(t, func(c *Config) { c.Groups.ConsumerProtocol = true })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 0, LeaderEpoch: -1})
	bobCl := tc.client(users["bob"])
	bob := kadm.NewClient(bobCl)
	listed := func(a *kadm.Client) bool {
		l, err := a.ListGroups(ctx)
		if err != nil {
			t.Fatalf("ListGroups: %v", err)
		}
		_, ok := l["g1"]
		return ok
	}
	tc.waitFor("the admin commits to g1 and lists it", 20*time.Second, func() error {
		if r, err := adm.CommitOffsets(ctx, "g1", offs); err != nil || r.Error() != nil {
			return fmt.Errorf("commit: %v %v", err, r.Error())
		}
		if !listed(adm) {
			return errors.New("g1 not listed")
		}
		return nil
	})
	if listed(bob) {
		t.Error("bob lists g1 without DESCRIBE on it or on the cluster")
	}
	// Sent to g1's coordinator directly: bob, without DESCRIBE on g1,
	// cannot find it (FindCoordinator is refused, TestACLsFindCoordinator).
	bobAtCoord := bobCl.Broker(int(groupCoordinatorOf(tc, adm, "g1")))
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"g1"}
	if r, err := dg.RequestWith(ctx, bobAtCoord); err != nil || len(r.Groups) != 1 || r.Groups[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("bob's DescribeGroups: %+v %v, want GROUP_AUTHORIZATION_FAILED", r, err)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g1"}
	if r, err := del.RequestWith(ctx, bobAtCoord); err != nil || len(r.Groups) != 1 || r.Groups[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("bob's DeleteGroups: %+v %v, want GROUP_AUTHORIZATION_FAILED", r, err)
	}
	cgd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cgd.Groups = []string{"g1"}
	if r, err := cgd.RequestWith(ctx, bobAtCoord); err != nil || len(r.Groups) != 1 || r.Groups[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("bob's ConsumerGroupDescribe: %+v %v, want GROUP_AUTHORIZATION_FAILED", r, err)
	}
	describe := kadm.NewACLs().Allow("User:bob").AllowHosts("*").Groups("g1").Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
	if _, err := adm.CreateACLs(ctx, describe); err != nil {
		t.Fatal(err)
	}
	tc.waitFor("bob lists g1 with DESCRIBE on it", 10*time.Second, func() error {
		if !listed(bob) {
			return kerr.GroupAuthorizationFailed
		}
		return nil
	})
	// Through FindCoordinator, which the broker asked answers once it has
	// applied the ACL too.
	tc.waitFor("bob describes g1 with DESCRIBE on it", 10*time.Second, func() error {
		if r, err := dg.RequestWith(ctx, bobCl); err != nil || len(r.Groups) != 1 || r.Groups[0].ErrorCode != 0 {
			return fmt.Errorf("bob's DescribeGroups with DESCRIBE: %+v %v", r, err)
		}
		return nil
	})
	if r, err := del.RequestWith(ctx, bobCl); err != nil || len(r.Groups) != 1 || r.Groups[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("bob's DeleteGroups with DESCRIBE only: %+v %v, want GROUP_AUTHORIZATION_FAILED", r, err)
	}
}

// The admin APIs as KafkaApis and ControllerApis check them: bob, without
// any ACL, is refused DescribeConfigs, AlterConfigs and
// IncrementalAlterConfigs on a topic (TOPIC_AUTHORIZATION_FAILED) and on a
// broker (CLUSTER_AUTHORIZATION_FAILED), CreatePartitions and
// DeleteRecords (TOPIC_AUTHORIZATION_FAILED) and AlterUserScramCredentials
// (CLUSTER_AUTHORIZATION_FAILED); the admin's same requests go through.
func TestACLsGuardTheAdminAPIs(t *testing.T) {
	tc, adm, users := aclCluster(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader := ordersLeader(tc)
	bobCl := tc.client(users["bob"])
	bob := bobCl.Broker(int(leader))
	broker := fmt.Sprint(leader)
	want := func(what string, got, want int16) {
		t.Helper()
		if got != want {
			t.Errorf("bob's %s: %v, want %v", what, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
		}
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	for _, r := range []struct {
		rt   kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeTopic, "orders"}, {kmsg.ConfigResourceTypeBroker, broker}} {
		dr := kmsg.NewDescribeConfigsRequestResource()
		dr.ResourceType, dr.ResourceName = r.rt, r.name
		dc.Resources = append(dc.Resources, dr)
	}
	if r, err := dc.RequestWith(ctx, bob); err != nil || len(r.Resources) != 2 {
		t.Errorf("bob's DescribeConfigs: %+v %v", r, err)
	} else {
		want("DescribeConfigs of a topic", r.Resources[0].ErrorCode, kerr.TopicAuthorizationFailed.Code)
		want("DescribeConfigs of a broker", r.Resources[1].ErrorCode, kerr.ClusterAuthorizationFailed.Code)
	}
	ac := kmsg.NewPtrAlterConfigsRequest()
	ar := kmsg.NewAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeTopic, "orders"
	ac.Resources = append(ac.Resources, ar)
	if r, err := ac.RequestWith(ctx, bob); err != nil || len(r.Resources) != 1 {
		t.Errorf("bob's AlterConfigs: %+v %v", r, err)
	} else {
		want("AlterConfigs of a topic", r.Resources[0].ErrorCode, kerr.TopicAuthorizationFailed.Code)
	}
	iac := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ir := kmsg.NewIncrementalAlterConfigsRequestResource()
	ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceTypeBroker, broker
	iac.Resources = append(iac.Resources, ir)
	if r, err := iac.RequestWith(ctx, bob); err != nil || len(r.Resources) != 1 {
		t.Errorf("bob's IncrementalAlterConfigs: %+v %v", r, err)
	} else {
		want("IncrementalAlterConfigs of a broker", r.Resources[0].ErrorCode, kerr.ClusterAuthorizationFailed.Code)
	}
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.TimeoutMillis = 10000
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = "orders", 2
	cp.Topics = append(cp.Topics, cpt)
	if r, err := cp.RequestWith(ctx, bob); err != nil || len(r.Topics) != 1 {
		t.Errorf("bob's CreatePartitions: %+v %v", r, err)
	} else {
		want("CreatePartitions", r.Topics[0].ErrorCode, kerr.TopicAuthorizationFailed.Code)
	}
	dr := kmsg.NewPtrDeleteRecordsRequest()
	dr.TimeoutMillis = 10000
	drt := kmsg.NewDeleteRecordsRequestTopic()
	drt.Topic = "orders"
	drt.Partitions = append(drt.Partitions, kmsg.DeleteRecordsRequestTopicPartition{Partition: 0, Offset: -1})
	dr.Topics = append(dr.Topics, drt)
	if r, err := dr.RequestWith(ctx, bob); err != nil || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Errorf("bob's DeleteRecords: %+v %v", r, err)
	} else {
		want("DeleteRecords", r.Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed.Code)
	}
	up := kadm.UpsertSCRAM{User: "mallory", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "m-pw"}
	res, err := kadm.NewClient(bobCl).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{up})
	if err == nil {
		err = res.Error() // kadm answers a refused user's result as the call's error
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("bob's AlterUserScramCredentials: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	// Metadata by topic ID (v12+): the ID answered, the name withheld.
	var topics kadm.TopicDetails
	tc.waitFor("the admin describes orders", 10*time.Second, func() error {
		topics, err = adm.ListTopics(ctx, "orders")
		if err == nil {
			err = topics["orders"].Err
		}
		return err
	})
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = append(md.Topics, kmsg.MetadataRequestTopic{TopicID: topics["orders"].ID})
	if r, err := md.RequestWith(ctx, bob); err != nil || len(r.Topics) != 1 {
		t.Errorf("bob's Metadata by ID: %+v %v", r, err)
	} else if mt := r.Topics[0]; mt.Topic != nil || mt.TopicID != topics["orders"].ID || mt.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("bob's Metadata by ID: name %v id %v %v, want a null name, the ID and TOPIC_AUTHORIZATION_FAILED", mt.Topic, mt.TopicID, kerr.ErrorForCode(mt.ErrorCode))
	}
	// The admin's: forwarded and applied.
	if r, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("600000")}}, "orders"); err != nil || r[0].Err != nil {
		t.Errorf("the admin's IncrementalAlterConfigs: %+v %v", r, err)
	}
	if r, err := adm.CreatePartitions(ctx, 1, "orders"); err != nil || r["orders"].Err != nil {
		t.Errorf("the admin's CreatePartitions: %+v %v", r, err)
	}
}

// The transaction and share APIs as KafkaApis checks them: bob, without
// any ACL, is refused AddPartitionsToTxn and TxnOffsetCommit on his
// TransactionalId (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); with WRITE on
// it, on the topic (TOPIC_AUTHORIZATION_FAILED) and the group
// (GROUP_AUTHORIZATION_FAILED); WriteTxnMarkers needs CLUSTER_ACTION,
// ShareFetch and ShareAcknowledge READ on the group, ShareGroupDescribe
// DESCRIBE on it.
func TestACLsGuardTheTxnAndShareAPIs(t *testing.T) {
	tc, adm, users := aclCluster(t, func(c *Config) { c.Groups.ShareProtocol = true })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader := ordersLeader(tc)
	bob := tc.client(users["bob"]).Broker(int(leader))
	// A client's AddPartitionsToTxn is v3 at most (v4+ is a leader's, KIP-890).
	bobV3 := tc.client(users["bob"], kgo.MaxVersions(kversion.V3_5_0())).Broker(int(leader))
	addParts := func() int16 {
		t.Helper()
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 3
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = "tx1", 1, 0
		req.Topics = append(req.Topics, kmsg.AddPartitionsToTxnRequestTopic{Topic: "orders", Partitions: []int32{0}})
		r, err := req.RequestWith(ctx, bobV3)
		if err != nil || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			t.Fatalf("bob's AddPartitionsToTxn: %+v %v", r, err)
		}
		return r.Topics[0].Partitions[0].ErrorCode
	}
	commit := func() int16 {
		t.Helper()
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = "tx1", "g", 1, 0, -1
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "orders"
		rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitRequestTopicPartition{Partition: 0, Offset: 0, LeaderEpoch: -1})
		req.Topics = append(req.Topics, rt)
		r, err := req.RequestWith(ctx, bob)
		if err != nil || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			t.Fatalf("bob's TxnOffsetCommit: %+v %v", r, err)
		}
		return r.Topics[0].Partitions[0].ErrorCode
	}
	want := func(what string, got, want int16) {
		t.Helper()
		if got != want {
			t.Errorf("bob's %s: %v, want %v", what, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
		}
	}
	want("AddPartitionsToTxn", addParts(), kerr.TransactionalIDAuthorizationFailed.Code)
	want("TxnOffsetCommit", commit(), kerr.TransactionalIDAuthorizationFailed.Code)
	wm := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.Committed = 1, true
	m.Topics = append(m.Topics, kmsg.WriteTxnMarkersRequestMarkerTopic{Topic: "orders", Partitions: []int32{0}})
	wm.Markers = append(wm.Markers, m)
	if r, err := wm.RequestWith(ctx, bob); err != nil || len(r.Markers) != 1 || len(r.Markers[0].Topics) != 1 {
		t.Errorf("bob's WriteTxnMarkers: %+v %v", r, err)
	} else {
		want("WriteTxnMarkers", r.Markers[0].Topics[0].Partitions[0].ErrorCode, kerr.ClusterAuthorizationFailed.Code)
	}
	sf := kmsg.NewPtrShareFetchRequest()
	sf.GroupID, sf.MemberID, sf.MaxWaitMillis, sf.MaxBytes = kmsg.StringPtr("sg"), kmsg.StringPtr("m1"), 10, 1<<20
	if r, err := sf.RequestWith(ctx, bob); err != nil {
		t.Errorf("bob's ShareFetch: %v", err)
	} else {
		want("ShareFetch", r.ErrorCode, kerr.GroupAuthorizationFailed.Code)
	}
	sa := kmsg.NewPtrShareAcknowledgeRequest()
	sa.GroupID, sa.MemberID = kmsg.StringPtr("sg"), kmsg.StringPtr("m1")
	if r, err := sa.RequestWith(ctx, bob); err != nil {
		t.Errorf("bob's ShareAcknowledge: %v", err)
	} else {
		want("ShareAcknowledge", r.ErrorCode, kerr.GroupAuthorizationFailed.Code)
	}
	sgd := kmsg.NewPtrShareGroupDescribeRequest()
	sgd.GroupIDs = []string{"sg"}
	if r, err := sgd.RequestWith(ctx, bob); err != nil || len(r.Groups) != 1 {
		t.Errorf("bob's ShareGroupDescribe: %+v %v", r, err)
	} else {
		want("ShareGroupDescribe", r.Groups[0].ErrorCode, kerr.GroupAuthorizationFailed.Code)
	}
	txw := kadm.NewACLs().Allow("User:bob").AllowHosts("*").TransactionalIDs("tx1").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral)
	if _, err := adm.CreateACLs(ctx, txw); err != nil {
		t.Fatal(err)
	}
	tc.waitFor("bob's WRITE on tx1 applied", 10*time.Second, func() error {
		if c := addParts(); c != kerr.TopicAuthorizationFailed.Code {
			return fmt.Errorf("AddPartitionsToTxn: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(c))
		}
		return nil
	})
	want("TxnOffsetCommit with WRITE on tx1", commit(), kerr.GroupAuthorizationFailed.Code)
}

// DescribeCluster is answered to every principal; the cluster's
// authorized operations, when asked, are the ones the principal's ACLs
// (or super user) allow: none for bob, DESCRIBE once granted, every
// cluster operation for the admin.
func TestACLsDescribeClusterAuthorizedOperations(t *testing.T) {
	tc, adm, users := aclCluster(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ops := func(a kmsg.Requestor) (int32, error) {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeClusterAuthorizedOperations = true
		r, err := req.RequestWith(ctx, a)
		if err != nil {
			return 0, err
		}
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil || len(r.Brokers) == 0 {
			return 0, fmt.Errorf("DescribeCluster: %v, %d brokers", err, len(r.Brokers))
		}
		return r.ClusterAuthorizedOperations, nil
	}
	bob := tc.client(users["bob"])
	if got, err := ops(bob); err != nil || got != 0 {
		t.Errorf("bob's cluster operations: %b %v, want none", got, err)
	}
	all := int32(0)
	for _, op := range []kmsg.ACLOperation{kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs,
		kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe} {
		all |= 1 << int8(op)
	}
	admin := tc.client(kgo.SASL(scram.Auth{User: testAdmin, Pass: testPassword}.AsSha512Mechanism()))
	if got, err := ops(admin); err != nil || got != all {
		t.Errorf("the admin's cluster operations: %b %v, want %b", got, err, all)
	}
	describe := kadm.NewACLs().Allow("User:bob").AllowHosts("*").Clusters().Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
	if _, err := adm.CreateACLs(ctx, describe); err != nil {
		t.Fatal(err)
	}
	tc.waitFor("bob's DESCRIBE on the cluster applied", 10*time.Second, func() error {
		if got, err := ops(bob); err != nil || got != 1<<int8(kmsg.ACLOperationDescribe) {
			return fmt.Errorf("bob's cluster operations %b (%v)", got, err)
		}
		return nil
	})
}

// groupCoordinatorOf is group's coordinator as the admin (a super user)
// finds it, creating __consumer_offsets on first use: for a request sent to
// it directly by a principal that may not find it.
func groupCoordinatorOf(tc *testCluster, adm *kadm.Client, group string) int32 {
	tc.t.Helper()
	id := int32(-1)
	tc.waitFor(group+"'s coordinator found", 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rs := adm.FindGroupCoordinators(ctx, group)
		r, ok := rs[group]
		if !ok {
			return errors.New("no answer")
		}
		if r.Err != nil {
			return r.Err
		}
		id = r.NodeID
		return nil
	})
	return id
}

// ordersLeader waits for the leader of orders-0.
func ordersLeader(tc *testCluster) int32 {
	tc.t.Helper()
	leader := int32(-1)
	tc.waitFor("orders-0 has a leader", 10*time.Second, func() error {
		if leader = tc.leader("orders", 0); leader < 0 {
			return errors.New("no leader yet")
		}
		return nil
	})
	return leader
}
