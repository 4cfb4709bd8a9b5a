package harness

import (
	"context"
	"fmt"
	"net"
	"time"

	"gregor/history"
	"gregor/nemesis"
	"gregor/runtime/clientlink"
	"gregor/workloads/eos"
	"gregor/workloads/group"
	"gregor/workloads/queue"
	"gregor/workloads/txn"
)

// Workload is what a test drives: clients that write the history while the
// nemesis runs, then a final read of every key.
type Workload interface {
	// Run drives the clients until ctx ends, then waits for the operations
	// in flight.
	Run(ctx context.Context) error
	// FinalRead reads every key from offset 0 to its high watermark.
	FinalRead(ctx context.Context) error
	// Ops counts completed operations, for the progress line.
	Ops() int64
	// Crash is the client-crash nemesis's hook (nemesis.Runner.Crash).
	Crash() (process int, tearDown func(), ok bool)
}

// clientSteps runs the group-only nemesis steps on a workload
// (nemesis.Runner.Clients); nil for workloads without consumer groups.
type clientSteps func(ctx context.Context, k nemesis.Kind) ([]int, error)

// newWorkload builds the test's workload on the brokers of bootstrap: the
// group workload for Workload "group".
// Every client dials through links, so client-link faults can act on it.
func (t *Test) newWorkload(bootstrap []string, links *clientlink.Links, h *history.Writer, epoch time.Time) (Workload, clientSteps, error) {
	if t.Workload == WorkloadEOS {
		ec := t.eosConfig(bootstrap)
		ec.Dial = func(proc int) func(context.Context, string, string) (net.Conn, error) { return links.Dialer(proc) }
		wl, err := eos.New(ec, h, epoch)
		return wl, nil, err
	}
	if t.Workload == WorkloadTxn {
		// The transactional producers dial through links: the client-link
		// faults act on them (the requests KIP-890 is about).
		tc := t.txnConfig(bootstrap)
		tc.Dial = func(proc int) func(context.Context, string, string) (net.Conn, error) { return links.Dialer(proc) }
		wl, err := txn.New(tc, h, epoch)
		return wl, nil, err
	}
	producers := t.queueConfig(bootstrap)
	producers.Dial = func(proc int) func(context.Context, string, string) (net.Conn, error) { return links.Dialer(proc) }
	if t.Workload != WorkloadGroup {
		wl, err := queue.New(producers, h, epoch)
		return wl, nil, err
	}
	wl, err := group.New(producers, t.groupConfig(), h, epoch)
	if err != nil {
		return nil, nil, err
	}
	return wl, func(ctx context.Context, k nemesis.Kind) ([]int, error) {
		switch k {
		case nemesis.ConsumerRestart:
			return wl.RollingRestart(ctx)
		case nemesis.ConsumerJoin:
			p, err := wl.Join(ctx)
			if err != nil {
				return nil, err
			}
			return []int{p}, nil
		}
		return nil, fmt.Errorf("nemesis %s is not a consumer step", k)
	}, nil
}
