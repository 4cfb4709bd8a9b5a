package controller

import (
	"slices"
)

// assignReplicas spreads partitions over the live brokers round-robin,
// like Kafka's rack-unaware assignment: partition p's first replica is
// broker (start+p) mod n, followers follow in broker-id order. start
// rotates with every topic created so that first replicas (the initial
// leaders) do not pile up on the lowest ids.
func assignReplicas(img *Image, partitions int32, rf int16) ([][]int32, bool) {
	var live []int32
	for _, id := range img.BrokerIDs() {
		if img.Brokers[id].Live() {
			live = append(live, id)
		}
	}
	n := len(live)
	if rf <= 0 || int(rf) > n || partitions <= 0 {
		return nil, false
	}
	start := int(img.TopicsCreated % int64(n))
	out := make([][]int32, partitions)
	for p := range out {
		reps := make([]int32, rf)
		for j := range reps {
			reps[j] = live[(start+p+j)%n]
		}
		out[p] = reps
	}
	return out, true
}

// validAssignment checks a caller-supplied assignment: every partition
// numbered 0..n-1 once, replicas distinct registered brokers, same count.
func validAssignment(img *Image, as [][]int32) bool {
	for _, reps := range as {
		if len(reps) == 0 || len(reps) != len(as[0]) {
			return false
		}
		for i, r := range reps {
			if _, ok := img.Brokers[r]; !ok || slices.Contains(reps[:i], r) {
				return false
			}
		}
	}
	return len(as) > 0
}
