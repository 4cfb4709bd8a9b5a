package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"gregor/history"
)

// Topology is what targeting needs to know about the cluster. Brokers is
// fixed for a test; Leader and Controller ask the cluster when a step runs.
type Topology interface {
	// Brokers are the broker node ids (not controller-only voters), sorted.
	Brokers() []int32
	// Partitions is the topic's partition count (>= 1).
	Partitions() int
	// Leader is the current leader of a partition, or an error.
	Leader(ctx context.Context, partition int32) (int32, error)
	// Controller is the node Metadata names as controller, or an error.
	Controller(ctx context.Context) (int32, error)
}

// voterTopology is a Topology that knows the controller-only voters
// (--controllers N). A network partition puts them with the majority side:
// a real partition cuts a broker off from the controller quorum too, so an
// isolated leader is fenced and deposed while it still takes writes (the
// scenario acks=1 and a broken acks=all lose data in). Without them a
// "partition" would only cut broker-to-broker links: see StrandLeader.
type voterTopology interface {
	Voters() []int32
}

// txnTopology is a Topology that knows the run's transactional ids and can
// find their coordinator, which KillTxnCoordinator needs.
type txnTopology interface {
	TxnIDs() []string
	TxnCoordinator(ctx context.Context, id string) (int32, error)
}

// coordinatorTopology is a Topology that can find a coordinator
// (TargetCoordinator).
type coordinatorTopology interface {
	Coordinator(ctx context.Context) (int32, error)
}

// shareTopology is a Topology that can find the share coordinator of a
// partition of the run's share group (TargetShareCoordinator).
type shareTopology interface {
	ShareCoordinator(ctx context.Context, partition int32) (int32, error)
}

// replicaTopology is a Topology that can read a partition's replicas and
// ISR, which scenario faults (StrandLeader, KIP101) need.
type replicaTopology interface {
	PartitionState(ctx context.Context, partition int32) (PartitionState, error)
}

// PartitionState is one partition as Metadata shows it (the type the
// harness's metadata samples use).
type PartitionState = history.PartitionState

// Action is a resolved step: the nodes it hits, for partitions the groups
// handed to runtime.Cluster.Partition, the topic partition whose leader was
// targeted (-1: none) and a note when a fallback was used. The history
// records it as it is, in every nemesis operation's value.
type Action = history.NemesisAction

