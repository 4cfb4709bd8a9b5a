package controller

import (
	"slices"

	"gregor/cluster/meta"
)

// electPolicy is the election policy of the controller that proposed a record.
// It travels inside every record that may elect, so that every node's FSM
// computes the same image whatever its own configuration says.
type electPolicy struct {
	// UncleanDefault is unclean.leader.election.enable for topics that do
	// not set it.
	UncleanDefault bool `json:"u,omitempty"`
	// ElectOutsideISR is the planted bug (DESIGN section 6).
	ElectOutsideISR bool `json:"b,omitempty"`
}

// elect picks a leader for p given which brokers are live:
//
//  1. planted bug: the first live replica NOT in the ISR, ISR = [it];
//  2. clean: the first replica (assignment order) in the ISR and live;
//  3. unclean (if enabled): the first live replica, ISR = [it];
//  4. otherwise meta.NoLeader, ISR unchanged (offline until an ISR member returns).
//
// It returns the new leader and ISR; p is not modified.
func elect(p meta.Partition, live func(int32) bool, unclean bool, pol electPolicy) (int32, []int32) {
	if pol.ElectOutsideISR {
		for _, r := range p.Replicas {
			if live(r) && !p.InISR(r) {
				return r, []int32{r}
			}
		}
	}
	for _, r := range p.Replicas {
		if live(r) && p.InISR(r) {
			return r, p.ISR
		}
	}
	if unclean {
		for _, r := range p.Replicas {
			if live(r) {
				return r, []int32{r}
			}
		}
	}
	return meta.NoLeader, p.ISR
}

// setLeaderAndISR installs a new leader and ISR, bumping LeaderEpoch on a
// leader change and PartitionEpoch on any change. It reports whether
// anything changed.
func setLeaderAndISR(p *meta.Partition, leader int32, isr []int32) bool {
	changed := false
	if leader != p.Leader {
		p.Leader = leader
		p.LeaderEpoch++
		changed = true
	}
	if !slices.Equal(isr, p.ISR) {
		p.ISR = slices.Clone(isr)
		changed = true
	}
	if changed {
		p.PartitionEpoch++
	}
	return changed
}

// withoutBroker removes a broker that just became ineligible (fenced,
// shutting down, re-registered) from p: out of the ISR unless it is the last
// member (an ISR is never empty, as in KRaft), and, if it led, a new leader
// is elected. live must already report the broker as not live.
func withoutBroker(p *meta.Partition, id int32, live func(int32) bool, unclean bool, pol electPolicy) bool {
	isr := p.ISR
	if p.InISR(id) && len(p.ISR) > 1 {
		isr = slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == id })
	}
	leader := p.Leader
	if leader == id {
		q := *p
		q.ISR = isr
		leader, isr = elect(q, live, unclean, pol)
	}
	return setLeaderAndISR(p, leader, isr)
}

// electIfOffline tries to bring an offline partition back when a broker
// becomes live.
func electIfOffline(p *meta.Partition, live func(int32) bool, unclean bool, pol electPolicy) bool {
	if p.Leader != meta.NoLeader {
		return false
	}
	leader, isr := elect(*p, live, unclean, pol)
	if leader == meta.NoLeader {
		return false
	}
	return setLeaderAndISR(p, leader, isr)
}
