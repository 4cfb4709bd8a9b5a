// Package nemesis injects faults into a running cluster (DESIGN.md section 3):
// what to break (Kind), whom (Target), in what shape (Shape, for
// partitions), and when (Schedule, drawn from a seeded RNG so that --seed
// replays it). Every fault's start and end is written to the history as an
// operation of process "nemesis".
package nemesis

import (
	"fmt"
	"slices"
	"strings"

	"gregor/history"
)

// Kind is a fault kind, as --nemesis names it. The names and what each
// kind can do (its fault classes) are contract, in the history package
// (history/nemesis.go); this package carries them out.
type Kind string

const (
	Kill        Kind = history.NemesisKill        // SIGKILL a broker, restart it after the hold
	Stop        Kind = history.NemesisStop        // SIGTERM (controlled shutdown), restart after the hold
	Pause       Kind = history.NemesisPause       // SIGSTOP, SIGCONT after the hold
	Partition   Kind = history.NemesisPartition   // drop traffic between groups of nodes (Shape)
	Slow        Kind = history.NemesisSlow        // delay / loss on a node's links
	PowerLoss   Kind = history.NemesisPowerLoss   // kill on a --lazyfs cluster: unsynced writes are lost
	ClientCrash Kind = history.NemesisClientCrash // tear down a workload client mid-operation
	// ConsumerRestart restarts every group consumer in turn, cleanly (a
	// rolling restart); ConsumerJoin adds one consumer to the group (seed
	// 000's experiment B). Group workload only.
	ConsumerRestart Kind = history.NemesisConsumerRestart
	ConsumerJoin    Kind = history.NemesisConsumerJoin
	// StrandLeader and KIP101 are scenario faults (scenario.go).
	// Reassign is a membership change (reassign.go): a partition's replicas
	// move to other brokers while writes go on (KIP-455), and back on undo.
	Reassign Kind = history.NemesisReassign
	// KillTxnCoordinator kills the coordinator of a drawn transactional id
	// (resolve.go); PauseProducer freezes a transactional producer past its
	// transaction timeout (the workload carries it out). Txn workload only.
	KillTxnCoordinator Kind = history.NemesisKillTxnCoordinator
	PauseProducer      Kind = history.NemesisPauseProducer
	// PauseShareConsumer stalls a share consumer past its acquisition lock
	// (the workload carries it out). Share workload only.
	PauseShareConsumer Kind = history.NemesisPauseShareConsumer
)

// Kinds lists every kind, in the order --help shows them
// (history.NemesisKinds).
var Kinds = func() []Kind {
	out := make([]Kind, len(history.NemesisKinds))
	for i, k := range history.NemesisKinds {
		out[i] = Kind(k.Name)
	}
	return out
}()

// IsClientKind reports whether k acts on workload clients, not nodes: such
// a step has no hold and no undo.
func IsClientKind(k Kind) bool { return history.NemesisClasses(string(k))&history.ClientFault != 0 }

// TxnOnly reports whether k needs the txn workload.
func TxnOnly(k Kind) bool { return history.NemesisClasses(string(k))&history.TxnFault != 0 }

// GroupOnly reports whether k needs the group workload.
func GroupOnly(k Kind) bool { return history.NemesisClasses(string(k))&history.GroupFault != 0 }

// ShareOnly reports whether k needs the share workload.
func ShareOnly(k Kind) bool { return history.NemesisClasses(string(k))&history.ShareFault != 0 }

