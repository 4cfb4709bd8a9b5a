package harness

import (
	"time"

	"gregor/history"
	"gregor/internal/dialer"
	"gregor/runtime/clientlink"
	"gregor/workloads/kit"
)

// newWorkload builds the test's workload, by its registered descriptor, on
// the brokers of bootstrap. Every client dials through links, so
// client-link faults can act on it.
func (t *Test) newWorkload(bootstrap []string, links *clientlink.Links, h *history.Writer, epoch time.Time) (kit.Workload, kit.Hooks, error) {
	// TLS, when the clients have it, runs over the client links: their
	// faults act on the bytes on the wire.
	dial := func(proc int) kit.Dialer { return dialer.Secure(links.Dialer(proc)) }
	env := kit.Env{Bootstrap: bootstrap, Dial: dial, History: h, Epoch: epoch}
	return t.workload().New(t.shared(), &t.Config, env)
}
