package harness

import (
	"gregor/workloads/eos"
	"gregor/workloads/group"
	"gregor/workloads/queue"
	"gregor/workloads/txn"
)

// The workloads' names as the harness's tests spell them: the harness
// itself never names a workload (its registry does: workloads/all).
const (
	WorkloadQueue = queue.Name
	WorkloadGroup = group.Name
	WorkloadEOS   = eos.Name
	WorkloadTxn   = txn.Name
)

// linkResponseTimeout is the producers' response timeout in a run with
// client-link faults (queue.LinkResponseTimeout).
const linkResponseTimeout = queue.LinkResponseTimeout

// queueConfig is the queue producers' config as a run of c builds it.
func (c *Config) queueConfig(bootstrap []string) queue.Config {
	readers := 0
	if c.Workload == WorkloadQueue {
		readers = c.Consumers
	}
	return queue.Producers(c.shared(), bootstrap, readers)
}
