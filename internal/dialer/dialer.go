// Package dialer is the one seam through which the harness's own clients
// (workloads, the topic and metadata clients, the nemesis topology, the
// client-link layer, readiness probes) dial brokers. Unset, they dial the
// host's sockets as before; the simulation runtime sets it to its
// in-memory network, so that nothing in a testing/synctest bubble opens a
// real socket (DESIGN.md section 7, simulation).
package dialer

import (
	"context"
	"crypto/tls"
	"net"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/internal/security"
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
// over the hook when one is set, and TLS on top when the clients' security
// says so (SetSecurity).
func Opt(timeout time.Duration) kgo.Opt {
	if hook.Load() == nil && clientSec.Load() == nil {
		return kgo.DialTimeout(timeout)
	}
	return kgo.Dialer(Secure(Dial(timeout)))
}

// clientSec is the security of every client of the harness: one cluster
// per process, as the hook is one network per process.
var clientSec atomic.Pointer[security.Config]

// SetSecurity makes every later client use c's TLS (through Opt and
// Secure) and SASL (through Auth); nil or PLAINTEXT: neither. c must have
// been loaded (security.Config.Load). It is process-wide and set once, at
// the edge, by the command that validated c.
func SetSecurity(c *security.Config) {
	if c == nil || !c.Secured() {
		clientSec.Store(nil)
		return
	}
	clientSec.Store(c)
}

// Security is what SetSecurity set (nil: PLAINTEXT).
func Security() *security.Config { return clientSec.Load() }

// Secure wraps f in TLS when the clients' security has it: the handshake
// runs over whatever f dialed (the client-link faults act on the TCP
// bytes below it), verifying the broker's certificate for the host dialed.
func Secure(f Func) Func {
	sec := clientSec.Load()
	if sec == nil || !sec.TLS() {
		return f
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := f(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := sec.ClientTLS()
		if host, _, err := net.SplitHostPort(addr); err == nil {
			tc.ServerName = host
		}
		c := tls.Client(raw, tc)
		if err := c.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, err
		}
		return c, nil
	}
}

// Auth is the client option for SASL: the clients' mechanism, or none.
func Auth() kgo.Opt {
	if m := clientSec.Load().SASLMechanism(); m != nil {
		return kgo.SASL(m)
	}
	return kgo.SASL()
}
