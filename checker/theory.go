package checker

import (
	"strconv"
	"strings"

	"gregor/history"
)

// Expected verdicts: which anomalies a configuration allows under the nemeses
// it ran with, and why, in the words of the seeds (../shared/seeds).
//
// An anomaly is allowed when at least one rule below applies; its reason
// lists every rule that applies. Otherwise it is forbidden: seeing it means a
// bug in the system under test. Planted bugs change nothing here: they make
// forbidden anomalies expected, and the checker still reports them forbidden.
// With no configuration every anomaly is forbidden; with no faults, nothing
// is allowed.
//
// Fault classes are the contract's (history/nemesis.go), never spelled here:
//
//	history.TakesLeaderAway  kill, stop, pause, partition, power-loss, the
//	                         scenarios strand-leader and kip101 (which kill
//	                         leaders), and reassign (which moves a
//	                         partition's leader to an ISR replica): a new
//	                         leader (missing the old one's tail) takes over;
//	                         repeated, they can leave no ISR member alive
//	history.PowerCut         power-loss, and kill: on a lazyfs cluster they
//	                         drop a broker's unsynced writes
//	any                      every nemesis including slow and client faults
//
// The table (L = a fault that takes the leader away is used):
//
//	anomaly                         allowed when
//	lost-write, unseen,             acks=0 and any fault; acks=1 and L;
//	inconsistent-offsets,           acks=all, min ISR <= 1 (as with RF 1) and power loss (lazyfs,
//	                                fsync not "always", a power-loss or kill nemesis): with
//	                                clean election a lone ISR member's crash only takes the
//	                                partition offline, its page cache keeps the records;
//	nonmonotonic-send,              unclean=true and L;
//	nonlinearizable                 power-loss, lazyfs, fsync not "always", target all or majority
//	duplicate                       idempotence off and any fault (retries re-send);
//	                                with idempotence, wherever records consumers read
//	                                can vanish (below)
//	inconsistent-offsets, nonlinear-  records below the HW vanish: unclean=true and L;
//	izable, poll-skip, nonmonotonic-  lazyfs power loss, fsync not "always", any min ISR
//	poll, duplicate                   (an ISR shrunk to the leader alone moves the HW by
//	                                  its log; its power cut loses what consumers read)
//	nonmonotonic-send (also)        idempotence off, max in-flight > 1 and any fault
//	poll-skip, nonmonotonic-poll    unclean=true and L; the power-loss rule above
//	                                (records consumers read can vanish, positions reset)
//	(disk-fault, history.StorageFault: a bit flip cut from a replica by its recovery, like an unsynced tail
//	lost to a power cut)
//	lost-write, unseen, ...         disk-fault and acks=1, or acks=all with min ISR <= 1 (a lone ISR
//	                                member's copy); never acks=all with min ISR >= 2
//	inconsistent-offsets, poll-skip disk-fault, any acks and min ISR: an ISR shrunk to its leader alone
//	nonmonotonic-poll, duplicate    moves the HW by its log, and its cut removes what consumers read
//	(clock-skew, ClockFault)        nothing: Kafka's replication safety reads no wall clock (HW, ISR
//	                                membership, leader epochs; the controller's broker sessions and
//	                                the group coordinator's session expiry run on the monotonic clock,
//	                                BrokerHeartbeatManager, the timer wheel). A skew may shrink the
//	                                ISR (lastCaughtUpTimeMs is wall clock: a forward jump past
//	                                replica.lag.time.max.ms drops every follower; availability only),
//	                                abort open transactions early (transaction.timeout.ms against
//	                                txnStartTimestamp, both the coordinator's wall clock: the producer
//	                                is fenced and sees the abort), shift LogAppendTime and
//	                                ListOffsets by time, and with a finite retention.ms delete segments
//	                                early (the harness's topics keep everything)
//	unauthorized-write              the authz workload only: acks below all or min ISR <= 1, and L
//	                                (a leader cut off from the controller keeps its old image and
//	                                acknowledges alone); never with acks=all and min ISR >= 2
//	                                past the bound (two sessions: fenced, its followers gone)
//	unauthorized-read               the authz workload only: a fault that delays requests
//	                                (history.DelaysRequests: a broker cut off or frozen answers
//	                                fetches from its last image; no lease, no bound)
//	G1a                             never
//	committed-skip                  (greedy auto-commit or commit before processing) and
//	                                any fault; processing failures swallowed (failure
//	                                rate > 0), even without faults. Not the Java consumer's
//	                                auto-commit alone: it commits at the next poll what the
//	                                previous polls returned, all of it processed
//	redelivered                     (auto-commit of either kind, commit after processing or
//	                                in onRevoked) and any fault (consumer crashes, restarts
//	                                and joins count); where a commit can be lost (below)
//	committed-offset-regression     unclean=true and L; power loss with min ISR <= 1; power
//	                                loss on all or a majority: __consumer_offsets is written
//	                                acks=all whatever the producers' acks
//	aborted-read, torn-transaction, transaction version 1 and a fault that delays requests
//	lost-committed-write,           (history.DelaysRequests: pause, partition, slow, the
//	intermediate-read, G0, G1c,     delay-client nemesis): the protocol before KIP-890 assumes
//	duplicate                       ordered delivery; a request arriving after its transaction
//	                                ended, at the same epoch, joins the producer's next one.
//	                                Never in version 2 (every EndTxn bumps the epoch: late
//	                                requests are fenced). lost-committed-write, torn,
//	                                intermediate-read, G0 and G1c also wherever acks=all
//	                                records can be lost (the loss rules above)
//	G-single                        the txn workload, even without faults: read_committed is not a
//	                                snapshot; a poll fetches partitions separately and the
//	                                markers land partition by partition (read skew)
//	share-accepted-redelivered      the share workload, where a commit can be lost (above): __share_group_state is
//	                                written as __consumer_offsets is
//	share-skip                      the share workload, where records consumers read can vanish (readLossReason)
//	share-double-acquire, share-    never: a lock is the partition leader's, and a failover
//	over-limit, share-release-lost, ends it without any consumer's acknowledgement being
//	share-late-ack                  taken; delivery counts and releases are persisted first
//	aborted records read by         not an anomaly in any version: read_uncommitted returns
//	read_uncommitted polls          every record below the high watermark (KIP-98); counted in
//	                                stats.uncommitted_aborted_reads
//
// Why the loss-derived anomalies follow loss: a lost acknowledged tail is
// overwritten by the next records at the same offsets (inconsistent-offsets,
// and a process's next send lands below its previous one: nonmonotonic-send),
// and the log is then no longer one history of appends (nonlinearizable).
// Consumers only read below the high watermark, which every ISR member holds,
// so only unclean election and power loss of the ISR can remove records a
// poll already returned and move consumer positions (poll-skip,
// nonmonotonic-poll); acks=1 loses only records no consumer saw.
func Expect(cfg *history.Config) map[string]Verdict {
	out := make(map[string]Verdict, len(AnomalyNames))
	if cfg == nil {
		for _, a := range AnomalyNames {
			out[a] = Verdict{false, "no configuration given: every anomaly is treated as forbidden"}
		}
		return out
	}
	reasons := make(map[string][]string)
	allow := func(why string, anomalies ...string) {
		for _, a := range anomalies {
			reasons[a] = append(reasons[a], why)
		}
	}
	leaderLoss := cfg.HasFault(history.TakesLeaderAway)
	anyFault := false
	for _, n := range cfg.Nemeses {
		if n != "" && n != "none" {
			anyFault = true
		}
	}
	// powerLoss: a fault that can drop a broker's unsynced writes (a kill
	// on a lazyfs cluster is a power cut).
	powerLoss := cfg.LazyFS && cfg.Fsync != "always" && cfg.HasFault(history.PowerCut)
	// powerLossOnMost: the power-loss nemesis on all or a majority of the
	// brokers, so every replica of a record can lose it at once.
	powerLossOnMost := cfg.HasNemesis(history.NemesisPowerLoss) && cfg.LazyFS && cfg.Fsync != "always" &&
		(cfg.NemesisTarget == history.TargetAll || cfg.NemesisTarget == history.TargetMajority)
	// With --compose, two power-cutting kinds (kill, power-loss,
	// restart-storm on lazyfs) run on timelines of their own and can cut
	// two brokers at once: a correlated power failure of several replicas,
	// the same exposure as power loss on a majority.
	if powerLoss && cfg.Compose && composedPowerCuts(cfg) >= 2 {
		powerLossOnMost = true
	}
	lossSet := []string{LostWrite, Unseen, InconsistentOffsets, NonmonotonicSend, Nonlinearizable}
	txn := cfg.Workload == history.WorkloadTxn || cfg.Workload == history.WorkloadEOS
	eosSet := []string{EOSDuplicate, EOSMissing, EOSReorder, EOSOffsetMismatch}
	if txn {
		// A lost record of a committed transaction: the transaction is
		// torn, and what replaces it breaks the offset order; a lost
		// output record or committed offset breaks exactly-once.
		lossSet = append(lossSet, LostCommittedWrite, TornTransaction, IntermediateRead, G0, G1c)
		if cfg.Workload == history.WorkloadEOS {
			lossSet = append(lossSet, eosSet...)
		}
	}
	// min ISR <= RF: history.Config.Normalize refuses a test.json without
	// it, and gregor run the flags; a configuration that breaks it reached
	// the theory past both, a bug. 0 (not recorded) counts as 1.
	if cfg.RF > 0 && cfg.MinISR > cfg.RF {
		panic("checker: min ISR " + strconv.Itoa(cfg.MinISR) + " > RF " + strconv.Itoa(cfg.RF) + " reached the theory past history.Config.Normalize")
	}
	minISR := cfg.MinISR
	switch {
	case cfg.Acks == "0" && anyFault:
		allow("acks=0: the producer counts a send as done without waiting for the broker; a lost packet or a dead broker goes unnoticed and the record is lost (seed 002)", lossSet...)
	case cfg.Acks == "1" && leaderLoss:
		allow("acks=1: the leader acknowledges before followers copy; a leader crash loses the tail, the new leader never had it and consumers never read it (seeds 000 §2.2, 002)", lossSet...)
	case cfg.Acks == "all" && minISR <= 1 && powerLoss:
		allow("acks=all with min.insync.replicas=1: once the ISR shrinks to the leader alone, acks=all acknowledges with a single copy, and a power cut on that broker loses the unsynced tail while it stays the only electable replica (seed 003: \"ISR 缩到 1 时照样写，照样可能丢\")", lossSet...)
	}
	if cfg.Unclean && leaderLoss {
		why := "unclean.leader.election.enable=true: when no ISR member is alive an out-of-sync replica becomes leader and acknowledged records beyond its log are lost for good (seeds 000, 001 §5)"
		allow(why, lossSet...)
		allow(why+"; consumers that read them find their position beyond the new log end and are reset", PollSkip, NonmonotonicPoll)
	}
	if powerLossOnMost {
		why := "fsync " + orDefault(cfg.Fsync, "never") + " with lazyfs power loss on " + powerLossWhere(cfg) +
			": acknowledged records live only in the page cache of every replica that holds them, and a power cut on all of them loses them even with acks=all (Kafka relies on replication, not fsync)"
		allow(why, lossSet...)
		allow(why, PollSkip, NonmonotonicPoll)
	}
	if why := readLossReason(cfg, leaderLoss, powerLoss); why != "" {
		allow(why, readLossSet...)
	}
	if cfg.HasFault(history.StorageFault) {
		storageFaultRules(cfg, minISR, lossSet, allow)
	}
	if !cfg.Idempotence && anyFault {
		allow("enable.idempotence=false: a producer retries a batch whose acknowledgement was lost and the broker appends it again (seed 002: idempotence is what removes duplicates from retries)", Duplicate)
		if cfg.MaxInFlight > 1 {
			allow("enable.idempotence=false with max.in.flight.requests.per.connection > 1: a retried batch can land after a later one, reordering a producer's records (seed 002)", NonmonotonicSend)
		}
	}
	if cfg.GreedyAutoCommit() && anyFault {
		allow("greedy auto-commit (every interval, the position after everything poll() returned, processed or not, as seed 002 describes it and franz-go's GreedyAutoCommit does): a consumer that fails mid-batch has committed past the records it never processed, and they are skipped: at-most-once (seed 002)", CommittedSkip)
	}
	if !cfg.AutoCommit && cfg.CommitMode == "before-processing" && anyFault {
		allow("commit before processing: the offset is committed first, so a failure while processing skips the records: at-most-once (seed 002)", CommittedSkip)
	}
	if cfg.FailureRate > 0 && cfg.FailureHandling != "retry" {
		why := "processing failures are swallowed: the consumer catches the error and moves on, so the next commit passes the failed record and it is never processed again: at-most-once (seed 002's incident)"
		if cfg.AutoCommit && !cfg.GreedyAutoCommit() {
			why += "; the Java consumer's auto-commit, which commits only what the application polled past, commits past it all the same"
		}
		allow(why, CommittedSkip)
	}
	switch {
	case cfg.AutoCommit && anyFault && cfg.GreedyAutoCommit():
		allow("greedy auto-commit: records processed since the last periodic commit are consumed again after a crash or rebalance (seed 000 §5.1)", Redelivered)
	case cfg.AutoCommit && anyFault:
		allow("auto-commit as the Java consumer does it (ConsumerCoordinator: at the next poll, the positions of the records the previous polls returned): a consumer that crashes mid-batch never polls again, so that batch and whatever was processed since the last commit are consumed again by the next owner: at-least-once (seed 000 §5.1)", Redelivered)
	case cfg.CommitMode == "after-processing" && anyFault:
		allow("commit after processing: a consumer that dies after processing but before committing makes the next owner re-read from the old committed offset: at-least-once, with duplicates (seeds 000 §5, 002)", Redelivered)
	}
	// Committed offsets live in __consumer_offsets, written acks=all with
	// the cluster's RF and min ISR whatever the producers' acks: a commit is
	// lost only where an acknowledged acks=all record can be.
	if commitLoss := commitLossReason(cfg, leaderLoss, powerLoss, powerLossOnMost, minISR); commitLoss != "" {
		allow(commitLoss, CommittedOffsetRegression)
		allow(commitLoss+"; the next owner of the partition processes again what the lost commit covered", Redelivered)
		// __share_group_state is written as __consumer_offsets is (acks=all,
		// the cluster's RF and min ISR): a lost state write takes the share
		// partition back to an older start offset.
		if cfg.Workload == history.WorkloadShare {
			allow(commitLoss+"; a share partition's state lives in __share_group_state, written the same way, and a lost write brings accepted records back (KIP-932's ShareCoordinator)", ShareAcceptedRedelivered)
		}
	}
	if why := readLossReason(cfg, leaderLoss, powerLoss); why != "" && cfg.Workload == history.WorkloadShare {
		allow(why+"; the offset a share group skipped can hold another record than the one it delivered", ShareSkip)
	}
	if cfg.CommitMode == "on-revoked" && anyFault {
		allow("commit in onPartitionsRevoked only: a crashed consumer never revokes, so what it processed since its last rebalance is consumed again by the next owner: at-least-once (seed 000 §8)", Redelivered)
	}
	if cfg.TransactionVersion == 1 && cfg.HasFault(history.DelaysRequests) {
		allow("transaction version 1 (Kafka 3.x, before KIP-890) with a fault that delays a client's requests: the transaction protocol before KIP-890 assumes ordered delivery; the epoch stays the same across a producer's transactions, so a produce, AddPartitionsToTxn or EndTxn arriving after its transaction ended is taken into the producer's next one (an aborted write committed, a commit ending the wrong transaction, a write landing outside its transaction)",
			AbortedRead, TornTransaction, LostCommittedWrite, IntermediateRead, G0, G1c, Duplicate)
		if cfg.Workload == history.WorkloadEOS {
			allow("transaction version 1 with delayed requests: a late EndTxn or produce moves output records and the group's offsets out of their transaction, so the pipeline's output and its committed offsets can disagree", eosSet...)
		}
	}
	if txn {
		allow("read_committed is not a snapshot: a poll fetches each partition separately and a transaction's markers land partition by partition, so a reader can see one partition's part of a transaction and not yet another's (read skew; Kafka promises atomic visibility only per partition)", GSingle)
	}
	if cfg.Workload == history.WorkloadAuthz {
		authzRules(cfg, minISR, leaderLoss, allow)
	}
	for _, a := range AnomalyNames {
		if rs := reasons[a]; len(rs) > 0 {
			out[a] = Verdict{true, strings.Join(rs, "; ")}
			continue
		}
		out[a] = Verdict{false, forbiddenReason(a, cfg, anyFault)}
	}
	return out
}

