package group

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/coordinator"
	"gregor/cluster/meta"
)

// KIP-848 consumer groups (group.protocol=consumer), as Kafka 4's
// GroupMetadataManager, ConsumerGroup and ConsumerGroupMember keep them:
// the broker computes a target assignment whenever the group epoch moves
// past the target assignment epoch, and each member reconciles towards it
// (CurrentAssignmentBuilder, reconcile.go), a partition reaching a new owner
// only once its previous owner has revoked it.

// memberState is Kafka's MemberState of a consumer group member.
type memberState string

const (
	memberStable memberState = "STABLE"
	// memberUnrevoked: the member must revoke partitionsPendingRevocation
	// before it moves to the next epoch.
	memberUnrevoked memberState = "UNREVOKED_PARTITIONS"
	// memberUnreleased: the member is at the target epoch but waits for
	// partitions other members still own.
	memberUnreleased memberState = "UNRELEASED_PARTITIONS"
)

// The member epochs a heartbeat sends to leave (ConsumerGroupHeartbeatRequest).
const (
	leaveEpoch       = -1
	staticLeaveEpoch = -2
)

// cmember is a consumer group member: its metadata
// (ConsumerGroupMemberMetadataValue) and current assignment
// (ConsumerGroupCurrentMemberAssignmentValue).
type cmember struct {
	id         string
	instanceID *string
	rackID     *string
	clientID   string
	clientHost string
	// subscribedNames / regex: the subscription (KIP-848; the regex, v1+,
	// matches whole topic names, RE2 syntax as Kafka's RE2J).
	subscribedNames []string
	regex           string
	assignor        string
	rebalance       time.Duration

	// Invariant: epoch >= prevEpoch; assigned and pendingRevocation are
	// disjoint; pendingRevocation is empty unless state is memberUnrevoked.
	epoch, prevEpoch  int32
	state             memberState
	assigned          assignment
	pendingRevocation assignment
	// assignedAt is the member epoch at which each assigned partition came
	// to it (KIP-1251: a commit with an older epoch is still accepted for a
	// partition the member held then).
	assignedAt map[tp]int32
	// left: a static member that sent epoch -2 (its epoch is then -2); it
	// keeps its assignment for the next member with its instance id, which
	// takes it over, or until its session expires.
	left bool
	// committedEpoch is the member epoch of its last committed
	// ConsumerGroupCurrentMemberAssignment record (hasCommitted: there is
	// one): what Kafka's OffsetFetch validates against, reading the group
	// as of the last committed offset, while epoch may have moved in a
	// heartbeat whose records are still being written.
	committedEpoch int32
	hasCommitted   bool

	sessionTimer, rebalanceTimer coordinator.Timer
	timerSeq                     uint64
}

func (m *cmember) stopTimers() {
	for _, t := range []coordinator.Timer{m.sessionTimer, m.rebalanceTimer} {
		if t != nil {
			t.Stop()
		}
	}
	m.sessionTimer, m.rebalanceTimer = nil, nil
	m.timerSeq++
}

// metadataValue is the member's ConsumerGroupMemberMetadataValue.
func (m *cmember) metadataValue() *cmemberValue {
	return &cmemberValue{InstanceID: m.instanceID, RackID: m.rackID, ClientID: m.clientID, ClientHost: m.clientHost,
		Names: m.subscribedNames, Regex: m.regex, Assignor: m.assignor, RebalanceMs: m.rebalance.Milliseconds()}
}

