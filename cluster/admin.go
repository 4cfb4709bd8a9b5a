package cluster

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/controller"
	"gregor/cluster/replica"
	"gregor/cluster/wire"
)

var _ wire.AdminBackend = (*Broker)(nil)

// ForwardToController implements wire.AdminBackend: the request goes to the
// active controller, found and retried as broker heartbeats are. A single
// broker has no controller quorum: every item answers INVALID_REQUEST
// naming the fix.
func (b *Broker) ForwardToController(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	b.mu.RLock()
	q := b.q
	b.mu.RUnlock()
	if q == nil {
		return controller.ErrorResponse(req, kerr.InvalidRequest.Code,
			"a single broker has no controller quorum for this request: start the cluster with --nodes 2 or more"), nil
	}
	resp, err := q.client.Request(ctx, req)
	if err != nil {
		// The controller stayed out of reach; the client retries.
		return controller.ErrorResponse(req, kerr.NotController.Code, err.Error()), nil
	}
	return resp, nil
}

// LogDir implements wire.AdminBackend.
func (b *Broker) LogDir() string { return b.cfg.DataDir }

// Partitions implements wire.AdminBackend.
func (b *Broker) Partitions() []*replica.Partition { return b.snapshotPartitions() }
