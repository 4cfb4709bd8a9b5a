// Package dialer is the one seam through which the harness's own clients
// (workloads, the topic and metadata clients, the nemesis topology, the
// client-link layer, readiness probes) dial brokers. Unset, they dial the
// host's sockets as before; the simulation runtime sets it to its
// in-memory network, so that nothing in a testing/synctest bubble opens a
// real socket (DESIGN.md section 7, simulation).
package dialer

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Func dials addr (a kgo.Dialer).
type Func = func(ctx context.Context, network, addr string) (net.Conn, error)

var hook atomic.Pointer[Func]

// Set makes every later dial go through f; nil restores the host's sockets.
// It is process-wide: one simulated run per process.
func Set(f Func) {
	if f == nil {
		hook.Store(nil)
		return
	}
	hook.Store(&f)
}

// Dial is a dial function bounded by timeout: the hook's, or net.Dialer's.
func Dial(timeout time.Duration) Func {
	h := hook.Load()
	if h == nil {
		d := net.Dialer{Timeout: timeout}
		return d.DialContext
	}
	f := *h
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return f(ctx, network, addr)
	}
}

// Opt is the client option for a dial bounded by timeout: kgo.DialTimeout
// on the host's sockets (franz-go's own dialer, as before), kgo.Dialer
// over the hook when one is set.
func Opt(timeout time.Duration) kgo.Opt {
	if hook.Load() == nil {
		return kgo.DialTimeout(timeout)
	}
	return kgo.Dialer(Dial(timeout))
}
