package txn

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Description is one transactional id as DescribeTransactions and
// ListTransactions show it.
type Description struct {
	ID         string
	ProducerID int64
	Epoch      int16
	State      State
	TimeoutMs  int32
	StartMs    int64
	Partitions []TopicPartition
}

func (m *Meta) describe() Description {
	return Description{ID: m.ID, ProducerID: m.ProducerID, Epoch: m.Epoch, State: m.State, TimeoutMs: m.TimeoutMs,
		StartMs: m.StartMs, Partitions: m.SortedPartitions()}
}

// Describe handles one id of DescribeTransactions
// (handleDescribeTransactions): TRANSACTIONAL_ID_NOT_FOUND for an id this
// coordinator has no metadata for.
func (c *Coordinator) Describe(id string) (Description, *kerr.Error) {
	if id == "" {
		return Description{}, kerr.InvalidRequest
	}
	s, e := c.shardFor(id)
	if e != nil {
		return Description{}, e
	}
	s.mu.Lock()
	defer s.unlock()
	m := s.txns[id]
	if m == nil || m.State == Dead {
		return Description{}, kerr.TransactionalIDNotFound
	}
	return m.describe(), nil
}

// Filter selects transactions for List (ListTransactions v0-1).
type Filter struct {
	States      []string
	ProducerIDs []int64
	// MinDurationMs keeps transactions running longer than this (v1); -1
	// for all.
	MinDurationMs int64
}

// List handles ListTransactions (listTransactionStates): every transaction
// of the loaded shards the filter keeps, by id; unknown state names are
// reported back. COORDINATOR_LOAD_IN_PROGRESS while a shard loads.
func (c *Coordinator) List(f Filter) ([]Description, []string, *kerr.Error) {
	shards, loading := c.loadedShards()
	if loading {
		return nil, nil, kerr.CoordinatorLoadInProgress
	}
	var unknown []string
	var states []State
	for _, n := range f.States {
		if st := State(n); slices.Contains(AllStates, st) {
			states = append(states, st)
		} else {
			unknown = append(unknown, n)
		}
	}
	var out []Description
	for _, s := range shards {
		now := s.nowMs()
		s.mu.Lock()
		for _, m := range s.txns {
			switch {
			case m.State == Dead: // transient, being expired
			case len(f.ProducerIDs) > 0 && !slices.Contains(f.ProducerIDs, m.ProducerID):
			case len(f.States) > 0 && !slices.Contains(states, m.State):
			case f.MinDurationMs >= 0 && now-m.StartMs <= f.MinDurationMs:
			default:
				out = append(out, m.describe())
			}
		}
		s.unlock()
	}
	slices.SortFunc(out, func(a, b Description) int { return strings.Compare(a.ID, b.ID) })
	return out, unknown, nil
}