// authzRules are the authorization rows (issue 31). A revocation is a
// record of the metadata log: a broker stops honouring the binding when it
// applies it. One cut off from the controller (a partition, a slow link)
// or frozen (a pause) keeps its last image, and Kafka's brokers hold no
// lease on it: the controller fences the broker a session after its last
// heartbeat and moves its leaderships, but nobody tells the broker. So:
//   - writes: with acks=all and min ISR >= 2 an append commits only once a
//     follower fetches it, and the followers leave a fenced leader when
//     they apply its successor's record: the bound (authz.Bound, two
//     sessions) holds. With acks below all, or min ISR 1 and the ISR shrunk
//     to the leader alone, the stale leader acknowledges alone, for as long
//     as it stays cut off: no bound.
//   - reads: a broker cut off or frozen answers fetches from its last image
//     and its local log, however long: no bound under a fault that holds a
//     broker apart (history.DelaysRequests). A kill alone is none: a
//     restarted broker's older image lasts until the quorum reaches it.
func authzRules(cfg *history.Config, minISR int, leaderLoss bool, allow func(string, ...string)) {
	if leaderLoss && (cfg.Acks != "all" || minISR <= 1) {
		allow("acks="+cfg.Acks+", min ISR "+strconv.Itoa(minISR)+": a leader cut off from the controller keeps its old image (Kafka's brokers hold no lease on the metadata log) and acknowledges a revoked principal's records by itself, for as long as it stays cut off", UnauthorizedWrite)
	}
	if cfg.HasFault(history.DelaysRequests) {
		allow("a broker cut off from the controller (partition, slow link) or frozen with fetches queued (pause) answers them from its last image and its local log: Kafka's brokers hold no lease on their metadata and a fenced broker is not told, so no propagation bound holds for reads", UnauthorizedRead)
	}
}

