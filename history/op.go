// Package history holds the operation types of a gregor test history and
// their JSON Lines codec (DESIGN.md section 4). Everything that records or reads
// a history imports it: workloads and the nemesis write, the checker and the
// reports read.
//
// One operation a line, in the order the harness observed them:
//
//	{"index":0,"time":1200345,"process":0,"type":"invoke","f":"send","value":[["send","t/0",17]]}
//	{"index":1,"time":1900120,"process":0,"type":"ok","f":"send","value":[["send","t/0",[42,17]]]}
//	{"index":6,"time":2400000,"process":"nemesis","type":"info","f":"kill","value":{"nodes":[2]}}
//
// The shape of "value" depends on "f":
//
//	send, poll, txn,    a list of micro-ops (Op.Mops): ["send", key, value] completes as
//	poll-uncommitted    ["send", key, [offset, value]] (an ok send without an offset, e.g. acks=0,
//	                    keeps the bare value); ["poll"] completes as ["poll", {key: [[offset, value]...]}]
//	assign, subscribe   a list of keys (Op.Keys)
//	commit              {key: offset} (Op.Offsets); the committed offset is the NEXT offset to
//	                    consume, as in Kafka
//	process             {key: [[offset, value]...]} (Op.Records): records the application finished
//	                    processing; a single "ok" line, no invoke ("fail": records whose
//	                    processing failed, swallowed or given up)
//	rebalance           a group consumer's membership event (Rebalance, in Op.Raw); no invoke
//	anything else       free JSON kept verbatim (Op.Raw): nemesis verbs, crash
//
// Events without an invoke: "process" lines, "commit" lines a group consumer
// writes when a commit is answered (the committed offsets; "ok" for the keys
// the coordinator accepted), "rebalance" lines, "assign"/"subscribe" lines,
// and nemesis operations. A rebalance or assign line tells the checker that
// the process's poll positions may jump.
package history

import (
	"encoding/json"
	"fmt"
)

// Type is the kind of an operation line.
type Type uint8

const (
	// Invoke: the operation started.
	Invoke Type = iota + 1
	// OK: it happened.
	OK
	// Fail: it certainly did not happen.
	Fail
	// Info: unknown (timeout, connection lost); it may or may not have happened.
	Info
)

var typeNames = [...]string{Invoke: "invoke", OK: "ok", Fail: "fail", Info: "info"}

func (t Type) String() string {
	if t >= Invoke && t <= Info {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// ParseType maps "invoke", "ok", "fail", "info" to a Type.
func ParseType(s string) (Type, bool) {
	switch s {
	case "invoke":
		return Invoke, true
	case "ok":
		return OK, true
	case "fail":
		return Fail, true
	case "info":
		return Info, true
	}
	return 0, false
}

// Process identifies who ran an operation: a client id (>= 0) or the nemesis.
// Invariant: a Process is >= 0 or equal to Nemesis (the decoder refuses
// anything else; writers make only client ids and Nemesis).
type Process int

// Nemesis is the process of fault operations; it marshals as "nemesis".
const Nemesis Process = -1

func (p Process) String() string {
	if p == Nemesis {
		return "nemesis"
	}
	return fmt.Sprint(int(p))
}

// Well-known values of Op.F. Nemesis verbs are the vocabulary of nemesis.go.
const (
	FSend = "send"
	FPoll = "poll"
	FTxn  = "txn"
	// FPollUncommitted is a poll by a read_uncommitted consumer (the txn
	// workload's control process): its records are what the log holds,
	// aborted transactions' included, so the checker keeps them out of
	// every read_committed check (DESIGN.md section 4).
	FPollUncommitted = "poll-uncommitted"
	// FEOSOffsets ends an eos run: the pipeline group's committed offsets
	// as the final read found them (invoke, then ok with Raw EOSOffsets).
	FEOSOffsets = "eos-offsets"
	FAssign     = "assign"
	FSubscribe  = "subscribe"
	FCommit     = "commit"
	FProcess    = "process"
	FCrash      = "crash"
)

// MopKind is the function of a micro-op.
type MopKind uint8

const (
	MopSend MopKind = iota + 1
	MopPoll
)

// NoOffset marks a send whose offset is not known (not yet completed, failed,
// indeterminate, or acknowledged without one as with acks=0).
const NoOffset int64 = -1

// Record is one record of a partition log as a poll or process event saw it.
type Record struct {
	Offset int64
	Value  int64
}

// KeyRecords is the records of one key, in the order given.
type KeyRecords struct {
	Key     string
	Records []Record
}

// KeyOffset is one key's committed offset (the next offset to consume).
type KeyOffset struct {
	Key    string
	Offset int64
}

// Mop is a micro-op of a send or poll operation.
type Mop struct {
	Kind MopKind
	// Send: the key and value written, and the offset the broker acknowledged
	// it at. Invariant: Offset >= 0 or Offset == NoOffset (the decoder maps a
	// negative offset to NoOffset).
	Key    string
	Value  int64
	Offset int64
	// Poll: the records read per key; nil on invoke (["poll"]). A completed
	// poll with no records has a non-nil empty slice.
	Polls []KeyRecords
}

// Send builds a send micro-op as invoked (offset unknown).
func Send(key string, value int64) Mop {
	return Mop{Kind: MopSend, Key: key, Value: value, Offset: NoOffset}
}

// Poll builds a poll micro-op as invoked.
func Poll() Mop { return Mop{Kind: MopPoll} }

// Op is one line of a history. Which of Mops, Keys, Offsets, Records and Raw
// holds the value depends on F (see the package comment); the others are nil.
type Op struct {
	Index   int64
	Time    int64 // nanoseconds since the test started
	Process Process
	Type    Type
	F       string
	Mops    []Mop
	Keys    []string
	Offsets []KeyOffset
	Records []KeyRecords
	Raw     json.RawMessage
	// Error is the error code a failed or indeterminate operation ended with,
	// e.g. "NOT_ENOUGH_REPLICAS"; optional.
	Error string
	// Group is the consumer group of commit and process events; optional
	// (empty means the test's one group).
	Group string
}

// valueShape says how F's value is encoded.
type valueShape uint8

const (
	shapeRaw     valueShape = iota // free JSON
	shapeMops                      // [[mop]...]
	shapeKeys                      // ["key"...]
	shapeOffsets                   // {key: offset}
	shapeRecords                   // {key: [[offset, value]...]}
)

func shapeOf(f string) valueShape {
	switch f {
	case FSend, FPoll, FTxn, FPollUncommitted:
		return shapeMops
	case FAssign, FSubscribe:
		return shapeKeys
	case FCommit:
		return shapeOffsets
	case FProcess:
		return shapeRecords
	}
	return shapeRaw
}

// IsClient reports whether the op was run by a client (not the nemesis).
func (o *Op) IsClient() bool { return o.Process != Nemesis }
