package kconn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// readFrame reads one size-prefixed frame into c.buf and returns it.
func (c *Conn) readFrame() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.nc, hdr[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(hdr[:]))
	// At least a correlation id; at most the configured bound.
	if size < 4 || size > c.opts.maxResponse() {
		return nil, fmt.Errorf("response frame size %d outside [4, %d]", size, c.opts.maxResponse())
	}
	if cap(c.buf) < int(size) {
		c.buf = make([]byte, size)
	}
	c.buf = c.buf[:size]
	if _, err := io.ReadFull(c.nc, c.buf); err != nil {
		return nil, err
	}
	return c.buf, nil
}

// decodeResponse checks the correlation id, strips the response header and
// decodes the body with the request's version.
func decodeResponse(req kmsg.Request, corr int32, frame []byte) (kmsg.Response, error) {
	got := int32(binary.BigEndian.Uint32(frame))
	if got != corr {
		return nil, fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	body := frame[4:]
	// Response header v1 carries tagged fields; ApiVersions always uses
	// header v0 (KIP-511) so old clients can read it.
	if req.IsFlexible() && req.Key() != 18 {
		var err error
		if body, err = skipTags(body); err != nil {
			return nil, err
		}
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decode key %d v%d: %w", req.Key(), req.GetVersion(), err)
	}
	return resp, nil
}

var errShortTags = errors.New("truncated tagged fields in response header")

// maxHeaderTags bounds the loop over header tags; Kafka defines none today.
const maxHeaderTags = 64

func skipTags(b []byte) ([]byte, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > maxHeaderTags {
		return nil, errShortTags
	}
	b = b[w:]
	for range n {
		if _, w = binary.Uvarint(b); w <= 0 {
			return nil, errShortTags
		}
		b = b[w:]
		size, w := binary.Uvarint(b)
		if w <= 0 || size > uint64(len(b)-w) {
			return nil, errShortTags
		}
		b = b[w+int(size):]
	}
	return b, nil
}