// ParseKinds parses --nemesis values ("kill,pause" arrives split by cobra).
// "none" or nothing yields no kinds. Duplicates are dropped.
func ParseKinds(names []string) ([]Kind, error) {
	var out []Kind
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" || n == "none" {
			continue
		}
		k := Kind(n)
		if !slices.Contains(Kinds, k) {
			return nil, fmt.Errorf("unknown nemesis %q: choose from %s (comma-separated), or none", n, joinKinds())
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

func joinKinds() string {
	s := make([]string, len(Kinds))
	for i, k := range Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// Target says which nodes a fault hits.
type Target string

const (
	TargetRandom Target = history.TargetRandom // one broker, drawn from the step's RNG
	TargetLeader Target = history.TargetLeader // the leader of a partition (drawn), from Metadata
	// TargetController is the broker Metadata names as ControllerID. In the
	// embedded cluster that is a live broker the metadata image names, not
	// necessarily the active raft leader (Kafka's KRaft does the same: the
	// Metadata ControllerID of a KRaft cluster is a random alive broker). It
	// is the best a Kafka client can see; with --controllers N it may also
	// be a controller-only voter, which is then the node hit.
	TargetController Target = history.TargetController
	TargetMinority   Target = history.TargetMinority // floor((n-1)/2) brokers
	// TargetMajority is floor(n/2)+1 brokers. With combined-mode brokers
	// that loses the controller quorum, and nothing moves until the fault
	// ends: use --controllers N (controller-only voters) for progress.
	TargetMajority Target = history.TargetMajority
	TargetAll      Target = history.TargetAll // every broker (power-loss of the whole cluster)
	// TargetCoordinator is the broker FindCoordinator names for the run's
	// consumer group (the group workload) or transactional id: the broker
	// that owns the __consumer_offsets (or __transaction_state) partition
	// the group's commits (or the transaction's state) go to. A run with
	// neither falls back to a random broker, with a note.
	TargetCoordinator Target = history.TargetCoordinator
	// TargetShareCoordinator is the share coordinator of a drawn partition
	// of the run's share group (the share workload): the broker
	// FindCoordinator v6 names for key type SHARE and the key
	// "group:topicId:partition", the leader of the __share_group_state
	// partition that share partition's state (start offset, in-flight
	// records, delivery counts) is written to (KIP-932's ShareCoordinator).
	// The group coordinator of a share group is TargetCoordinator's. A run
	// without a share group falls back to a random broker, with a note.
	TargetShareCoordinator Target = history.TargetShareCoordinator
)

// Targets lists every target.
var Targets = []Target{TargetRandom, TargetLeader, TargetController, TargetMinority, TargetMajority, TargetAll, TargetCoordinator,
	TargetShareCoordinator}

// ParseTarget parses --nemesis-target.
func ParseTarget(s string) (Target, error) {
	t := Target(s)
	if s == "" {
		return TargetRandom, nil
	}
	if !slices.Contains(Targets, t) {
		names := make([]string, len(Targets))
		for i, x := range Targets {
			names[i] = string(x)
		}
		return "", fmt.Errorf("unknown nemesis target %q: choose from %s", s, strings.Join(names, ", "))
	}
	return t, nil
}

// Shape is the form of a network partition.
type Shape string

const (
	IsolateOne     Shape = "isolate-one"     // the target's nodes against the rest
	IsolateLeader  Shape = "isolate-leader"  // a partition's leader against the rest
	Halves         Shape = "halves"          // two halves, the larger one a majority
	MajoritiesRing Shape = "majorities-ring" // every node sees a majority, no two the same one
	Bridge         Shape = "bridge"          // two halves joined by one node in both
)

// Shapes lists every partition shape; a partition step draws one.
var Shapes = []Shape{IsolateOne, IsolateLeader, Halves, MajoritiesRing, Bridge}

// ParseShapes parses --partition-shapes; nothing yields nil (every shape).
func ParseShapes(names []string) ([]Shape, error) {
	var out []Shape
	for _, n := range names {
		s := Shape(strings.TrimSpace(n))
		if s == "" {
			continue
		}
		if !slices.Contains(Shapes, s) {
			all := make([]string, len(Shapes))
			for i, x := range Shapes {
				all[i] = string(x)
			}
			return nil, fmt.Errorf("unknown partition shape %q: choose from %s", n, strings.Join(all, ", "))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// undoVerb is the history verb written when a fault ends.
func undoVerb(k Kind) string { return history.EndVerb(string(k)) }