// Resolve picks the nodes of step s under target t. It is deterministic
// given s.Pick and the topology's answers.
func Resolve(ctx context.Context, s Step, t Target, topo Topology) (Action, error) {
	brokers := slices.Clone(topo.Brokers())
	if len(brokers) == 0 {
		return Action{}, fmt.Errorf("no brokers to target")
	}
	rng := rand.New(rand.NewPCG(s.Pick, uint64(len(brokers))))
	a := Action{Partition: -1}
	shuffled := slices.Clone(brokers)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	part := int32(rng.IntN(max(1, topo.Partitions())))

	leader := func() []int32 {
		a.Partition = part
		id, err := topo.Leader(ctx, part)
		if err != nil || id < 0 {
			a.Note = fmt.Sprintf("leader of partition %d unknown (%v): a random broker instead", part, err)
			return shuffled[:1]
		}
		return []int32{id}
	}
	targetNodes := func() []int32 {
		n := len(shuffled)
		switch t {
		case TargetLeader:
			return leader()
		case TargetController:
			id, err := topo.Controller(ctx)
			if err != nil || id < 0 {
				a.Note = fmt.Sprintf("controller unknown (%v): a random broker instead", err)
				return shuffled[:1]
			}
			return []int32{id}
		case TargetCoordinator:
			ct, ok := topo.(coordinatorTopology)
			if !ok {
				a.Note = "no coordinator to ask for: a random broker instead"
				return shuffled[:1]
			}
			id, err := ct.Coordinator(ctx)
			if err != nil || id < 0 {
				a.Note = fmt.Sprintf("coordinator unknown (%v): a random broker instead", err)
				return shuffled[:1]
			}
			return []int32{id}
		case TargetShareCoordinator:
			return shareCoordinator(ctx, topo, part, &a, shuffled[:1])
		case TargetMinority:
			return shuffled[:max(1, (n-1)/2)]
		case TargetMajority:
			return shuffled[:n/2+1]
		case TargetAll:
			return shuffled
		}
		return shuffled[:1]
	}
	if IsClientKind(s.Kind) {
		return a, nil // hits a client, not a node
	}
	if isScenario(s.Kind) {
		a.Nodes = leader() // a scenario's story starts at a partition's leader
		return a, nil
	}
	if s.Kind == Reassign {
		a.Partition = part // the brokers are chosen when it runs (reassign.go)
		return a, nil
	}
	if s.Kind == KillTxnCoordinator {
		// The broker leading a drawn transactional id's __transaction_state
		// partition, as FindCoordinator (key type 1) names it.
		tt, ok := topo.(txnTopology)
		if !ok || len(tt.TxnIDs()) == 0 {
			a.Note = "no transactional ids known: a random broker instead"
			a.Nodes = shuffled[:1]
			return a, nil
		}
		ids := tt.TxnIDs()
		id := ids[rng.IntN(len(ids))]
		node, err := tt.TxnCoordinator(ctx, id)
		if err != nil || node < 0 {
			a.Note = fmt.Sprintf("coordinator of transactional id %s unknown (%v): a random broker instead", id, err)
			a.Nodes = shuffled[:1]
			return a, nil
		}
		a.Note = "coordinator of transactional id " + id
		a.Nodes = []int32{node}
		return a, nil
	}
	if IsLinkKind(s.Kind) {
		a.Nodes = targetNodes()[:1] // the clients' links to one broker
		return a, nil
	}
	if s.Kind != Partition {
		a.Nodes = sorted(targetNodes())
		return a, nil
	}
	switch s.Shape {
	case IsolateOne, IsolateLeader:
		var side []int32
		if s.Shape == IsolateLeader {
			side = leader()
		} else {
			side = targetNodes()
		}
		if len(side) >= len(brokers) {
			side = side[:len(brokers)-1] // a partition needs two sides
		}
		a.Groups = [][]int32{sorted(side), sorted(append(without(brokers, side), voters(topo)...))}
	case Halves:
		h := len(shuffled) / 2
		a.Groups = [][]int32{sorted(shuffled[:h]), sorted(append(slices.Clone(shuffled[h:]), voters(topo)...))}
	case Bridge:
		h := len(shuffled) / 2
		a.Groups = [][]int32{sorted(append(slices.Clone(shuffled[:h+1]), voters(topo)...)), sorted(shuffled[h:])}
	case MajoritiesRing:
		a.Groups = ring(shuffled)
	default:
		return Action{}, fmt.Errorf("unknown partition shape %q", s.Shape)
	}
	for _, g := range a.Groups {
		a.Nodes = append(a.Nodes, g...)
	}
	a.Nodes = sorted(dedup(a.Nodes))
	return a, nil
}

// shareCoordinator is the share coordinator of partition part of the run's
// share group, recorded as the action's partition; fallback (a random
// broker) with a note when topo cannot say.
func shareCoordinator(ctx context.Context, topo Topology, part int32, a *Action, fallback []int32) []int32 {
	a.Partition = part
	st, ok := topo.(shareTopology)
	if !ok {
		a.Note = "no share coordinator to ask for: a random broker instead"
		return fallback
	}
	id, err := st.ShareCoordinator(ctx, part)
	if err != nil || id < 0 {
		a.Note = fmt.Sprintf("share coordinator of partition %d unknown (%v): a random broker instead", part, err)
		return fallback
	}
	a.Note = fmt.Sprintf("share coordinator of partition %d", part)
	return []int32{id}
}

// voters are topo's controller-only voters, if it knows them. The ring shape
// leaves them out (unlisted nodes reach everyone), so every node keeps a
// path to the controller quorum, as the shape intends.
func voters(topo Topology) []int32 {
	if v, ok := topo.(voterTopology); ok {
		return v.Voters()
	}
	return nil
}

// ring gives every node a majority of the nodes (itself included) but no two
// nodes the same majority: each node is grouped with its k successors on a
// ring, so it sees k nodes either side, 2k >= majority-1.
func ring(nodes []int32) [][]int32 {
	n := len(nodes)
	m := n/2 + 1
	k := max(1, m/2) // ceil((m-1)/2)
	var groups [][]int32
	for i := range n {
		g := make([]int32, 0, k+1)
		for j := 0; j <= k; j++ {
			g = append(g, nodes[(i+j)%n])
		}
		groups = append(groups, sorted(dedup(g)))
	}
	return groups
}

func without(all, drop []int32) []int32 {
	var out []int32
	for _, x := range all {
		if !slices.Contains(drop, x) {
			out = append(out, x)
		}
	}
	return out
}

func sorted(xs []int32) []int32 {
	out := slices.Clone(xs)
	slices.Sort(out)
	return out
}

func dedup(xs []int32) []int32 {
	out := sorted(xs)
	return slices.Compact(out)
}
