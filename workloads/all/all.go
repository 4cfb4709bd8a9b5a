// Package all is the one registration of gregor's workloads: the harness,
// the matrix, validate and the command ask it and never name a workload.
// Adding a workload is a package under workloads/ with a kit.Descriptor,
// and its line here.
package all

import (
	"gregor/workloads/authz"
	"gregor/workloads/eos"
	"gregor/workloads/group"
	"gregor/workloads/kit"
	"gregor/workloads/queue"
	"gregor/workloads/share"
	"gregor/workloads/txn"
)

// Workloads are every workload, in the order --workload's help lists them;
// the first is the default.
var Workloads = kit.NewRegistry(
	queue.Descriptor{},
	group.Descriptor{},
	txn.Descriptor{},
	eos.Descriptor{},
	share.Descriptor{},
	authz.Descriptor{},
)
