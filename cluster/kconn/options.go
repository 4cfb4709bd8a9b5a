package kconn

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
)

// DefaultMaxResponseBytes bounds one response frame so that a broken or
// hostile peer announcing a huge size cannot make us allocate without limit.
const DefaultMaxResponseBytes = 64 << 20

// DialFunc opens a network connection; the process runtime injects one that
// drops traffic to simulate network partitions.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Options configure a Conn. The zero value works.
type Options struct {
	// Dial replaces net.Dialer.DialContext (fault injection hook).
	Dial DialFunc
	// ClientID goes into every request header; empty means a null client id.
	ClientID string
	// Versions pins the version sent for an API key, overriding both the
	// caller's version and negotiation.
	Versions map[int16]int16
	// Negotiate sends ApiVersions right after dialing and caps every unpinned
	// request at the peer's max version for its key.
	Negotiate bool
	// MaxResponseBytes bounds a response frame; 0 means DefaultMaxResponseBytes.
	MaxResponseBytes int32
	// DialTimeout bounds Dial when ctx has no earlier deadline; 0 means 10s.
	DialTimeout time.Duration
	// TLS, when set, runs TLS over the dialed connection (an SSL or
	// SASL_SSL listener); the server name is the dialed host's.
	TLS *tls.Config
	// SASL, when set, authenticates the connection with this mechanism
	// before Dial returns (SaslHandshake v1, then SaslAuthenticate rounds).
	SASL sasl.Mechanism
}

func (o Options) maxResponse() int32 {
	if o.MaxResponseBytes <= 0 {
		return DefaultMaxResponseBytes
	}
	return o.MaxResponseBytes
}

func (o Options) dialTimeout() time.Duration {
	if o.DialTimeout <= 0 {
		return 10 * time.Second
	}
	return o.DialTimeout
}
