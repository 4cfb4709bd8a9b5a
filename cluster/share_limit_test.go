package cluster

import "testing"

// A record acquired at the delivery count limit whose lock dies with its
// leader is archived by the next leader, as an elapsed lock at the limit
// is: the state written while it was acquired (another record's
// acknowledgement persists the partition) holds it as available at the
// limit, and a reload that took it as available delivered it past the
// limit (share-over-limit on the sim under leader kills).
func TestShareFailoverAtTheLimitArchives(t *testing.T) {
	tc, group := shareCluster(t, 2, func(c *Config) { c.Share.DeliveryLimit = 2 })
	a := tc.shareMember(group, "member-a", "q")
	if got := acquired(a.fetch()); len(got) != 2 || got[0] != 1 {
		t.Fatalf("a acquired %v, want 0-1 at delivery count 1", got)
	}
	// Release 0 (count 1, below the limit): acquired again at the limit.
	got := acquired(a.fetch(ackBatch(0, 0, 2)))
	if got[0] != 2 {
		t.Fatalf("after releasing 0, a acquired %v, want 0 at delivery count 2", got)
	}
	// Accepting 1 writes the state while 0 is acquired at count 2.
	if code := a.ack(1, 1, 1); code != 0 {
		t.Fatalf("accepting 1: error %d", code)
	}
	tc.kill(int(tc.leader("q", 0)))
	b := tc.shareMember(group, "member-b", "q")
	if got := acquired(b.fetch()); len(got) != 0 {
		t.Fatalf("after the leader's failover b acquired %v: offset 0 was delivered at the limit (2) and 1 accepted", got)
	}
}
