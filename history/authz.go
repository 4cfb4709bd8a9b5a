package history

import (
	"encoding/json"
	"fmt"
)

// WorkloadAuthz is Config.Workload of the authorization workload
// (workloads/authz): producers and consumers under principals whose ACLs
// are granted and revoked during the run.
const WorkloadAuthz = "authz"

// Authorization operations (the authz workload, DESIGN.md section 4).
// The value is Raw JSON; every line names its principal ("User:NAME"):
//
//	acl          invoke AuthzACL (action grant or revoke, the operation
//	             WRITE or READ on the run's topic); ok: the controller
//	             acknowledged it (its record is in the metadata log), with
//	             BoundMs on a revocation; fail: refused; info: unknown
//	authz-send   invoke AuthzSend (the key and value); ok AuthzSend with
//	             the offset the broker appended it at; fail/info: refused or
//	             unknown (Error: the Kafka error, e.g.
//	             TOPIC_AUTHORIZATION_FAILED)
//	authz-poll   invoke AuthzPoll (the key, the offset fetched from); ok
//	             AuthzPoll with the records the broker answered; fail/info:
//	             refused or unknown
const (
	FACL       = "acl"
	FAuthzSend = "authz-send"
	FAuthzPoll = "authz-poll"
)

// ACL actions and the operations the workload grants.
const (
	ACLGrant  = "grant"
	ACLRevoke = "revoke"
	ACLWrite  = "WRITE"
	ACLRead   = "READ"
)

// AuthzACL is the value of an acl line.
type AuthzACL struct {
	Action    string `json:"action"`
	Principal string `json:"principal"`
	Operation string `json:"operation"`
	// BoundMs, on an ok revocation, is the propagation bound the workload
	// promises (DESIGN.md section 5, unauthorized-write): a broker stops
	// honouring the revoked binding at most this long after the
	// acknowledgement.
	BoundMs int64 `json:"bound_ms,omitempty"`
}

// AuthzSend is the value of an authz-send line.
type AuthzSend struct {
	Principal string `json:"principal"`
	Key       string `json:"key"`
	Value     int64  `json:"value"`
	Offset    int64  `json:"offset"` // -1 until acknowledged
}

// AuthzPoll is the value of an authz-poll line.
type AuthzPoll struct {
	Principal string        `json:"principal"`
	Key       string        `json:"key"`
	From      int64         `json:"from"`
	Records   []AuthzRecord `json:"records,omitempty"`
}

// AuthzRecord is one record an authz-poll read.
type AuthzRecord struct {
	Offset int64 `json:"offset"`
	Value  int64 `json:"value"`
}

// AuthzOp builds an authorization line of process p.
func AuthzOp(p Process, typ Type, f string, v any) Op {
	raw, _ := json.Marshal(v) // plain structs: cannot fail
	return Op{Process: p, Type: typ, F: f, Raw: raw}
}

// ParseAuthz reads an authorization line's value into v.
func ParseAuthz(op *Op, v any) error {
	if len(op.Raw) == 0 {
		return fmt.Errorf("op %d: %s has no value", op.Index, op.F)
	}
	if err := json.Unmarshal(op.Raw, v); err != nil {
		return fmt.Errorf("op %d: %s value: %w", op.Index, op.F, err)
	}
	return nil
}
