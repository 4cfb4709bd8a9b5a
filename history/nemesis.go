package history

import "strings"

// The nemesis vocabulary (DESIGN.md section 3): the fault kinds that
// --nemesis and test.json's "nemeses" name, the verbs the nemesis writes as
// process "nemesis" (a fault's start is its kind; its end is EndVerb), and
// the classes of fault the checker's theory reasons in. It is contract: the
// nemesis package writes these words, the checker and the reports read them,
// and neither matches a spelling of its own.
const (
	NemesisKill        = "kill"         // SIGKILL a broker, restart it after the hold
	NemesisStop        = "stop"         // SIGTERM (controlled shutdown), restart after the hold
	NemesisPause       = "pause"        // SIGSTOP, SIGCONT after the hold
	NemesisPartition   = "partition"    // drop traffic between groups of nodes
	NemesisSlow        = "slow"         // delay / loss on a node's links
	NemesisPowerLoss   = "power-loss"   // kill on a lazyfs cluster: unsynced writes are lost
	NemesisClientCrash = "client-crash" // tear down a workload client mid-operation
	// NemesisConsumerRestart restarts every group consumer in turn;
	// NemesisConsumerJoin adds one consumer to the group.
	NemesisConsumerRestart = "consumer-restart"
	NemesisConsumerJoin    = "consumer-join"
	// NemesisStrandLeader and NemesisKIP101 are scenarios: a whole failure
	// story on one partition's leader in one step, each phase a line whose
	// value names it ("phase").
	NemesisStrandLeader = "strand-leader"
	NemesisKIP101       = "kip101"
	// NemesisReassign is a membership change: a partition's replicas move
	// to other brokers while writes go on (KIP-455), and back at its end.
	NemesisReassign = "reassign"
	// NemesisKillTxnCoordinator kills the broker coordinating a drawn
	// transactional id (the leader of its __transaction_state partition)
	// and restarts it after the hold; NemesisPauseProducer freezes one
	// transactional producer mid-transaction for longer than
	// transaction.timeout.ms, so the coordinator aborts and fences it while
	// it still believes its transaction open.
	NemesisKillTxnCoordinator = "kill-txn-coordinator"
	NemesisPauseProducer      = "pause-producer"
	// Client-link faults (runtime/clientlink) act on the network between
	// the workload's clients and one broker, which stays up and leader:
	// NemesisClientReset closes a client's connections to the broker (an
	// RST); NemesisLoseResponses drops the broker's answers to a client
	// (requests are applied, the client times out and retries to the same
	// leader); NemesisDelayClient holds a client's requests to the broker
	// and delivers them late, after the client gave up and retried on a new
	// connection (Jepsen's Bufstream analysis).
	NemesisClientReset   = "client-reset"
	NemesisLoseResponses = "lose-responses"
	NemesisDelayClient   = "delay-client"
	// NemesisRestartStorm kills and restarts a broker (the target, drawn
	// again each round) many times within one step, each time back before
	// its session times out, waiting for a full ISR between rounds; on a
	// lazyfs cluster every kill is a power cut: the restart races after
	// power loss, hit many times per run.
	NemesisRestartStorm = "restart-storm"
	// NemesisPauseShareConsumer stalls one share consumer of the share
	// workload past its acquisition lock (share.record.lock.duration.ms):
	// at its next poll that returns records it stops fetching and
	// processing, then acknowledges those records late and fetches again
	// (issue 30: the lock lapses with no one else to take the records).
	NemesisPauseShareConsumer = "pause-share-consumer"
)

// Nemesis targets, as --nemesis-target and test.json's "nemesis_target"
// name them (what each means: nemesis.Target).
const (
	TargetRandom     = "random"
	TargetLeader     = "leader"
	TargetController = "controller"
	TargetMinority   = "minority"
	TargetMajority   = "majority"
	TargetAll        = "all"
	// TargetCoordinator is the group coordinator of the run's consumer
	// group (FindCoordinator key type 0), or the transaction coordinator of
	// its transactional id (key type 1) where there is no group.
	TargetCoordinator = "coordinator"
	// TargetShareCoordinator is the share coordinator of a drawn partition
	// of the run's share group (FindCoordinator key type 2, KIP-932).
	TargetShareCoordinator = "share-coordinator"
)

// Verbs that end a fault: a kill, stop or power loss ends with the broker's
// start, a pause with resume, a partition with heal, a slow link with
// unslow, anything else (client faults, scenarios) with "end-<kind>"; the
// heal at the end of the fault phase is heal-all.
const (
	VerbStart   = "start"
	VerbResume  = "resume"
	VerbHeal    = "heal"
	VerbUnslow  = "unslow"
	VerbHealAll = "heal-all"
	endPrefix   = "end-"
)

// FaultClass is what a nemesis kind can do, in the terms of the checker's
// theory of expected verdicts (checker/theory.go).
type FaultClass uint16

