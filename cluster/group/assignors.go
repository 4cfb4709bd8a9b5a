package group

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"slices"
)

// The server-side assignors of KIP-848 consumer groups
// (group.consumer.assignors: uniform first, then range), and the assignment
// type they and the reconciliation share.

// topicID is a topic's id, as the consumer protocol names topics. It is a
// JSON map key in hex.
type topicID [16]byte

func (t topicID) MarshalText() ([]byte, error) { return []byte(hex.EncodeToString(t[:])), nil }

func (t *topicID) UnmarshalText(b []byte) error {
	if hex.DecodedLen(len(b)) != len(t) {
		return fmt.Errorf("topic id %q is not 16 bytes of hex", b)
	}
	_, err := hex.Decode(t[:], b)
	return err
}

// tp is one partition of a topic, by id.
type tp struct {
	topic     topicID
	partition int32
}

// assignment is partitions by topic id. Invariant (norm): every list is
// sorted, without duplicates, and not empty.
type assignment map[topicID][]int32

func (a assignment) has(t topicID, p int32) bool {
	_, ok := slices.BinarySearch(a[t], p)
	return ok
}

func (a assignment) add(t topicID, p int32) {
	ps := a[t]
	if i, ok := slices.BinarySearch(ps, p); !ok {
		a[t] = slices.Insert(ps, i, p)
	}
}

func (a assignment) each(f func(t topicID, p int32)) {
	for _, t := range slices.SortedFunc(maps.Keys(a), cmpID) {
		for _, p := range a[t] {
			f(t, p)
		}
	}
}

func (a assignment) size() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

func (a assignment) clone() assignment {
	c := assignment{}
	for t, ps := range a {
		if len(ps) > 0 {
			c[t] = slices.Clone(ps)
		}
	}
	return c
}

func (a assignment) equal(b assignment) bool {
	return maps.EqualFunc(a.clone(), b.clone(), slices.Equal)
}

// norm returns a in its invariant form.
func (a assignment) norm() assignment {
	c := assignment{}
	for t, ps := range a {
		ps = slices.Clone(ps)
		slices.Sort(ps)
		if ps = slices.Compact(ps); len(ps) > 0 {
			c[t] = ps
		}
	}
	return c
}

func cmpID(a, b topicID) int { return slices.Compare(a[:], b[:]) }

// topicMeta is what an assignor knows of a subscribed topic (Kafka's
// TopicMetadata in the group's subscription metadata).
type topicMeta struct {
	Name       string  `json:"name"`
	ID         topicID `json:"id"`
	Partitions int32   `json:"partitions"`
}

// assignorInput is one target assignment's input: each member's subscribed
// topics (resolved to ids) and its current target, which the assignors keep
// where they can (stickiness).
type assignorInput struct {
	members []string // sorted
	subs    map[string][]topicID
	prev    map[string]assignment
	topics  map[topicID]topicMeta
}

// assignor computes a target assignment: every partition of a subscribed
// topic to exactly one member subscribed to it.
type assignor func(in assignorInput) map[string]assignment

// assignors are the server-side assignors, by name (Kafka's
// UniformAssignor.NAME, RangeAssignor.NAME).
var assignors = map[string]assignor{"uniform": uniformAssign, "range": rangeAssign}

// defaultAssignor is the first of group.consumer.assignors.
const defaultAssignor = "uniform"

// uniformAssign follows Kafka's UniformAssignor: balanced (member counts
// differ by at most one among members of the same subscription) and
// sticky (a partition stays with its previous target owner when that
// keeps the balance).
func uniformAssign(in assignorInput) map[string]assignment {
	out := map[string]assignment{}
	count := map[string]int{}
	for _, m := range in.members {
		out[m] = assignment{}
	}
	eligible := func(t topicID) []string {
		var ms []string
		for _, m := range in.members {
			if slices.Contains(in.subs[m], t) {
				ms = append(ms, m)
			}
		}
		return ms
	}
	// The sticky pass keeps at most the fair share when every member
	// subscribes alike; otherwise the rebalance pass below evens it out.
	stickyCap := math.MaxInt
	if homogeneous(in) && len(in.members) > 0 {
		total := 0
		for _, t := range in.topics {
			total += int(t.Partitions)
		}
		stickyCap = (total + len(in.members) - 1) / len(in.members)
	}
	var unassigned []tp
	for _, t := range slices.SortedFunc(maps.Keys(in.topics), cmpID) {
		el := eligible(t)
		if len(el) == 0 {
			continue
		}
		for p := int32(0); p < in.topics[t].Partitions; p++ {
			owner := ""
			for _, m := range el {
				if in.prev[m].has(t, p) {
					owner = m
					break
				}
			}
			if owner != "" && count[owner] < stickyCap {
				out[owner].add(t, p)
				count[owner]++
				continue
			}
			unassigned = append(unassigned, tp{t, p})
		}
	}
	for _, x := range unassigned {
		el := eligible(x.topic)
		best := slices.MinFunc(el, func(a, b string) int { return cmp.Or(cmp.Compare(count[a], count[b]), cmp.Compare(a, b)) })
		out[best].add(x.topic, x.partition)
		count[best]++
	}
	rebalanceUniform(in, out, count)
	return out
}

func homogeneous(in assignorInput) bool {
	for _, m := range in.members {
		if !slices.Equal(in.subs[m], in.subs[in.members[0]]) {
			return false
		}
	}
	return true
}

// rebalanceUniform moves partitions from the fullest member to the emptiest
// one that may take them until counts differ by at most one (bounded: each
// move shrinks the spread).
func rebalanceUniform(in assignorInput, out map[string]assignment, count map[string]int) {
	for range 10_000 {
		moved := false
		byCount := slices.Clone(in.members)
		slices.SortFunc(byCount, func(a, b string) int { return cmp.Or(cmp.Compare(count[b], count[a]), cmp.Compare(a, b)) })
		for _, from := range byCount {
			for i := len(byCount) - 1; i >= 0 && !moved; i-- {
				to := byCount[i]
				if count[from]-count[to] <= 1 {
					break
				}
				out[from].each(func(t topicID, p int32) {
					if !moved && slices.Contains(in.subs[to], t) {
						removePartition(out[from], t, p)
						out[to].add(t, p)
						count[from]--
						count[to]++
						moved = true
					}
				})
			}
			if moved {
				break
			}
		}
		if !moved {
			return
		}
	}
}

func removePartition(a assignment, t topicID, p int32) {
	ps := a[t]
	if i, ok := slices.BinarySearch(ps, p); ok {
		ps = slices.Delete(ps, i, i+1)
	}
	if len(ps) == 0 {
		delete(a, t)
	} else {
		a[t] = ps
	}
}

// rangeAssign follows Kafka's RangeAssignor (server side): per topic, its
// subscribers in member id order take consecutive ranges, the first
// (partitions % members) one partition more.
func rangeAssign(in assignorInput) map[string]assignment {
	out := map[string]assignment{}
	for _, m := range in.members {
		out[m] = assignment{}
	}
	for t, meta := range in.topics {
		var subs []string
		for _, m := range in.members {
			if slices.Contains(in.subs[m], t) {
				subs = append(subs, m)
			}
		}
		if len(subs) == 0 {
			continue
		}
		n := int(meta.Partitions)
		per, extra := n/len(subs), n%len(subs)
		p := 0
		for i, m := range subs {
			k := per
			if i < extra {
				k++
			}
			for j := 0; j < k; j++ {
				out[m].add(t, int32(p))
				p++
			}
		}
	}
	return out
}
