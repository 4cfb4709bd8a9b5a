package group

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/coordinator"
)

// State is a classic group's state, named as Kafka names it.
type State string

// The states of Kafka's GroupMetadata.
const (
	Empty               State = "Empty"
	PreparingRebalance  State = "PreparingRebalance"
	CompletingRebalance State = "CompletingRebalance"
	Stable              State = "Stable"
	Dead                State = "Dead"
)

// TopicPartition names a partition whose offset a group commits.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// committed is a committed offset and where its record is in the log.
type committed struct {
	offsetValue
	// logOffset orders commits that complete out of order: only a record
	// later in the log replaces an earlier one.
	logOffset int64
}

// member is one group member.
type member struct {
	id           string
	instanceID   *string
	clientID     string
	clientHost   string
	protocolType string
	// protocols in the member's order of preference.
	protocols  []kmsg.JoinGroupRequestProtocol
	session    time.Duration
	rebalance  time.Duration
	assignment []byte
	// joinWait / syncWait hold a parked JoinGroup / SyncGroup answer.
	// Invariant: each is nil or buffered with capacity 1, and is sent to at
	// most once before being set to nil (so it is empty while set); a
	// JoinGroup is parked only in PreparingRebalance, a SyncGroup only in
	// CompletingRebalance. invariants.go checks these and Group's.
	joinWait chan *kmsg.JoinGroupResponse
	syncWait chan *kmsg.SyncGroupResponse
	// sessionTimer expires the member; timerSeq tells a stale firing.
	sessionTimer coordinator.Timer
	timerSeq     uint64
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

func (m *member) supports(protocol string) bool {
	return slices.ContainsFunc(m.protocols, func(p kmsg.JoinGroupRequestProtocol) bool { return p.Name == protocol })
}

// respondJoin answers a parked JoinGroup, if any.
func (m *member) respondJoin(r *kmsg.JoinGroupResponse) {
	if m.joinWait != nil {
		m.joinWait <- r
		m.joinWait = nil
	}
}

// respondSync answers a parked SyncGroup, if any.
func (m *member) respondSync(r *kmsg.SyncGroupResponse) {
	if m.syncWait != nil {
		m.syncWait <- r
		m.syncWait = nil
	}
}

// fail answers every parked request of the member with e.
func (m *member) fail(e *kerr.Error) {
	m.respondJoin(joinError(e, m.id))
	m.respondSync(syncError(e))
}

func (m *member) stopSession() {
	if m.sessionTimer != nil {
		m.sessionTimer.Stop()
		m.sessionTimer = nil
	}
	m.timerSeq++
}

// Group is one classic group and its committed offsets.
type Group struct {
	id    string
	state State
	// known: the group exists (has had members, metadata or offsets), so
	// DescribeGroups and ListGroups show it.
	known        bool
	protocolType string
	protocol     string
	// Invariant: generation never decreases while the group lives
	// (checkedGeneration is the check's memory).
	generation        int32
	checkedGeneration int32
	// Invariant: leader == "" or leader is in members; not "" after the
	// join phase (CompletingRebalance, Stable).
	leader string
	// Invariant: keyed by member id; none in Empty or Dead; after the join
	// phase every member supports protocol.
	members map[string]*member
	// pending are member ids handed out with MEMBER_ID_REQUIRED (KIP-394)
	// that have not joined yet, with their expiry timers.
	pending map[string]coordinator.Timer
	// static maps group.instance.id to the member id holding it.
	// Invariant: every value is a key of members whose member has that
	// instance id, and every member with an instance id is in it.
	static map[string]string
	// rebalanceTimer ends a rebalance (rebalance timeout or initial delay).
	rebalanceTimer coordinator.Timer
	// initialDelay: the rebalance of an empty group is still waiting for
	// members; newJoins counts joins since it was last armed.
	initialDelay   bool
	newJoins       int
	delayRemaining time.Duration
	// syncing: the leader's assignment is being written; a repeated
	// SyncGroup from the leader does not write it again. Invariant: only in
	// CompletingRebalance.
	syncing bool
	offsets map[TopicPartition]committed
	// txnOffsets are offsets committed by transactions not yet ended, by
	// producer id (Kafka's pendingTransactionalOffsetCommits): the group
	// sees them only when the transaction's COMMIT marker lands on its
	// __consumer_offsets partition, and never after its ABORT. Invariant
	// (checked by invariants): per producer id (>= 0) at least one offset,
	// each at its log offset.
	txnOffsets map[int64]map[TopicPartition]committed
	// txnWrites are the TxnOffsetCommits whose writes are out, by producer
	// id. Invariant: per producer id at least one.
	txnWrites map[int64][]*txnWrite
	// cg is set while the group is of type consumer (KIP-848): a group is
	// classic or consumer, never both. Invariant: while set, the classic
	// membership is empty (members, pending, static; state Empty).
	cg *consumerGroup
}

func newGroup(id string) *Group {
	return &Group{id: id, state: Empty, members: map[string]*member{}, pending: map[string]coordinator.Timer{},
		static: map[string]string{}, offsets: map[TopicPartition]committed{}, txnOffsets: map[int64]map[TopicPartition]committed{},
		txnWrites: map[int64][]*txnWrite{}}
}

// State is the group's state.
func (g *Group) State() State { return g.state }

// Generation is the group's generation.
func (g *Group) Generation() int32 { return g.generation }

func (g *Group) stopTimers() {
	if g.rebalanceTimer != nil {
		g.rebalanceTimer.Stop()
		g.rebalanceTimer = nil
	}
	for id, t := range g.pending {
		t.Stop()
		delete(g.pending, id)
	}
	for _, m := range g.members {
		m.stopSession()
	}
	if g.cg != nil {
		for _, m := range g.cg.members {
			m.stopTimers()
		}
	}
}

// clearMembership forgets the members (a group tombstone on replay).
func (g *Group) clearMembership() {
	g.members = map[string]*member{}
	g.static = map[string]string{}
	g.leader, g.protocol, g.protocolType = "", "", ""
	g.state = Empty
	g.known = false
}

// restore sets the membership a groupValue record holds (replay).
func (g *Group) restore(v *groupValue) {
	g.clearMembership()
	g.known = true
	g.protocolType, g.protocol, g.generation, g.leader = v.ProtocolType, v.Protocol, v.Generation, v.Leader
	for _, mv := range v.Members {
		m := &member{id: mv.ID, instanceID: mv.InstanceID, clientID: mv.ClientID, clientHost: mv.ClientHost,
			protocolType: v.ProtocolType, session: time.Duration(mv.SessionMs) * time.Millisecond,
			rebalance: time.Duration(mv.RebalanceMs) * time.Millisecond, assignment: mv.Assignment,
			protocols: []kmsg.JoinGroupRequestProtocol{{Name: v.Protocol, Metadata: mv.Metadata}}}
		g.members[m.id] = m
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
	}
	if len(g.members) > 0 {
		g.state = Stable
	}
	if _, ok := g.members[g.leader]; !ok {
		g.leader = ""
	}
}

// value is the group's membership record.
func (g *Group) value() *groupValue {
	v := &groupValue{ProtocolType: g.protocolType, Protocol: g.protocol, Generation: g.generation, Leader: g.leader}
	for _, id := range g.memberIDs() {
		m := g.members[id]
		v.Members = append(v.Members, memberValue{ID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
			SessionMs: m.session.Milliseconds(), RebalanceMs: m.rebalance.Milliseconds(),
			Metadata: m.metadataFor(g.protocol), Assignment: m.assignment})
	}
	return v
}

func (g *Group) memberIDs() []string {
	return slices.Sorted(maps.Keys(g.members))
}

// candidates are the protocols every member supports.
func (g *Group) candidates() []string {
	var out []string
	first := true
	for _, id := range g.memberIDs() {
		m := g.members[id]
		var names []string
		for _, p := range m.protocols {
			names = append(names, p.Name)
		}
		if first {
			out, first = names, false
			continue
		}
		out = slices.DeleteFunc(out, func(n string) bool { return !slices.Contains(names, n) })
	}
	return out
}

// acceptsJoin reports whether a joiner's protocols fit the group (Kafka:
// same protocol type, and some protocol every member supports).
func (g *Group) acceptsJoin(protocolType string, protocols []kmsg.JoinGroupRequestProtocol, replacing string) bool {
	if len(protocols) == 0 || protocolType == "" {
		return false
	}
	others := 0
	for id := range g.members {
		if id != replacing {
			others++
		}
	}
	if others == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		ok := true
		for id, m := range g.members {
			if id != replacing && !m.supports(p.Name) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// selectProtocol is Kafka's vote: each member votes for its most preferred
// candidate; the most votes win (ties: the first candidate in name order).
func (g *Group) selectProtocol() string {
	cands := g.candidates()
	slices.Sort(cands)
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if slices.Contains(cands, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, c := range cands {
		if best == "" || votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

func (g *Group) allJoined() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if m.joinWait == nil {
			return false
		}
	}
	return true
}

func (g *Group) maxRebalance() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalance)
	}
	return d
}

func sameProtocols(a, b []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(a, b, func(x, y kmsg.JoinGroupRequestProtocol) bool {
		return x.Name == y.Name && bytes.Equal(x.Metadata, y.Metadata)
	})
}

// newMemberID is Kafka's form: client id, a dash, a UUID.
func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", clientID, b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func joinError(e *kerr.Error, memberID string) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.ErrorCode = e.Code
	r.Generation = -1
	r.MemberID = memberID
	return r
}

func syncError(e *kerr.Error) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.ErrorCode = e.Code
	return r
}
