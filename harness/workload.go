package harness

import (
	"time"

	"gregor/history"
	"gregor/runtime/clientlink"
	"gregor/workloads/kit"
)

// newWorkload builds the test's workload, by its registered descriptor, on
// the brokers of bootstrap. Every client dials through links, so
// client-link faults can act on it.
func (t *Test) newWorkload(bootstrap []string, links *clientlink.Links, h *history.Writer, epoch time.Time) (kit.Workload, kit.Hooks, error) {
	env := kit.Env{Bootstrap: bootstrap, Dial: links.Dialer, History: h, Epoch: epoch}
	return t.workload().New(t.shared(), &t.Config, env)
}