// storageFaultRules are the rows of a fault that damages what a broker
// stored (history.StorageFault: disk-fault's bit flip). The broker never
// serves the flipped batch (storage.Log.Read checks the CRC), takes its log
// directory offline and halts; its unclean recovery cuts the log at the
// batch (Kafka's LogSegment.recover: the first invalid batch ends the
// segment), so that replica loses the batch and everything after it, as a
// power cut loses an unsynced tail. Another ISR member keeps its copy and
// leads; only a lone ISR member's flip loses records for good, clean
// election waiting for it to return with the shorter log (FAST'17: one
// node's corruption, Kafka among the stores losing data). The halt itself
// is a kill (history.TakesLeaderAway, PowerCut on lazyfs): the rows above.
// EIO and ENOSPC damage nothing stored: a write that failed is cut
// (storage.Log.Append) and its producer was answered KAFKA_STORAGE_ERROR.
func storageFaultRules(cfg *history.Config, minISR int, lossSet []string, allow func(string, ...string)) {
	const flip = "disk-fault (bit flip at rest): the broker refuses the flipped batch and halts (its log directory failed, KIP-112), and its recovery cuts the log at that batch (Kafka's LogSegment.recover)"
	switch {
	case cfg.Acks == "1":
		allow(flip+"; with acks=1 the leader's copy may be the only one, and a leader that returns (or any replica elected) without it has lost the record", lossSet...)
	case cfg.Acks == "all" && minISR <= 1:
		allow(flip+"; with min.insync.replicas=1 a batch acknowledged by a lone ISR member has that one copy, and clean election waits for the member, which returns without it (FAST'17: a single node's corruption loses data)", lossSet...)
	}
	allow(flip+"; a partition whose ISR shrank to its leader alone advances the high watermark by that leader's log (Kafka's Partition.maybeIncrementLeaderHW, before KIP-966), so consumers read records that its cut then removes; clean election waits for it", readLossSet...)
}

