package checker

import (
	"encoding/json"
	"fmt"
	"os"

	"gregor/history"
)

// Anomaly names: a contract (DESIGN.md section 5), read by reports and CI.
const (
	LostWrite           = "lost-write"
	Unseen              = "unseen"
	Duplicate           = "duplicate"
	InconsistentOffsets = "inconsistent-offsets"
	NonmonotonicSend    = "nonmonotonic-send"
	PollSkip            = "poll-skip"
	NonmonotonicPoll    = "nonmonotonic-poll"
	G1a                 = "G1a"
	CommittedSkip       = "committed-skip"
	Redelivered         = "redelivered"
	// CommittedOffsetRegression: a consumer assigned a key started below an
	// offset the group had committed, acknowledged (commitregress.go).
	CommittedOffsetRegression = "committed-offset-regression"
	Nonlinearizable           = "nonlinearizable"
	// Transactions (txn.go): the txn workload's anomalies.
	AbortedRead        = "aborted-read"
	TornTransaction    = "torn-transaction"
	LostCommittedWrite = "lost-committed-write"
	IntermediateRead   = "intermediate-read"
	G0                 = "G0"
	G1c                = "G1c"
	GSingle            = "G-single"
	// The exactly-once pipeline (eos.go).
	EOSDuplicate      = "eos-duplicate"
	EOSMissing        = "eos-missing"
	EOSReorder        = "eos-reorder"
	EOSOffsetMismatch = "eos-offset-mismatch"
)

// AnomalyNames lists every anomaly the checker knows, in table order.
var AnomalyNames = []string{LostWrite, Unseen, Duplicate, InconsistentOffsets, NonmonotonicSend,
	PollSkip, NonmonotonicPoll, G1a, CommittedSkip, Redelivered, CommittedOffsetRegression, Nonlinearizable, UnderMinISRAck,
	AbortedRead, TornTransaction, LostCommittedWrite, IntermediateRead, G0, G1c, GSingle,
	EOSDuplicate, EOSMissing, EOSReorder, EOSOffsetMismatch,
	ShareDoubleAcquire, ShareAcceptedRedelivered, ShareSkip, ShareOverLimit, ShareReleaseLost, ShareLateAck,
	UnauthorizedWrite, UnauthorizedRead}

// Validity is true, false or unknown; it marshals as true, false or "unknown".
type Validity int8

const (
	ValidUnknown Validity = iota
	ValidTrue
	ValidFalse
)

func (v Validity) MarshalJSON() ([]byte, error) {
	switch v {
	case ValidTrue:
		return []byte("true"), nil
	case ValidFalse:
		return []byte("false"), nil
	}
	return []byte(`"unknown"`), nil
}

func (v *Validity) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true":
		*v = ValidTrue
	case "false":
		*v = ValidFalse
	case `"unknown"`:
		*v = ValidUnknown
	default:
		return fmt.Errorf("valid: want true, false or \"unknown\", got %s", b)
	}
	return nil
}

func (v Validity) String() string {
	b, _ := v.MarshalJSON()
	return string(b)
}

// OpRef names one operation an example involves.
type OpRef struct {
	Index   int64           `json:"index"`
	Process history.Process `json:"process"`
	Type    string          `json:"type"`
	F       string          `json:"f"`
	Time    int64           `json:"time"`
	Key     string          `json:"key,omitempty"`
	Offset  *int64          `json:"offset,omitempty"`
	Value   *int64          `json:"value,omitempty"`
}

// Example is one instance of an anomaly. Fields not relevant to the anomaly
// are omitted.
type Example struct {
	Key     string           `json:"key,omitempty"`
	Group   string           `json:"group,omitempty"`
	Process *history.Process `json:"process,omitempty"`
	Offset  *int64           `json:"offset,omitempty"`
	Value   *int64           `json:"value,omitempty"`
	Offsets []int64          `json:"offsets,omitempty"`
	Values  []int64          `json:"values,omitempty"`
	// MaxReadOffset is the highest offset any poll read of the key (lost-write).
	MaxReadOffset *int64  `json:"max_read_offset,omitempty"`
	Note          string  `json:"note,omitempty"`
	Ops           []OpRef `json:"ops"`
	// Visualization is porcupine's HTML for a nonlinearizable key.
	Visualization string `json:"visualization,omitempty"`
}

// Verdict says whether a configuration allows an anomaly, and why.
type Verdict struct {
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason"`
}