// currentValue is the member's ConsumerGroupCurrentMemberAssignmentValue.
func (m *cmember) currentValue() *ccurrentValue {
	v := &ccurrentValue{Epoch: m.epoch, PrevEpoch: m.prevEpoch, State: m.state, Assigned: m.assigned, Pending: m.pendingRevocation}
	for k, e := range m.assignedAt {
		v.AssignedAt = append(v.AssignedAt, assignedAt{Topic: k.topic, Partition: k.partition, Epoch: e})
	}
	slices.SortFunc(v.AssignedAt, func(a, b assignedAt) int {
		if c := cmpID(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return v
}

// consumerGroup is the KIP-848 state of a group of type consumer.
type consumerGroup struct {
	// Invariant: assignmentEpoch <= epoch; both never decrease.
	epoch, assignmentEpoch int32
	members                map[string]*cmember
	// static maps group.instance.id to the member id holding it.
	static map[string]string
	// target is the target assignment by member id (at assignmentEpoch).
	target map[string]assignment
	// subscription is the subscription metadata the target was computed
	// from (Kafka's ConsumerGroupPartitionMetadata): a change of it (a new
	// topic matching a regex, more partitions) bumps the group epoch.
	subscription map[string]topicMeta
	// owners is Kafka's currentPartitionEpoch: the member that holds each
	// partition, assigned or pending revocation. Invariant: a partition is
	// in exactly one member's assigned or pending set iff it is here, as
	// that member (unless the planted bug AssignBeforeRevoke is on).
	owners map[tp]string
	// bugged: the planted bug AssignBeforeRevoke is on, so owners may be
	// shared and the ownership invariant does not hold.
	bugged bool
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{members: map[string]*cmember{}, static: map[string]string{}, target: map[string]assignment{},
		subscription: map[string]topicMeta{}, owners: map[tp]string{}}
}

// state is the group's ConsumerGroupState (Kafka: Empty, Assigning,
// Reconciling, Stable).
func (cg *consumerGroup) state() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.epoch > cg.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.epoch != cg.assignmentEpoch || m.state != memberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// claim and release keep owners in step with a member's assigned and
// pending partitions.
func (cg *consumerGroup) claim(m *cmember) {
	for _, a := range []assignment{m.assigned, m.pendingRevocation} {
		a.each(func(t topicID, p int32) { cg.owners[tp{t, p}] = m.id })
	}
}

func (cg *consumerGroup) release(m *cmember) {
	for k, id := range cg.owners {
		if id == m.id {
			delete(cg.owners, k)
		}
	}
}

// preferredAssignor is Kafka's: the assignor most members name (ties: name
// order), else the default.
func (cg *consumerGroup) preferredAssignor() string {
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	best := ""
	for _, name := range slices.Sorted(maps.Keys(votes)) {
		if best == "" || votes[name] > votes[best] {
			best = name
		}
	}
	if best == "" {
		return defaultAssignor
	}
	return best
}

// subscribedTopics resolves a member's subscription against the metadata:
// the named topics that exist and the topics its regex matches whole
// (Kafka 4 matches internal topics too).
func memberTopics(m *cmember, im *meta.Image) []string {
	var out []string
	for _, n := range m.subscribedNames {
		if im.Topics[n] != nil {
			out = append(out, n)
		}
	}
	if m.regex != "" {
		if re, err := compileRegex(m.regex); err == nil {
			for _, n := range im.SortedTopics() {
				if re.MatchString(n) {
					out = append(out, n)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// compileRegex compiles a subscription regex to match whole topic names.
func compileRegex(re string) (*regexp.Regexp, error) { return regexp.Compile("^(?:" + re + ")$") }

// subscriptionMetadata is the metadata of every topic some member
// subscribes to.
func (cg *consumerGroup) subscriptionMetadata(im *meta.Image) map[string]topicMeta {
	out := map[string]topicMeta{}
	for _, m := range cg.members {
		for _, n := range memberTopics(m, im) {
			t := im.Topics[n]
			out[n] = topicMeta{Name: n, ID: topicID(t.ID), Partitions: int32(len(t.Partitions))}
		}
	}
	return out
}

// computeTarget is TargetAssignmentBuilder: the preferred assignor over the
// members and the subscription metadata, at the group epoch.
func (cg *consumerGroup) computeTarget(im *meta.Image) map[string]assignment {
	in := assignorInput{subs: map[string][]topicID{}, prev: cg.target, topics: map[topicID]topicMeta{}}
	for _, t := range cg.subscription {
		in.topics[t.ID] = t
	}
	for _, id := range slices.Sorted(maps.Keys(cg.members)) {
		m := cg.members[id]
		in.members = append(in.members, id)
		for _, n := range memberTopics(m, im) {
			if t, ok := cg.subscription[n]; ok {
				in.subs[id] = append(in.subs[id], t.ID)
			}
		}
		slices.SortFunc(in.subs[id], cmpID)
	}
	out := assignors[cg.preferredAssignor()](in)
	for id, a := range out {
		out[id] = a.norm()
	}
	return out
}

// validateCommit is ConsumerGroup.validateOffsetCommit: with no member id
// and epoch -1 only an empty group takes commits (an admin's); a member
// must be known and commit at its current epoch (STALE_MEMBER_EPOCH
// otherwise, KIP-848); a consumer-protocol member commits with
// OffsetCommit v9+ (oldVersion: a non-transactional commit below it).
func (cg *consumerGroup) validateCommit(memberID string, epoch int32, oldVersion bool) *kerr.Error {
	if epoch < 0 && len(cg.members) == 0 {
		return nil
	}
	m := cg.members[memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID
	case oldVersion:
		return kerr.UnsupportedVersion
	case epoch != m.epoch:
		return kerr.StaleMemberEpoch
	}
	return nil
}

// validateFetch is ConsumerGroup.validateOffsetFetch (OffsetFetch v9+):
// no member id and a negative epoch is an admin's fetch; otherwise the
// member must be known, at its epoch. Kafka reads the member as of the
// last committed offset (members.get(memberId, lastCommittedOffset)), so
// a fetch sent at epoch E while a heartbeat moving the member to E+1 is
// still being written is answered, not STALE_MEMBER_EPOCH: the client
// cannot know E+1 before that heartbeat's answer, which waits for the
// commit. The committed epoch is accepted, and the current one too: gregor
// does not revert a write that failed (Kafka's CoordinatorRuntime does),
// so after one the current epoch can be what a later heartbeat answered.
func (cg *consumerGroup) validateFetch(memberID *string, epoch int32) *kerr.Error {
	if memberID == nil && epoch < 0 {
		return nil
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	m := cg.members[id]
	switch {
	case m == nil:
		return kerr.UnknownMemberID
	case epoch != m.epoch && (!m.hasCommitted || epoch != m.committedEpoch):
		return kerr.StaleMemberEpoch
	}
	return nil
}

// noteCommitted records the member epochs of committed
// ConsumerGroupCurrentMemberAssignment records (validateFetch's view of
// the committed state). Caller holds the shard's mu.
func (s *shard) noteCommitted(recs []coordinator.Record) {
	for _, r := range recs {
		var k recordKey
		var v ccurrentValue
		if r.Value == nil || json.Unmarshal(r.Key, &k) != nil || k.Kind != kindCGCurrent || json.Unmarshal(r.Value, &v) != nil {
			continue
		}
		if g := s.groups[k.Group]; g != nil && g.cg != nil {
			if m := g.cg.members[k.Member]; m != nil {
				m.committedEpoch, m.hasCommitted = v.Epoch, true
			}
		}
	}
}