// readLossSet are the anomalies of a log that loses records a consumer
// already read, whether or not they were acknowledged: the offsets they held
// are reused (inconsistent-offsets), the log is no longer one history of
// appends (nonlinearizable), consumers past the new end are reset (poll-skip,
// nonmonotonic-poll), and an idempotent producer's retry of a batch whose
// only copies were lost is appended again (duplicate).
var readLossSet = []string{InconsistentOffsets, Nonlinearizable, PollSkip, NonmonotonicPoll, Duplicate}

// readLossReason says why records below the high watermark, which consumers
// may have read, can vanish from the log, or "".
//
// Duplicates by idempotent producers follow from it: KIP-98's dedupe is the
// broker's producer state (Kafka's ProducerStateManager), which every replica
// rebuilds from the batches in its own log; a leader whose log never had a
// batch, or lost it, has no sequence for it and appends the producer's retry
// as new. Idempotence assumes the batch survives on whoever leads next.
func readLossReason(cfg *history.Config, leaderLoss, powerLoss bool) string {
	const dup = "; an idempotent producer's retry of a lost batch is new to the leader that lacks it (KIP-98: producer state is rebuilt from the log, ProducerStateManager), so the record can land twice"
	switch {
	case cfg.Unclean && leaderLoss:
		return "unclean.leader.election.enable=true: an out-of-sync leader lacks records below the old high watermark that consumers already read" + dup
	case powerLoss:
		// Kafka 3.x's Partition.maybeIncrementLeaderHW takes the minimum
		// LEO over the ISR, whatever min.insync.replicas says: a leader
		// whose followers fell out of the ISR advances the HW alone, and
		// its unsynced records are read before any other replica has them
		// (acks=all answers NOT_ENOUGH_REPLICAS_AFTER_APPEND, so with min
		// ISR >= 2 they are not acknowledged). KIP-966's eligible leader
		// replicas hold the HW below min ISR in Kafka 4; gregor follows 3.x.
		return "lazyfs power loss with fsync " + orDefault(cfg.Fsync, "never") +
			": a partition whose ISR shrank to its leader alone advances the high watermark by that leader's log (Kafka's Partition.maybeIncrementLeaderHW, before KIP-966), and a power cut on it loses unsynced records consumers already read; clean election waits for it to return with the shorter log" + dup
	}
	return ""
}

