package harness

import (
	"slices"
	"strings"
	"testing"

	"gregor/workloads/group"
)

// The cluster's transaction.version reaches every node's command line (all
// brokers of a cluster must run the same one), and a version the brokers do
// not run is refused before anything boots, naming the fix.
func TestClusterTransactionVersion(t *testing.T) {
	c := DefaultCluster()
	if c.TransactionVersion != 2 {
		t.Fatalf("default transaction version %d, want 2 (KIP-890, a new Kafka 4 cluster's)", c.TransactionVersion)
	}
	c.Nodes, c.Controllers, c.TransactionVersion = 2, 1, 1
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Spec("tv", "gregor").Nodes {
		i := slices.Index(n.Args, "--transaction-version")
		if i < 0 || i+1 >= len(n.Args) || n.Args[i+1] != "1" {
			t.Fatalf("node %d args %v: no --transaction-version 1", n.ID, n.Args)
		}
	}
	c.TransactionVersion = 3
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--transaction-version 3: give 1") {
		t.Fatalf("transaction version 3: %v", err)
	}
}

// KIP-848 reaches the brokers only when a run asks for it: the group
// workload's --group-protocol consumer puts --group-protocols
// classic,consumer on every node's command line (the brokers offer the
// consumer protocol only then); the classic protocol, or another workload,
// leaves the brokers classic-only.
func TestClusterConsumerProtocol(t *testing.T) {
	offered := func(c Config) bool {
		t.Helper()
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		for _, n := range c.Cluster.Spec("cp", "gregor").Nodes {
			i := slices.Index(n.Args, "--group-protocols")
			if i >= 0 && i+1 < len(n.Args) && n.Args[i+1] == "classic,consumer" {
				return true
			}
		}
		return false
	}
	c := DefaultConfig()
	c.Workload = group.Name
	if offered(c) {
		t.Fatal("classic group run: its brokers offer the consumer protocol")
	}
	c.Group.GroupProtocol = group.ProtocolConsumer
	if !offered(c) {
		t.Fatal("--group-protocol consumer: no broker is started with --group-protocols classic,consumer")
	}
	c.Workload = "queue"
	c.Group = group.DefaultConfig()
	if offered(c) {
		t.Fatal("queue run: its brokers offer the consumer protocol")
	}
}
