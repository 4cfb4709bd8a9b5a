// Package coordinatortest holds the test fakes the coordinators' tests
// share. Only tests import it.
package coordinatortest

import (
	"context"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/coordinator"
)

// MemLog is an in-memory partition of an internal topic: a coordinator.Log
// whose leadership, append failures and replay timing a test sets.
type MemLog struct {
	mu sync.Mutex
	// leader, epoch: what LeaderEpoch reports; an Append in another epoch,
	// or while not leading, is NOT_LEADER_OR_FOLLOWER, as a replica fences
	// a deposed coordinator's write.
	leader bool
	epoch  int32
	recs   []coordinator.Record
	fail   *kerr.Error   // non-nil: appends fail with it
	block  chan struct{} // non-nil: Replay waits for it to close
}

var _ coordinator.Log = (*MemLog)(nil)

// NewMemLog returns an empty log this broker leads in epoch.
func NewMemLog(epoch int32) *MemLog { return &MemLog{leader: true, epoch: epoch} }

// LeaderEpoch implements coordinator.Log.
func (l *MemLog) LeaderEpoch() (int32, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epoch, l.leader
}

// Append implements coordinator.Log: committed at once.
func (l *MemLog) Append(_ context.Context, epoch int32, recs []coordinator.Record) (int64, *kerr.Error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.leader || epoch != l.epoch {
		return 0, kerr.NotLeaderForPartition
	}
	if l.fail != nil {
		return 0, l.fail
	}
	base := int64(len(l.recs))
	l.recs = append(l.recs, recs...)
	return base, nil
}

// Replay implements coordinator.Log, over the records as of the call (after
// a BlockReplays channel closes). It ends early with ctx's error only while
// blocked: an unblocked replay of memory is instant.
func (l *MemLog) Replay(ctx context.Context, fn func(int64, coordinator.Record)) error {
	l.mu.Lock()
	block := l.block
	l.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for i, r := range l.Records() {
		fn(int64(i), r)
	}
	return nil
}

// SetLeader sets what LeaderEpoch reports.
func (l *MemLog) SetLeader(lead bool, epoch int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leader, l.epoch = lead, epoch
}

// FailAppends makes every later Append fail with e; nil lets them succeed
// again.
func (l *MemLog) FailAppends(e *kerr.Error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fail = e
}

// BlockReplays makes every later Replay wait until ch closes (or its
// context ends); nil stops blocking.
func (l *MemLog) BlockReplays(ch chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.block = ch
}

// Add appends records whatever the leadership, as if an earlier leader had
// written them: what the next load replays.
func (l *MemLog) Add(recs ...coordinator.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, recs...)
}

// Records is a copy of the log, in offset order.
func (l *MemLog) Records() []coordinator.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.recs)
}
