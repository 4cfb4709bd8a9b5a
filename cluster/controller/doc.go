// Package controller is the metadata quorum of the embedded cluster,
// modelled on Kafka's KRaft in combined mode and built on
// github.com/hashicorp/raft.
//
// # Quorum
//
// Every broker node runs a raft voter (New). The voter set is static
// (Config.Voters) and bootstrapped identically on every node that has no
// raft state. The raft leader is the active controller. Raft traffic goes
// over TCP through Config.Listener (accept hook) and Config.Dial (dial
// hook), where the process runtime injects network partitions. The raft
// log and stable store are files of our own (filestore.go: CRC-framed,
// fsynced, torn tail truncated at open) because raft-boltdb v1 aborts under
// the race detector; snapshots use raft's FileSnapshotStore and hold the
// metadata image as JSON.
//
// # What is replicated
//
// The raft log holds intent records (records.go): register broker, fence,
// unfence, controlled shutdown, AlterPartition, create topic, delete
// topic. Every node's FSM applies them to an immutable Image (brokers with
// epochs and fencing, topics with ids, configs and partition states) and
// publishes it atomically; brokers read Image() or Subscribe() and need no
// other metadata propagation. The FSM validates at apply time (epochs,
// existence, eligibility) against the image it applies to, so racing
// proposals cannot both pass on a stale view. Records that may elect carry
// the proposing controller's election policy (unclean default, planted bug), so the
// image never depends on a follower's local configuration. Broker epoch =
// raft index of the registration record.
//
// # What is controller-local
//
// Heartbeat times (lastSeen) and the "active" flag live only in the
// active controller's memory. On taking over, the new controller waits for
// a raft barrier (its image then includes everything committed before its
// term) and gives every registered broker a fresh session. A broker with no
// heartbeat for SessionTimeout (broker.session.timeout.ms) is fenced by a
// replicated Fence record.
//
// # Broker states and the three ISR removal paths (seed 003)
//
//   - registration (first or restart): a new epoch; fenced until its first
//     plain heartbeat; a restart drops the old incarnation from ISRs and
//     leaderships at once.
//   - controlled shutdown (heartbeat WantShutdown, SIGTERM): at once,
//     leadership moves to another ISR member and the broker leaves every
//     ISR; ShouldShutdown is answered once it leads nothing.
//   - session expiry: fenced after SessionTimeout, with the same effects.
//   - lagging while alive: the partition leader shrinks the ISR with
//     AlterPartition (replica.lag.time.max.ms is the leader's business).
//
// In every path the ISR never becomes empty: the last member stays, as in
// KRaft, and a partition whose last ISR member is gone goes offline.
//
// # Election rules (election.go)
//
// Clean: the first replica, in assignment order, that is in the ISR and
// live (registered, unfenced, not shutting down). If none: with
// unclean.leader.election.enable (topic config, else
// Config.UncleanElectionDefault) the first live replica, and the ISR becomes
// just it; otherwise Leader = -1 until a broker becomes live again, when
// offline partitions elect again (an ISR member; with unclean, any
// replica). Every leader change increments LeaderEpoch; every change of a
// partition increments PartitionEpoch. Planted bug Bugs.ElectOutsideISR:
// prefer a live replica outside the ISR (its ISR becomes just it).
//
// # AlterPartition
//
// Accepted only from the current leader (NOT_LEADER_OR_FOLLOWER) with the
// current broker epoch (STALE_BROKER_EPOCH), leader epoch
// (FENCED_LEADER_EPOCH) and partition epoch (INVALID_UPDATE_VERSION); the
// new ISR must be within the replicas, without duplicates, and hold the
// leader (INVALID_REQUEST); a member it adds must be live (KIP-841) and, in
// v3, of the epoch the leader saw (KIP-903) (INELIGIBLE_REPLICA).
//
// # Invariants
//
// Checked after every apply (invariants.go), on every node:
//
//   - Invariant: ISR non-empty, no duplicates, ISR ⊆ Replicas (meta.Partition.Check,
//     which brokers run on what they are told too).
//   - Invariant: Leader == -1 or Leader ∈ ISR (an unclean or buggy
//     election sets ISR = [Leader], so this holds for them too).
//   - Invariant: a leader is a registered, live broker.
//   - Invariant: Partitions[i].Index == i; epochs non-negative.
//
// A violation panics with Config.StrictInvariants (tests: a bug must stop
// the test) and is otherwise logged and counted (InvariantViolations),
// because in a fault-injection run a crashed node would hide the anomaly
// the harness is there to observe.
//
// # RPCs
//
// Brokers reach the active controller with the real Kafka APIs, encoded
// by kmsg: BrokerRegistration (62), BrokerHeartbeat (63), AlterPartition
// (56), and forwarded CreateTopics (19) / DeleteTopics (20). Handle
// serves them (NOT_CONTROLLER when not active); Client finds the active
// controller and retries with bounded backoff over a Transport
// (KconnTransport over TCP, LocalTransport in process); Lifecycle is the
// broker side of registration, heartbeats and controlled shutdown.
package controller
