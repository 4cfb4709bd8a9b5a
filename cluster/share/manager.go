package share

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Manager is the share-partition leader role of one broker (Kafka's
// SharePartitionManager): the share partitions of the partitions it leads
// and the share sessions of the members fetching from it.
type Manager struct {
	cfg Config
	env Env

	mu       sync.Mutex // guards the maps; never held across a wait
	parts    map[spKey]*SharePartition
	sessions map[sessionKey]*session
	closed   bool // the broker stopped: lock timers do nothing
}

// Close stops the role: pending lock expiries do nothing from now on.
func (m *Manager) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
}

func (m *Manager) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

type spKey struct {
	group, topic string
	partition    int32
}

type sessionKey struct{ group, member string }

// session is a share session (KIP-932): the partitions a member fetches
// from this broker, and the epoch its next request must carry.
type session struct {
	next  int32
	parts map[tidp]struct{}
}

type tidp struct {
	id        [16]byte
	partition int32
}

// NewManager returns the share-partition leader role.
func NewManager(cfg Config, env Env) *Manager {
	cfg.Defaults()
	return &Manager{cfg: cfg, env: env, parts: map[spKey]*SharePartition{}, sessions: map[sessionKey]*session{}}
}

// maxSharePartitions bounds the share partitions a broker keeps: past it a
// fetch for a new one is refused (retried by the client).
const maxSharePartitions = 100_000

// partition returns the loaded share partition of group on topic/p, loading
// it on first use or after a leadership change (the reload after a
// failover). The caller holds the returned partition's lock.
func (m *Manager) partition(ctx context.Context, group, topic string, id [16]byte, p int32) (*SharePartition, *kerr.Error) {
	rp := m.env.Partition(topic, p)
	if rp == nil {
		return nil, kerr.NotLeaderForPartition
	}
	st := rp.State()
	if st.Leader != m.env.NodeID() {
		return nil, kerr.NotLeaderForPartition
	}
	k := spKey{group, topic, p}
	m.mu.Lock()
	sp := m.parts[k]
	if sp == nil || sp.leaderEp != st.LeaderEpoch || sp.p != rp {
		if len(m.parts) >= maxSharePartitions {
			m.mu.Unlock()
			return nil, kerr.CoordinatorLoadInProgress
		}
		sp = &SharePartition{m: m, key: StateKey{Group: group, TopicID: id, Partition: p}, topic: topic, p: rp,
			leaderEp: st.LeaderEpoch, mu: make(chan struct{}, 1), avail: make(chan struct{})}
		m.parts[k] = sp
	}
	m.mu.Unlock()
	if !sp.lock(ctx) {
		return nil, kerr.RequestTimedOut
	}
	if sp.stale || !sp.leading() {
		sp.unlock()
		m.drop(k, sp)
		return nil, kerr.NotLeaderForPartition
	}
	if !sp.loaded {
		if e := sp.load(ctx); e != nil {
			sp.unlock()
			if e == kerr.FencedLeaderEpoch || e == kerr.FencedStateEpoch {
				m.drop(k, sp)
			}
			return nil, retriable(e)
		}
	}
	return sp, nil
}

// retriable maps a share-coordinator error to one a share consumer retries
// on the same partition (Kafka's SharePartition maps persister errors so).
func retriable(e *kerr.Error) *kerr.Error {
	switch e {
	case kerr.NotCoordinator, kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable
	case kerr.FencedLeaderEpoch:
		return kerr.NotLeaderForPartition
	}
	return e
}

func (m *Manager) drop(k spKey, sp *SharePartition) {
	m.mu.Lock()
	if m.parts[k] == sp {
		delete(m.parts, k)
	}
	m.mu.Unlock()
}

// settings are a group's effective settings now.
func (m *Manager) settings(group string) groupSettings {
	return m.cfg.settings(m.env.GroupConfig(group))
}

// LockDuration is the acquisition lock a group's records get.
func (m *Manager) LockDuration(group string) time.Duration { return m.settings(group).lock }

// ackOne applies one partition's acknowledgements, carried by via (the
// request kind, for the node log's trace).
func (m *Manager) ackOne(ctx context.Context, group, member, via string, id [16]byte, p int32, batches []AckBatch) *kerr.Error {
	topic, _, ok := m.env.TopicByID(id)
	if !ok {
		return kerr.UnknownTopicID
	}
	sp, e := m.partition(ctx, group, topic, id, p)
	if e != nil {
		return e
	}
	defer sp.unlock()
	if e := sp.acknowledge(ctx, member, via, batches, m.settings(group).lock); e != nil {
		return retriable(e)
	}
	return nil
}

// closeSession releases what member holds on the session's partitions.
func (m *Manager) closeSession(ctx context.Context, group, member string, s *session) {
	for tp := range s.parts {
		topic, _, ok := m.env.TopicByID(tp.id)
		if !ok {
			continue
		}
		sp, e := m.partition(ctx, group, topic, tp.id, tp.partition)
		if e != nil {
			continue // not led here any more: the locks lapse there
		}
		if e := sp.releaseMember(ctx, member); e != nil {
			m.cfg.Logger.Warn("share session close: writing released records", "group", group, "topic", topic, "err", e)
		}
		sp.unlock()
	}
}

// session validates a request's session epoch and returns the session it
// names (KIP-932's share session epochs): 0 opens a new one, -1 closes it,
// any other must be the next epoch of an open one.
func (m *Manager) session(group, member string, epoch int32, open bool) (*session, *kerr.Error) {
	k := sessionKey{group, member}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[k]
	switch {
	case epoch == 0 && open:
		if s == nil && len(m.sessions) >= maxSessions {
			return nil, kerr.ShareSessionLimitReached
		}
		s = &session{next: 1, parts: map[tidp]struct{}{}}
		m.sessions[k] = s
		return s, nil
	case epoch == 0:
		return nil, kerr.InvalidShareSessionEpoch
	case s == nil:
		return nil, kerr.ShareSessionNotFound
	case epoch == -1:
		delete(m.sessions, k)
		return s, nil
	case epoch != s.next:
		return nil, kerr.InvalidShareSessionEpoch
	}
	s.next++
	return s, nil
}

// maxSessions is max.share.session.cache.slots' role: a bound on sessions
// a broker keeps (Kafka's default is 1000 per broker; larger here, as one
// broker serves a whole test's consumers).
const maxSessions = 10_000

func memberValid(member *string) bool {
	return member != nil && *member != "" && len(*member) <= 36
}

// hint fills a partition error's leader hint and the endpoint it names.
func (m *Manager) hint(topic string, p int32, endpoints map[int32]LeaderHint) (int32, int32) {
	h, ok := m.env.Leader(topic, p)
	if !ok {
		return -1, -1
	}
	endpoints[h.Node] = h
	return h.Node, h.Epoch
}
