package history

import (
	"encoding/json"
	"fmt"
)

// Share-group operations (KIP-932; the share workload, DESIGN.md section 4).
// Each line's Group is the share group; the value is Raw JSON:
//
//	share-fetch  invoke {}; ok ShareFetch: the records the poll returned,
//	             each with the delivery count the broker gave it, and the
//	             acquisition lock the consumer was told; fail/info: the poll
//	             errored (nothing is known acquired)
//	share-ack    invoke ShareAck with Acks: the acknowledgements about to be
//	             flushed; ok ShareAck: Acks those the broker took, Unknown
//	             those whose answer was an error or never came; info: all
//	             unknown
//	share-drain  ok ShareDrain: the final drain ended (Complete when it saw
//	             no record for longer than a lock, so every record still
//	             available was acquired by then)
const (
	FShareFetch = "share-fetch"
	FShareAck   = "share-ack"
	FShareDrain = "share-drain"
)

// Acknowledgement types as share-ack lines spell them.
const (
	ShareAccept  = "accept"
	ShareRelease = "release"
	ShareReject  = "reject"
)

// ShareRecord is one acquired record of a share-fetch line.
type ShareRecord struct {
	Key    string `json:"key"`
	Offset int64  `json:"offset"`
	Value  int64  `json:"value"`
	Count  int16  `json:"count"` // delivery count (1: first delivery)
	// Fetched is when (the history's clock, ns) the client received the
	// ShareFetch answer that acquired the record: the broker acquired it
	// no later. A poll can return it much later (the client fetches
	// ahead). 0: not recorded (histories before it was).
	Fetched int64 `json:"fetched,omitempty"`
}

// ShareFetch is the value of an ok share-fetch line.
type ShareFetch struct {
	// LockMs is the acquisition lock (share.record.lock.duration.ms) and
	// Limit the delivery count limit the run's brokers apply.
	LockMs   int64         `json:"lock_ms"`
	Limit    int16         `json:"limit"`
	Acquired []ShareRecord `json:"acquired"`
	// Member is the client's share-group member id as last heartbeated
	// (the node logs' share-partition traces name it), "" before its
	// first heartbeat.
	Member string `json:"member,omitempty"`
}

// ShareAckItem is one record's acknowledgement.
type ShareAckItem struct {
	Key    string `json:"key"`
	Offset int64  `json:"offset"`
	Type   string `json:"type"`
	// Count is the delivery count of the delivery acknowledged (0: not
	// recorded). The broker's answer need not be about that delivery: an
	// acknowledgement names a member and an offset, and a member that got
	// the record again meanwhile has it acknowledged in its new delivery.
	Count int16 `json:"count,omitempty"`
}

// ShareAck is the value of a share-ack line.
type ShareAck struct {
	Acks    []ShareAckItem `json:"acks"`
	Unknown []ShareAckItem `json:"unknown,omitempty"`
	// Member is the member id the acknowledgements were sent as.
	Member string `json:"member,omitempty"`
	// Errors are, for each key of an Unknown item, why: the partition's
	// answer (an error name), "no answer" (none came before the flush
	// ended) or the flush's own error.
	Errors map[string]string `json:"errors,omitempty"`
}

// ShareDrain is the value of a share-drain line.
type ShareDrain struct {
	Complete bool `json:"complete"`
}

// ShareOp builds a share line of process p in group g.
func ShareOp(p Process, typ Type, f, g string, v any) Op {
	raw, _ := json.Marshal(v) // plain structs: cannot fail
	return Op{Process: p, Type: typ, F: f, Raw: raw, Group: g}
}

// ParseShare reads a share line's value into v.
func ParseShare(op *Op, v any) error {
	if len(op.Raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(op.Raw, v); err != nil {
		return fmt.Errorf("op %d: %s value: %w", op.Index, op.F, err)
	}
	return nil
}
