package kconn

import (
	"context"
	"fmt"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// maxSASLRounds bounds an exchange; SCRAM takes two, PLAIN one.
const maxSASLRounds = 10

// authenticate runs mech over the connection as Kafka's client does
// (SaslClientAuthenticator, KIP-152): SaslHandshake v1 naming the
// mechanism, then SaslAuthenticate rounds until the mechanism is done.
func (c *Conn) authenticate(ctx context.Context, mech sasl.Mechanism) error {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = mech.Name()
	c.mu.Lock()
	defer c.mu.Unlock()
	resp, err := c.roundTrip(ctx, hs)
	if err != nil {
		return fmt.Errorf("kconn: SaslHandshake to %s: %w", c.addr, err)
	}
	if err := kerr.ErrorForCode(resp.(*kmsg.SASLHandshakeResponse).ErrorCode); err != nil {
		return fmt.Errorf("kconn: SaslHandshake %s to %s: %w (the broker enables %v)", mech.Name(), c.addr,
			err, resp.(*kmsg.SASLHandshakeResponse).SupportedMechanisms)
	}
	host, _, _ := net.SplitHostPort(c.addr)
	session, out, err := mech.Authenticate(ctx, host)
	if err != nil {
		return fmt.Errorf("kconn: SASL %s: %w", mech.Name(), err)
	}
	for range maxSASLRounds {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(1)
		req.SASLAuthBytes = out
		resp, err := c.roundTrip(ctx, req)
		if err != nil {
			return fmt.Errorf("kconn: SaslAuthenticate to %s: %w", c.addr, err)
		}
		r := resp.(*kmsg.SASLAuthenticateResponse)
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			msg := ""
			if r.ErrorMessage != nil {
				msg = ": " + *r.ErrorMessage
			}
			return fmt.Errorf("kconn: SASL %s to %s: %w%s", mech.Name(), c.addr, err, msg)
		}
		done, next, err := session.Challenge(r.SASLAuthBytes)
		if err != nil {
			return fmt.Errorf("kconn: SASL %s to %s: %w", mech.Name(), c.addr, err)
		}
		if done {
			return nil
		}
		out = next
	}
	return fmt.Errorf("kconn: SASL %s to %s: no end after %d rounds", mech.Name(), c.addr, maxSASLRounds)
}
