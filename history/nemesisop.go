package history

import (
	"encoding/json"
	"fmt"
)

// NemesisValue is the value of every nemesis operation (process "nemesis",
// DESIGN.md section 4): written by the nemesis (nemesis.Runner, HealAll,
// Describe) through NemesisOp, read by everything that follows a fault
// through ParseNemesis (shrinking, the reports, schedule.json's resolved
// nodes). Fields are only ever added: a history written before a field
// existed decodes with it zero.
type NemesisValue struct {
	NemesisAction
	// Step is the index in the schedule; nil for heal-all (and in histories
	// written before steps were recorded).
	Step *int `json:"step,omitempty"`
	// Target is the rule that chose the nodes (--nemesis-target; none for
	// client faults), Shape a partition's shape, Hold the fault's duration
	// (a Go duration string).
	Target string `json:"target,omitempty"`
	Shape  string `json:"shape,omitempty"`
	Hold   string `json:"hold,omitempty"`
	// Process is the client a client-crash tore down, or the producer a
	// pause-producer froze.
	Process *int `json:"process,omitempty"`
	// Phase names a scenario fault's phase (strand-leader, kip101), or a
	// restart-storm round's; Round numbers the round (at the storm's end:
	// how many there were).
	Phase string `json:"phase,omitempty"`
	Round *int   `json:"round,omitempty"`
	// Processes are the consumers a consumer-restart or consumer-join
	// started, or the clients a link fault hit.
	Processes []int `json:"processes,omitempty"`
	// Broker is the address a link fault acted on; Conns how many of the
	// clients' connections to it the fault found (a delay-client's end: how
	// many delivered held bytes); LateBytes what a delay-client delivered
	// late, at its end.
	Broker    string `json:"broker,omitempty"`
	Conns     *int   `json:"conns,omitempty"`
	LateBytes *int   `json:"late_bytes,omitempty"`
	// Commands are the fault commands the cluster ran for this operation
	// (runtime external).
	Commands []NemesisCommand `json:"commands,omitempty"`
	// Led are the topic partitions the nodes hit led just before a node
	// fault was applied, as the nemesis's topology answered then (fault
	// starts only; absent in histories written before it was recorded and
	// for faults that hit no node). LedError says why Led is missing or
	// partial (the topology could not be asked in time).
	Led      []LedPartition `json:"led,omitempty"`
	LedError string         `json:"led_error,omitempty"`
	FaultPointValue
	NodeFaultValue
}

// LedPartition is one topic partition a node hit by a fault led when the
// fault was applied: its leader epoch and ISR from Metadata, and the high
// watermark its leader answered to ListOffsets (latest, read_uncommitted)
// just before: every ISR member held the records below it, so acknowledged
// records at or above it are the ones the followers were not known to
// hold. At is when the answers arrived (ns on the history's clock).
type LedPartition struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	ISR         []int32 `json:"isr"`
	// HW is nil when the leader did not answer ListOffsets.
	HW *int64 `json:"hw,omitempty"`
	At int64  `json:"at"`
}

// NemesisAction is what a nemesis operation acted on: the nodes it hit, a
// network partition's sides, the topic partition whose leader it targeted
// (-1: none) and a note when a target could not be resolved and a fallback
// was used. The nemesis resolves a schedule step to one (nemesis.Action).
type NemesisAction struct {
	// Nodes is never null on disk (NemesisOp writes [] for none).
	Nodes     []int32   `json:"nodes"`
	Groups    [][]int32 `json:"groups,omitempty"`
	Partition int32     `json:"partition"`
	Note      string    `json:"note,omitempty"`
}

// NemesisCommand is one fault command a runtime ran on a node (the external
// runtime's fault file), recorded with the nemesis operation that ran it.
type NemesisCommand struct {
	Node    int32  `json:"node"`
	Verb    string `json:"verb"`
	Command string `json:"command"`
	// Exit is the exit status; -1 when the command did not exit by itself
	// (timed out, could not start).
	Exit int `json:"exit"`
	// Output is at most 4 KiB of what it printed.
	Output   string `json:"output,omitempty"`
	Duration string `json:"duration"`
	// Error is set when the command failed (a non-zero exit, a timeout).
	Error string `json:"error,omitempty"`
}

// NemesisOp builds the nemesis operation verb (a fault kind, or the verb
// that ends one) at time t carrying v; err, when not nil, is its error.
func NemesisOp(t int64, verb string, v NemesisValue, err error) Op {
	if v.Nodes == nil {
		v.Nodes = []int32{}
	}
	raw, _ := json.Marshal(v) // plain structs: cannot fail
	op := Op{Time: t, Process: Nemesis, Type: Info, F: verb, Raw: raw}
	if err != nil {
		op.Error = err.Error()
	}
	return op
}

// ParseNemesis reads the value of a nemesis operation.
func ParseNemesis(op *Op) (NemesisValue, error) {
	var v NemesisValue
	if op.Process != Nemesis {
		return v, fmt.Errorf("op %d is process %v's, not the nemesis's", op.Index, op.Process)
	}
	if err := json.Unmarshal(op.Raw, &v); err != nil {
		return v, fmt.Errorf("op %d: nemesis value: %w", op.Index, err)
	}
	return v, nil
}
