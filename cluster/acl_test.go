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
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"gregor/internal/security"
)

// aclCluster is three SASL_PLAINTEXT brokers with the authorizer on, the
// admin client (the brokers' own user, a super user), and SCRAM users
// alice and bob without any ACL.
func aclCluster(t *testing.T, more func(*Config)) (*testCluster, *kadm.Client, map[string]kgo.Opt) {
	t.Helper()
	mod, _ := secured(t, security.SASLPlaintext)
	tc := startCluster(t, 3, func(c *Config) {
		mod(c)
		c.Security.Authorizer = true
		if more != nil {
			more(c)
		}
	})
	admin := tc.client(kgo.SASL(scram.Auth{User: testAdmin, Pass: testPassword}.AsSha512Mechanism()))
	adm := kadm.NewClient(admin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	users := map[string]kgo.Opt{}
	for _, u := range []string{"alice", "bob"} {
		up := kadm.UpsertSCRAM{User: u, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: u + "-pw"}
		if res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{up}); err != nil || res.Error() != nil {
			t.Fatalf("AlterUserScramCredentials %s: %v %v", u, err, res.Error())
		}
		users[u] = kgo.SASL(scram.Auth{User: u, Pass: u + "-pw"}.AsSha256Mechanism())
	}
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	// fetchErr asks any broker's image for the leader: every image must
	// have replayed the topic first.
	for _, br := range tc.brokers {
		tc.waitFor("orders/0 has a leader in every broker's image", 10*time.Second, func() error {
			if tp := br.Image().Topics["orders"]; tp == nil || tp.Partitions[0].Leader < 0 {
				return errors.New("not yet")
			}
			return nil
		})
	}
	for _, br := range tc.brokers {
		addr := br.Advertised()
		for u, o := range users {
			tc.waitFor(u+" authenticates at "+addr, 10*time.Second, func() error { return pingWith(addr, o) })
		}
	}
	return tc, adm, users
}

// produceErr is the outcome of one record produced as a user with a fresh
// client (idempotence off: no IDEMPOTENT_WRITE question in the way).
func produceErr(tc *testCluster, user kgo.Opt, topic string) error {
	cl := tc.client(user, kgo.DisableIdempotentWrite(), kgo.RecordRetries(1), kgo.RequestRetries(2))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}

// fetchErr is the outcome of one fetch of the topic as a user.
func fetchErr(tc *testCluster, user kgo.Opt, topic string) error {
	cl := tc.client(user)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 100, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	leader := tc.leader(topic, 0)
	if leader < 0 {
		return errors.New("no leader")
	}
	resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}

// ACLs made, described and deleted with kadm; a producer refused, then
// allowed, then refused again once its ACL is gone; a consumer likewise;
// a user without CLUSTER ALTER cannot change ACLs.
func TestACLsGrantAndRevoke(t *testing.T) {
	tc, adm, users := aclCluster(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := produceErr(tc, users["alice"], "orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice without ACLs produced: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if err := fetchErr(tc, users["bob"], "orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob without ACLs fetched: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	write := kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("orders").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral)
	read := kadm.NewACLs().Allow("User:bob").AllowHosts("*").Topics("ord").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed)
	for _, b := range []*kadm.ACLBuilder{write, read} {
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("CreateAcls %s: %v", r.Principal, r.Err)
			}
		}
	}
	for _, br := range tc.brokers {
		tc.waitFor(fmt.Sprintf("broker %d applies the ACLs", br.cfg.NodeID), 10*time.Second, func() error {
			if len(br.Image().ACLs) != 2 {
				return errors.New("not yet")
			}
			return nil
		})
	}
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(described) != 1 {
		t.Fatalf("DescribeAcls: %+v %v", described, err)
	}
	if n := len(described[0].Described); described[0].Err != nil || n != 2 {
		t.Fatalf("DescribeAcls: %d bindings (%v), want 2; image %v; described %+v", n, described[0].Err, tc.any().Image().ACLs, described)
	}
	if err := produceErr(tc, users["alice"], "orders"); err != nil {
		t.Fatalf("alice with WRITE: %v", err)
	}
	if err := produceErr(tc, users["bob"], "orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob (READ only) produced: %v", err)
	}
	if err := fetchErr(tc, users["bob"], "orders"); err != nil {
		t.Errorf("bob with a PREFIXED READ: %v", err)
	}
	if err := fetchErr(tc, users["alice"], "orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("alice (WRITE only) fetched: %v", err)
	}
	bob := kadm.NewClient(tc.client(users["bob"]))
	if res, err := bob.CreateACLs(ctx, write); err == nil && (len(res) == 0 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed)) {
		t.Errorf("bob created an ACL: %+v, want CLUSTER_AUTHORIZATION_FAILED", res)
	}
	if _, err := bob.DescribeUserSCRAMs(ctx); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("bob described SCRAM users: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "g", "consumer", 10000, 10000
	join.Protocols = append(join.Protocols, kmsg.JoinGroupRequestProtocol{Name: "range"})
	// At the coordinator: bob may not find it (FindCoordinator DESCRIBE).
	if resp, err := join.RequestWith(ctx, tc.client(users["bob"]).Broker(int(groupCoordinatorOf(tc, adm, "g")))); err != nil || resp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("bob joined group g without READ on it: %+v %v, want GROUP_AUTHORIZATION_FAILED", resp, err)
	}
	del, err := adm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().AnyResource().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(del) != 1 || len(del[0].Deleted) != 1 {
		t.Fatalf("DeleteAcls: %+v %v, want alice's one binding", del, err)
	}
	tc.waitFor("alice refused again", 10*time.Second, func() error {
		if err := produceErr(tc, users["alice"], "orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			return fmt.Errorf("alice still produces: %v", err)
		}
		return nil
	})
}

// The planted bug keep-deleted-acls: a revoked WRITE keeps allowing.
func TestPlantedBugKeepDeletedACLs(t *testing.T) {
	tc, adm, users := aclCluster(t, func(c *Config) { c.KeepDeletedACLs = true })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	write := kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("orders").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral)
	if _, err := adm.CreateACLs(ctx, write); err != nil {
		t.Fatal(err)
	}
	tc.waitFor("alice allowed", 10*time.Second, func() error { return produceErr(tc, users["alice"], "orders") })
	if _, err := adm.DeleteACLs(ctx, write); err != nil {
		t.Fatal(err)
	}
	for _, br := range tc.brokers {
		tc.waitFor("the deletion applied", 10*time.Second, func() error {
			if br.q == nil || len(br.q.ctrl.Image().ACLs) != 0 {
				return errors.New("not yet")
			}
			return nil
		})
	}
	if err := produceErr(tc, users["alice"], "orders"); err != nil {
		t.Errorf("with the bug a deleted ACL still allows, got %v", err)
	}
}
