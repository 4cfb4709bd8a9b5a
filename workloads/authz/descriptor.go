// Package authz is the authorization workload (issue 31, --workload
// authz): principals, each with a producer and a consumer on the run's
// topic, whose WRITE and READ ACLs a grantor grants and revokes during the
// run while the nemeses fault the brokers; every grant and revocation, its
// acknowledgement, every send and every fetch are in the history
// (history/authz.go), checked by checker/authz.go (unauthorized-write,
// unauthorized-read). The cluster runs the authorizer (the harness turns it
// on for this workload) behind a SASL listener: the clients' own security
// (--security-protocol SASL_*) is the super user the workload manages ACLs
// and SCRAM credentials with.
package authz

import (
	"fmt"
	"time"

	"gregor/history"
	"gregor/workloads/kit"
)

// Name is the authz workload's name (--workload, test.json's workload).
const Name = history.WorkloadAuthz

// Descriptor is the authz workload as the layers above it see it.
type Descriptor struct{ kit.Base }

func (Descriptor) Name() string     { return Name }
func (Descriptor) Authorizes() bool { return true }
func (Descriptor) Usage() string {
	return "producers and consumers under --concurrency principals whose WRITE/READ ACLs are granted and revoked during the run (needs --security-protocol SASL_PLAINTEXT or SASL_SSL)"
}

// Validate needs two principals at least, and the producers'
// canonicalised settings; idempotence is off: a revoked WRITE refuses the
// produce, and an idempotent producer's sequence would gap on every
// refusal.
func (Descriptor) Validate(s *kit.Shared, _ any) error {
	if s.Producers < 2 {
		return fmt.Errorf("--concurrency %d: the authz workload runs a producer and a consumer under each of --concurrency principals; give 2 or more", s.Producers)
	}
	s.Idempotence = false
	return s.Validate(s.Producers)
}

func (Descriptor) New(s kit.Shared, _ any, env kit.Env) (kit.Workload, kit.Hooks, error) {
	w, err := New(s, env)
	return w, kit.Hooks{}, err
}

// Bound is the propagation bound of a revocation on a cluster whose
// broker.session.timeout.ms is session (0: Kafka's 9 s), the time after
// its acknowledgement past which no broker may honour the revoked binding
// (DESIGN.md section 5, unauthorized-write): a broker in contact with the
// controller applies the record within its replication, and one cut off
// keeps its old image but is fenced a session after its last heartbeat,
// its leaderships moved; the second session covers the fencing check's
// own cadence, the new leader's record reaching the followers (which then
// stop fetching from the fenced broker) and the answers' travel.
func Bound(session time.Duration) time.Duration {
	if session <= 0 {
		session = 9 * time.Second
	}
	return 2 * session
}
