package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"gregor/cluster/share"
)

// findShare asks FindCoordinator for key type SHARE (2) through cl and
// returns the one coordinator it names, or its error.
func findShare(t *testing.T, cl *kgo.Client, key string) (int32, *kerr.Error) {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKey, req.CoordinatorKeys = 2, key, []string{key}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatalf("FindCoordinator %q: %v", key, err)
	}
	if len(resp.Coordinators) != 1 {
		t.Fatalf("FindCoordinator %q: %d coordinators", key, len(resp.Coordinators))
	}
	c := resp.Coordinators[0]
	if e := kerr.ErrorForCode(c.ErrorCode); e != nil {
		return -1, e.(*kerr.Error)
	}
	return c.NodeID, nil
}

// FindCoordinator v6 key type SHARE names a share partition's share
// coordinator, the leader of its __share_group_state partition (KIP-932,
// KafkaApis.getCoordinator); below v6 the type is INVALID_REQUEST, as is a
// key that is not groupId:topicId:partition.
func TestFindShareCoordinator(t *testing.T) {
	tc, group := shareCluster(t, 1, nil)
	id := tc.any().Image().Topics["q"].ID
	key := share.StateKey{Group: group, TopicID: id, Partition: 0}.CoordinatorKey()
	cl := tc.client()
	// The first lookup may create __share_group_state; then its leader.
	tc.waitFor("a share coordinator", 30*time.Second, func() error {
		node, e := findShare(t, cl, key)
		if e != nil {
			return e
		}
		if want := tc.shareStateLeader(group, "q"); node != want {
			return fmt.Errorf("FindCoordinator named %d, the state partition's leader is %d", node, want)
		}
		return nil
	})
	for _, bad := range []string{group, group + ":" + "notauuid:0", key + ":1", ":" + key[len(group)+1:]} {
		if _, e := findShare(t, cl, bad); e != kerr.InvalidRequest {
			t.Errorf("key %q: %v, want INVALID_REQUEST", bad, e)
		}
	}
	v5 := kversion.Stable()
	v5.SetMaxKeyVersion(10, 5)
	if _, e := findShare(t, tc.client(kgo.MaxVersions(v5)), key); e != kerr.InvalidRequest {
		t.Errorf("key type SHARE at v5: %v, want INVALID_REQUEST", e)
	}
}

// A broker without share groups has no share coordinator to name.
func TestFindShareCoordinatorWithoutShareGroups(t *testing.T) {
	tc := startClusterWith(t, 1, 0, nil)
	tc.createTopic("q", 1, 1, nil)
	key := share.StateKey{Group: "g", TopicID: tc.any().Image().Topics["q"].ID}.CoordinatorKey()
	if _, e := findShare(t, tc.client(), key); e != kerr.CoordinatorNotAvailable {
		t.Fatalf("%v, want COORDINATOR_NOT_AVAILABLE", e)
	}
}