const (
	// TakesLeaderAway: the fault can take a partition's leader away (kill,
	// stop, freeze, cut off), so a new leader, which may lack the old one's
	// unreplicated tail, takes over; repeated, it can leave no ISR member
	// alive.
	TakesLeaderAway FaultClass = 1 << iota
	// PowerCut: on a lazyfs cluster the fault drops a broker's unsynced
	// writes, as a power cut does (a kill there is one).
	PowerCut
	// ClientFault: the fault acts on workload clients, not nodes: no hold,
	// no undo.
	ClientFault
	// GroupFault: the fault acts on a consumer group's members; only the
	// group workload has them.
	GroupFault
	// DelaysRequests: a client's request can reach a broker long after it
	// was sent — held in a frozen broker's socket, retransmitted after a
	// partition heals, crawling over a slowed link — after the client has
	// timed out and moved on (transactions: DESIGN.md section 2, Version 1).
	DelaysRequests
	// TxnFault: the fault acts on transactions (their coordinator, their
	// producers); only the txn workload has them.
	TxnFault
	// LinkFault: the fault acts on the links between workload clients and
	// one broker (runtime/clientlink); the broker stays up and leader. A
	// request may be applied with its answer lost, or applied late after
	// the client retried: only a producer's idempotence (or a duplicate
	// being allowed) keeps the log clean.
	LinkFault
	// StorageFault: the fault damages what a broker stored (a bit flipped
	// in a batch at rest): the replica refuses the batch and, when it
	// recovers, cuts its log there, losing the batch and what follows, as
	// a power cut loses an unsynced tail.
	StorageFault
	// ClockFault: the fault moves a node's wall clock (clock-skew). It
	// takes no leader away, delays no request and damages nothing stored:
	// the theory allows nothing for it (checker/theory.go says what it may
	// still do: shrink the ISR, abort transactions early, shift
	// LogAppendTime).
	ClockFault
	// ShareFault: the fault acts on a share group's consumers (KIP-932);
	// only the share workload has them. The theory allows nothing for it:
	// a consumer's stall past its lock is what the lock is for.
	ShareFault
)

// NemesisKinds lists every kind with its classes, in the order --help
// shows them.
var NemesisKinds = []struct {
	Name    string
	Classes FaultClass
}{
	{NemesisKill, TakesLeaderAway | PowerCut},
	{NemesisStop, TakesLeaderAway},
	{NemesisPause, TakesLeaderAway | DelaysRequests},
	{NemesisPartition, TakesLeaderAway | DelaysRequests},
	// A slow link (5 s by default) delays the broker's heartbeats past its
	// session (broker.session.timeout.ms): the controller fences it and its
	// leaderships move (BrokerHeartbeatManager), as a leader kill does. Found
	// by nightly.yaml's controls: acks=1 lost writes under slow-follower in 4
	// of 4 runs on the sim, the slowed leader fenced 3 s in.
	{NemesisSlow, TakesLeaderAway | DelaysRequests},
	{NemesisPowerLoss, TakesLeaderAway | PowerCut},
	{NemesisClientCrash, ClientFault},
	{NemesisConsumerRestart, ClientFault | GroupFault},
	{NemesisConsumerJoin, ClientFault | GroupFault},
	{NemesisStrandLeader, TakesLeaderAway | DelaysRequests}, // kills the stranded leader
	{NemesisKIP101, TakesLeaderAway | DelaysRequests},       // kills two leaders in turn
	// Leadership moves to an ISR replica, which may lack an acks=1 tail:
	// a leader loss without a crash.
	{NemesisReassign, TakesLeaderAway},
	{NemesisKillTxnCoordinator, TakesLeaderAway | PowerCut | TxnFault},
	// The frozen producer's requests in flight reach the brokers late.
	{NemesisPauseProducer, ClientFault | TxnFault | DelaysRequests},
	{NemesisClientReset, LinkFault},
	{NemesisLoseResponses, LinkFault},
	{NemesisDelayClient, LinkFault | DelaysRequests},
	{NemesisRestartStorm, TakesLeaderAway | PowerCut},
	// A crash at a point is a kill (a power cut on lazyfs), a pause or a
	// held response a freeze, a cut a partition: node faults of their class.
	{NemesisFaultPoints, TakesLeaderAway | PowerCut | DelaysRequests},
	// A failed log directory halts the broker (a kill; on lazyfs a power
	// cut); a flipped bit is cut from the replica with what follows it.
	{NemesisDiskFault, TakesLeaderAway | PowerCut | StorageFault},
	{NemesisClockSkew, ClockFault},
	{NemesisPauseShareConsumer, ClientFault | ShareFault},
}

// NemesisClasses are kind's classes; an unknown kind has none.
func NemesisClasses(kind string) FaultClass {
	for _, k := range NemesisKinds {
		if k.Name == kind {
			return k.Classes
		}
	}
	return 0
}

// EndVerb is the verb written when a fault of kind ends.
func EndVerb(kind string) string {
	switch kind {
	case NemesisKill, NemesisStop, NemesisPowerLoss, NemesisKillTxnCoordinator:
		return VerbStart
	case NemesisPause:
		return VerbResume
	case NemesisPartition:
		return VerbHeal
	case NemesisSlow:
		return VerbUnslow
	}
	return endPrefix + kind
}

// Instant reports whether a fault of kind is over when it starts (no
// hold, no undo): client faults and a connection reset. A client fault that
// takes a while (a rolling consumer restart) still writes its end.
func Instant(kind string) bool {
	return NemesisClasses(kind)&ClientFault != 0 || kind == NemesisClientReset
}

// IsEndVerb reports whether a nemesis operation's f ends a fault.
func IsEndVerb(f string) bool {
	switch f {
	case VerbStart, VerbResume, VerbHeal, VerbUnslow, VerbHealAll:
		return true
	}
	return strings.HasPrefix(f, endPrefix)
}

// HasFault reports whether any nemesis the run used is of class.
func (c *Config) HasFault(class FaultClass) bool {
	for _, n := range c.Nemeses {
		if NemesisClasses(n)&class != 0 {
			return true
		}
	}
	return false
}
