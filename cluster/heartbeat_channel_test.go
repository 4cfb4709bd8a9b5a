package cluster

import "testing"

// Each broker's heartbeats go over a controller channel of their own, as
// Kafka's BrokerLifecycleManager has its own NodeToControllerChannelManager:
// a kconn connection serves one request at a time, and heartbeats that
// shared it with ISR changes queued behind a restart's burst of
// AlterPartition requests past the session, so the controller fenced live
// brokers over and over (the share workload's 50 __share_group_state
// partitions on the sim: every broker fenced every few seconds, each
// fencing's elections the next burst; docs/MEASUREMENTS.md section 10).
func TestHeartbeatsHaveTheirOwnControllerChannel(t *testing.T) {
	tc := startClusterWith(t, 2, 1, nil)
	for _, b := range tc.brokers[:2] {
		q := b.q
		if q == nil || q.life == nil {
			t.Fatalf("broker %d has no quorum link", b.cfg.NodeID)
		}
		if q.hbClient == nil || q.hbClient == q.client || q.hbClient.Transport != q.heartbeats || q.heartbeats == q.transport {
			t.Fatalf("broker %d: heartbeats share the controller channel of ISR changes and forwarding", b.cfg.NodeID)
		}
		if q.life.Fenced() {
			t.Errorf("broker %d fenced after boot", b.cfg.NodeID)
		}
	}
}
