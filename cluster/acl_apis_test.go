package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"g1"}
	if r, err := dg.RequestWith(ctx, bobCl); err != nil || len(r.Groups) != 1 || r.Groups[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("bob's DescribeGroups: %+v %v, want GROUP_AUTHORIZATION_FAILED", r, err)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g1"}
	if r, err := del.RequestWith(ctx, bobCl); err != nil || len(r.Groups) != 1 || r.Groups[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("bob's DeleteGroups: %+v %v, want GROUP_AUTHORIZATION_FAILED", r, err)
	}
	cgd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cgd.Groups = []string{"g1"}
	if r, err := cgd.RequestWith(ctx, bobCl); err != nil || len(r.Groups) != 1 || r.Groups[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
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
	if r, err := dg.RequestWith(ctx, bobCl); err != nil || len(r.Groups) != 1 || r.Groups[0].ErrorCode != 0 {
		t.Errorf("bob's DescribeGroups with DESCRIBE: %+v %v", r, err)
	}
	if r, err := del.RequestWith(ctx, bobCl); err != nil || len(r.Groups) != 1 || r.Groups[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("bob's DeleteGroups with DESCRIBE only: %+v %v, want GROUP_AUTHORIZATION_FAILED", r, err)
	}
}
