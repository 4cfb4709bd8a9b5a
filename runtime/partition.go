package runtime

// Cuts is the meaning of Cluster.Partition, shared by every runtime: for each
// listed node, the listed nodes it must exchange no packets with — those that
// no group holds together with it. Nodes not listed do not appear.
// Invariant (checked by tests): cuts[a][b] == cuts[b][a], and never cuts[a][a].
func Cuts(groups [][]int32) map[int32]map[int32]bool {
	member := map[int32]map[int]bool{}
	for gi, g := range groups {
		for _, id := range g {
			if member[id] == nil {
				member[id] = map[int]bool{}
			}
			member[id][gi] = true
		}
	}
	cuts := make(map[int32]map[int32]bool, len(member))
	for a, ga := range member {
		cuts[a] = map[int32]bool{}
		for b, gb := range member {
			if a != b && !shareAny(ga, gb) {
				cuts[a][b] = true
			}
		}
	}
	return cuts
}

func shareAny(a, b map[int]bool) bool {
	for g := range a {
		if b[g] {
			return true
		}
	}
	return false
}
