package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"gregor/history"
	"gregor/internal/sleep"
	"gregor/runtime/clientlink"
)

// Client-link faults (history.LinkFault): they act on the network between
// the workload's clients and one broker (runtime/clientlink), which stays
// up and leader. The broker is the step's target (a partition's leader
// under --nemesis-target leader); the clients are drawn from the step's
// Pick among the processes that dialed so far.
const (
	ClientReset   Kind = history.NemesisClientReset   // close the clients' connections to the broker (RST)
	LoseResponses Kind = history.NemesisLoseResponses // drop the broker's answers: applied, retried to the same leader
	DelayClient   Kind = history.NemesisDelayClient   // hold the clients' requests, deliver them after the hold
)

// IsLinkKind reports whether k is a client-link fault.
func IsLinkKind(k Kind) bool { return history.NemesisClasses(string(k))&history.LinkFault != 0 }

// instant reports whether a step of kind k is over when it starts (no hold,
// no undo, no end operation): client faults and a connection reset.
func instant(k Kind) bool { return history.Instant(string(k)) }

// holdBackstop is how much longer than its step a delay-client hold lasts
// on the link itself: the runner releases it at the step's end (and counts
// what came late); the link's own timer only guards a runner that never
// comes back.
const holdBackstop = 30 * time.Second

// linkProcs draws the client processes a link step hits from the processes
// that dialed: each with probability 1/2, at least one. Deterministic given
// pick and the set of clients.
func linkProcs(pick uint64, clients []int) []int {
	cs := slices.Clone(clients)
	slices.Sort(cs)
	if len(cs) == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(pick, 0x6c696e6b)) // "link"
	var out []int
	for _, p := range cs {
		if rng.IntN(2) == 0 {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		out = []int{cs[rng.IntN(len(cs))]}
	}
	return out
}

// brokerAddr is the address the clients dial for node id.
func (r *Runner) brokerAddr(id int32) (string, error) {
	for _, n := range r.Cluster.Nodes() {
		if n.ID == id {
			return n.KafkaAddr, nil
		}
	}
	return "", fmt.Errorf("node %d is not in the cluster", id)
}

// link runs a client-link step: it records the start with the broker, the
// processes and the connections hit, holds, undoes, and records the end
// (a delay-client's end says how many bytes came late).
func (r *Runner) link(ctx context.Context, st Step, v history.NemesisValue) {
	kind := string(st.Kind)
	if r.Links == nil {
		r.write(kind, v, errors.New("the workload's clients do not dial through client links"))
		return
	}
	if len(v.Nodes) != 1 {
		r.write(kind, v, fmt.Errorf("a link fault needs one broker, resolved %v", v.Nodes))
		return
	}
	addr, err := r.brokerAddr(v.Nodes[0])
	if err != nil {
		r.write(kind, v, err)
		return
	}
	procs := linkProcs(st.Pick, r.Links.Clients())
	v.Broker, v.Processes = addr, procs
	if len(procs) == 0 {
		r.write(kind, v, errors.New("no client has dialed yet"))
		return
	}
	r.done.Add(1)
	switch st.Kind {
	case ClientReset:
		n := r.Links.Reset(addr, procs)
		v.Conns = &n
		r.write(kind, v, nil)
		return
	case LoseResponses:
		r.active.Add(1)
		defer r.active.Add(-1)
		r.Links.Lose(addr, procs)
		r.write(kind, v, nil)
		sleep.For(ctx, st.Hold)
		r.Links.Unlose(addr, procs)
	case DelayClient:
		r.active.Add(1)
		defer r.active.Add(-1)
		n, err := r.Links.Hold(addr, procs, min(st.Hold+holdBackstop, clientlink.MaxHold))
		v.Conns = &n
		r.write(kind, v, err)
		if err != nil {
			return
		}
		sleep.For(ctx, st.Hold)
		conns, bytes := r.Links.Release(addr, procs)
		v.Conns, v.LateBytes = &conns, &bytes
	}
	r.write(undoVerb(st.Kind), v, nil)
}