// KeyLinearizability is porcupine's verdict for one key.
type KeyLinearizability struct {
	// Status: "ok", "illegal" or "unknown" (time budget spent, or the key's
	// history could not be modelled).
	Status  string `json:"status"`
	Windows int    `json:"windows"`
	Ops     int    `json:"ops"`
	// FailedOffsets is the offset range [from, to) of the failing window.
	FailedOffsets []int64 `json:"failed_offsets,omitempty"`
	Visualization string  `json:"visualization,omitempty"`
	Note          string  `json:"note,omitempty"`
}

// Stats counts what the history held.
type Stats struct {
	Ops     int `json:"ops"`
	Sends   int `json:"sends"` // send micro-ops, any outcome
	Polls   int `json:"polls"` // ok poll micro-ops
	Records int `json:"records_read"`
	Keys    int `json:"keys"`
	// LostAcks counts acknowledged sends gone from the log as last read:
	// never read though later offsets were (lost-write), or overwritten (the
	// latest read of their offset shows another value, which
	// inconsistent-offsets reports per offset). It is the matrix report's
	// "lost acks": a record a consumer saw before it vanished is still lost.
	LostAcks int `json:"lost_acks"`
	// Transactions: committed, aborted (failed) and indeterminate txn
	// operations; UncommittedAbortedReads counts records of aborted
	// transactions that read_uncommitted polls returned (allowed in every
	// transaction version: the control that shows aborted records were
	// there to be read).
	TxnCommitted            int `json:"txn_committed,omitempty"`
	TxnAborted              int `json:"txn_aborted,omitempty"`
	TxnUnknown              int `json:"txn_unknown,omitempty"`
	UncommittedAbortedReads int `json:"uncommitted_aborted_reads,omitempty"`
}

// Result is the checker's answer; it marshals as DESIGN.md section 5's object.
type Result struct {
	Valid     Validity             `json:"valid"`
	Anomalies map[string][]Example `json:"anomalies"`
	Counts    map[string]int       `json:"counts"`
	// Forbidden and Allowed split the anomalies found by the configuration's
	// theory; the reason is the theory's (for Allowed: "unsafe configuration
	// demonstrated").
	Forbidden map[string]string `json:"forbidden"`
	// Evidence is, per anomaly found, the earliest time (ns on the
	// history's clock) at which the history held its proof: for lost-write
	// the first read past the acknowledged offset that lacked the record,
	// for inconsistent-offsets the second value read at an offset, for
	// under-min-isr-ack the metadata sample after the acknowledgement, else
	// the latest operation the example cites. gregor validate's time to
	// detection is measured to it.
	Evidence map[string]int64  `json:"evidence,omitempty"`
	Allowed  map[string]string `json:"allowed"`
	// Expected is the full theory for the configuration, found or not.
	Expected map[string]Verdict `json:"expected"`
	// ConfigNote says where the theory came from, or that without a
	// configuration every anomaly is treated as forbidden.
	ConfigNote string `json:"config"`
	// PlantedBugs copies the configuration's planted bugs: forbidden anomalies
	// are then expected, and a valid result means the harness missed them.
	PlantedBugs []string `json:"planted_bugs,omitempty"`
	// UnknownReasons says why valid is "unknown", when it is.
	UnknownReasons  []string                      `json:"unknown_reasons,omitempty"`
	Linearizability map[string]KeyLinearizability `json:"linearizability"`
	Availability    Availability                  `json:"availability"`
	// Groups measures each consumer group (group workloads only).
	Groups   []GroupFigures `json:"groups,omitempty"`
	Stats    Stats          `json:"stats"`
	Warnings []string       `json:"warnings,omitempty"`
}

// JSON renders the result indented, for the CLI.
func (r *Result) JSON() []byte {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		panic(err) // every field is marshalable
	}
	return b
}

// ReadResultFile reads a results.json that JSON wrote (a run directory's
// history.ResultsFile).
func ReadResultFile(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &res, nil
}

func i64(v int64) *int64 { return &v }

func proc(p history.Process) *history.Process { return &p }

func ref(c *call) OpRef {
	return OpRef{Index: c.cindex, Process: c.proc, Type: c.typ.String(), F: c.f, Time: c.endSeen}
}

func refMop(c *call, key string, offset, value int64) OpRef {
	r := ref(c)
	r.Key = key
	if offset >= 0 {
		r.Offset = i64(offset)
	}
	r.Value = i64(value)
	return r
}
