// Package checker turns a history into anomalies (DESIGN.md section 5). It
// imports history only: no cluster is needed to check a history.
//
// Check pairs each invoke with its completion, builds per key an offset table
// (what value every offset was acknowledged or read with), then runs:
//
//	lost-write            an ok send never read by any poll, whose offset is below the
//	                      highest offset read of its key
//	unseen                an ok send never read, at or above that offset (or acknowledged
//	                      without one): not provably lost, may be late
//	duplicate             one value observed at two or more offsets of a key
//	inconsistent-offsets  one offset acknowledged or read with two different values
//	nonmonotonic-send     a process's later ok send to a key (in completion order, and in
//	                      micro-op order within one op) acknowledged at a lower offset
//	poll-skip             a process's next record of a key comes after a gap holding an
//	                      offset some poll read, with no assign/subscribe/crash between
//	nonmonotonic-poll     a process's next record of a key is at or below its previous one,
//	                      with no assign/subscribe/crash between
//	G1a                   a send that ended fail was read
//	committed-skip        a group's highest ok commit of a key passes an offset some poll
//	                      read that the group never processed
//	redelivered           one offset of a key in two "process" events of one group
//	committed-offset-     a consumer newly assigned a key starts below the group's last
//	regression            acknowledged commit of it, and no commit that may have come
//	                      later was that low (commitregress.go)
//	nonlinearizable       porcupine finds no linearization of a key's sends and polls
//	                      (model and windows: linear.go)
//
// Conventions the histories must follow (history's package comment has the
// format): values are unique per key; a send failing with
// NOT_ENOUGH_REPLICAS_AFTER_APPEND is indeterminate whatever its type says;
// an indeterminate poll, an assign, subscribe or rebalance line and a crash
// reset the process's poll position; invokes never completed are
// indeterminate. Commit, process and rebalance lines stand alone (no
// invoke).
//
// Group figures (groupfig.go) measure each consumer group that wrote
// rebalance or process lines: each rebalance's pause and lag spike, lag over
// time, and the records each crashed or restarted consumer left to others.
//
// Expect (theory.go) maps a configuration to the anomalies it allows; the
// result splits what was found into forbidden (valid false) and allowed
// ("unsafe configuration demonstrated"). Availability figures come from the
// same history (availability.go). Generate (gen.go) simulates a correct log
// for tests and benchmarks.
package checker