// powerLossWhere names the brokers a power loss can hit at once.
func powerLossWhere(cfg *history.Config) string {
	if cfg.NemesisTarget == history.TargetAll || cfg.NemesisTarget == history.TargetMajority {
		return cfg.NemesisTarget + " nodes"
	}
	return "several brokers at once (--compose overlaps the timelines of " + strings.Join(powerCutKinds(cfg), ", ") + ")"
}

// composedPowerCuts counts the run's nemesis kinds that cut power.
func composedPowerCuts(cfg *history.Config) int { return len(powerCutKinds(cfg)) }

func powerCutKinds(cfg *history.Config) []string {
	var out []string
	for _, k := range cfg.Nemeses {
		if history.NemesisClasses(k)&history.PowerCut != 0 {
			out = append(out, k)
		}
	}
	return out
}

// commitLossReason says why an acknowledged commit can be lost, or "".
func commitLossReason(cfg *history.Config, leaderLoss, powerLoss, powerLossOnMost bool, minISR int) string {
	switch {
	case cfg.Unclean && leaderLoss:
		return "unclean.leader.election.enable=true: an out-of-sync replica of __consumer_offsets can lead and lose acknowledged commits (seeds 000, 001 §5)"
	case powerLoss && minISR <= 1:
		return "min.insync.replicas=1 with power loss: a commit acknowledged by a lone ISR member of __consumer_offsets lives in its page cache only (seed 003)"
	case powerLossOnMost:
		return "power loss on " + powerLossWhere(cfg) + " with fsync " + orDefault(cfg.Fsync, "never") + ": acknowledged commits can be in no replica's disk"
	}
	return ""
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// forbiddenReason says in words why the configuration forbids an anomaly.
func forbiddenReason(a string, cfg *history.Config, anyFault bool) string {
	if !anyFault {
		return "no faults were injected: a correct log shows no anomaly"
	}
	switch a {
	case LostWrite, Unseen, InconsistentOffsets, Nonlinearizable:
		return "acks=" + cfg.Acks + ", min ISR " + strconv.Itoa(cfg.MinISR) + ", unclean election off: an acknowledged record is on every ISR member and a new leader comes from the ISR, so it is not lost (seed 001 §3)"
	case NonmonotonicSend:
		return "a producer's records to one partition keep their order unless acknowledged records are lost or a non-idempotent producer has several requests in flight"
	case Duplicate:
		return "enable.idempotence=true: the broker drops a retried batch by its producer id and sequence, and with clean election and no power loss every broker that can lead holds the batch and its sequence (seed 002, KIP-98)"
	case PollSkip, NonmonotonicPoll:
		return "a consumer reads below the high watermark, which every ISR member holds; with clean election its position never has to move"
	case UnderMinISRAck:
		return "min.insync.replicas=" + strconv.Itoa(cfg.MinISR) + ": a leader must refuse acks=all (NOT_ENOUGH_REPLICAS) while its ISR is smaller; acknowledging anyway leaves a record with fewer copies than the setting promises (seed 003)"
	case G1a:
		return "a send that failed certainly did not happen; reading it is an aborted read in every configuration"
	case CommittedSkip:
		if cfg.AutoCommit {
			return "auto-commit as the Java consumer does it commits, at the next poll, only records the previous polls returned, which the application processed before polling again, and failed records are retried: no committed offset passes an unprocessed record (Jepsen's Bufstream 0.1.0 report, corrected 2024-11-13)"
		}
		return "offsets are committed only after processing (or not at all) and failed records are retried, so no committed offset passes an unprocessed record"
	case Redelivered:
		return "no commit mode that re-delivers was configured"
	case AbortedRead, TornTransaction, LostCommittedWrite, IntermediateRead, G0, G1c:
		v := "transaction version 2 (KIP-890): every EndTxn bumps the producer epoch, so a request delayed past its transaction carries an older epoch and is fenced (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH); markers must be strictly newer (KIP-1228)"
		if cfg.TransactionVersion == 1 {
			v = "transaction version 1 without a fault that delays requests: no request arrives after its transaction ended"
		}
		switch a {
		case AbortedRead:
			return v + "; a read_committed consumer never returns an aborted transaction's records (the aborted-transaction index)"
		case IntermediateRead:
			return v + "; a read_committed fetch ends at the last stable offset, past a transaction only once all its records and its marker are replicated"
		case G0, G1c:
			return v + "; each transactional producer owns its keys and runs one transaction at a time, so offset order is its transaction order, and a reader sees a write only after its commit: no write or read cycle"
		}
		return v + "; a committed transaction's records are all below its COMMIT marker, on every ISR member, and read_committed returns them all"
	case EOSDuplicate, EOSMissing, EOSReorder, EOSOffsetMismatch:
		return "exactly-once processing (KIP-98, KIP-447): each transaction writes a batch's output and the group's offsets atomically, read_committed consumers and stable offset fetches see both or neither, so every input record below the committed offsets is in the output once, in input order, and nothing past them is"
	case UnauthorizedWrite:
		return "acks=all, min ISR " + strconv.Itoa(cfg.MinISR) + ": a revoked principal's record commits only if a follower fetches it from a leader that has not applied the revocation; within the bound every broker in contact with the controller has applied it, and one cut off has been fenced and left by its followers (DESIGN.md section 5)"
	case UnauthorizedRead:
		return "no fault holds a broker apart from the controller: every broker applies a revocation within the bound, a restarted one as soon as the quorum reaches it (DESIGN.md section 5)"
	case CommittedOffsetRegression:
		return "__consumer_offsets is written acks=all with min ISR " + strconv.Itoa(cfg.MinISR) + " and clean election: an acknowledged commit survives a coordinator failover (the new coordinator reloads it), so a newly assigned consumer never starts below it"
	}
	return "forbidden"
}
