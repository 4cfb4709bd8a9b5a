package kconn

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// negotiate asks the peer which versions it supports. It tries ApiVersions
// v3 and falls back to v0 when the peer answers UNSUPPORTED_VERSION (which
// Kafka encodes as a v0 body listing its own ApiVersions range).
func (c *Conn) negotiate(ctx context.Context) (map[int16]int16, error) {
	for _, v := range []int16{3, 0} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(v)
		req.ClientSoftwareName = "gregor"
		req.ClientSoftwareVersion = "0"
		c.mu.Lock()
		resp, err := c.roundTrip(ctx, req)
		c.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("kconn: ApiVersions to %s: %w", c.addr, err)
		}
		r := resp.(*kmsg.ApiVersionsResponse)
		if r.ErrorCode == kerr.UnsupportedVersion.Code && v != 0 {
			continue
		}
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return nil, fmt.Errorf("kconn: ApiVersions to %s: %w", c.addr, err)
		}
		peer := make(map[int16]int16, len(r.ApiKeys))
		for _, k := range r.ApiKeys {
			peer[k.ApiKey] = k.MaxVersion
		}
		return peer, nil
	}
	return nil, fmt.Errorf("kconn: ApiVersions to %s: no common version", c.addr)
}
