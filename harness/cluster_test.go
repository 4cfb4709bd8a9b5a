package harness

import (
	"slices"
	"strings"
	"testing"

	"gregor/history"
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

// A run's brokers offer every group protocol, gregor broker's default
// (Kafka 4.2's): the harness restricts none of them (no --group-protocols on
// a node's command line), so the group workload's --group-protocol consumer
// and the share workload find theirs whatever else the run is; a
// --broker-arg still can.
func TestClusterGroupProtocols(t *testing.T) {
	restricted := func(what string, c Config) bool {
		t.Helper()
		if err := c.Validate(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for _, n := range c.Cluster.Spec("cp", "gregor").Nodes {
			if slices.ContainsFunc(n.Args, func(a string) bool { return strings.HasPrefix(a, "--group-protocols") }) {
				return true
			}
		}
		return false
	}
	c := DefaultConfig()
	c.Workload = group.Name
	if restricted("classic group run", c) {
		t.Fatal("classic group run: its brokers' group protocols are restricted")
	}
	c.Group.GroupProtocol = group.ProtocolConsumer
	if restricted("consumer group run", c) {
		t.Fatal("--group-protocol consumer: its brokers' group protocols are restricted")
	}
	c.Workload, c.Group = history.WorkloadShare, group.DefaultConfig()
	if restricted("share run", c) {
		t.Fatal("share run: its brokers' group protocols are restricted")
	}
	c.Cluster.BrokerArgs = []string{"--group-protocols=classic"}
	if !restricted("a --broker-arg", c) {
		t.Fatal("--broker-arg --group-protocols=classic did not reach the brokers")
	}
}
