package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// versionRange is the versions of one API this broker really implements.
type versionRange struct{ min, max int16 }

// handlerFunc handles one decoded request.
type handlerFunc func(s *Server, ctx context.Context, hdr header, req kmsg.Request) reply

// apis maps API keys to their versions and handlers; each API's file adds
// itself in init, so this table is the one place that says what we speak.
var apis = map[int16]struct {
	versions versionRange
	handle   handlerFunc
}{}

func register(key int16, min, max int16, h handlerFunc) {
	if _, dup := apis[key]; dup {
		panic(fmt.Sprintf("api key %d registered twice", key))
	}
	if req := kmsg.RequestForKey(key); req == nil || req.MaxVersion() < max {
		panic(fmt.Sprintf("api key %d: kmsg cannot encode version %d", key, max))
	}
	apis[key] = struct {
		versions versionRange
		handle   handlerFunc
	}{versionRange{min, max}, h}
}

// decode parses a request frame. For a request we do not implement it returns
// no request but a reply that tells the client UNSUPPORTED_VERSION and closes
// the connection (Kafka closes it without a word; a clear error is kinder).
func (s *Server) decode(frame []byte) (header, kmsg.Request, reply, error) {
	var hdr header
	if len(frame) < 8 {
		return hdr, nil, reply{}, fmt.Errorf("frame of %d bytes has no request header", len(frame))
	}
	hdr.key = int16(binary.BigEndian.Uint16(frame[0:]))
	hdr.version = int16(binary.BigEndian.Uint16(frame[2:]))
	hdr.correlationID = int32(binary.BigEndian.Uint32(frame[4:]))
	rest := frame[8:]
	if len(rest) < 2 {
		return hdr, nil, reply{}, errors.New("request header ends before the client id")
	}
	idLen := int16(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	if idLen > 0 {
		if int(idLen) > len(rest) {
			return hdr, nil, reply{}, fmt.Errorf("client id length %d runs past the frame", idLen)
		}
		hdr.clientID = string(rest[:idLen])
		rest = rest[idLen:]
	}
	api, known := apis[hdr.key]
	if !known || hdr.version < api.versions.min || hdr.version > s.maxVersion(hdr.key) {
		if hdr.key == 18 {
			// ApiVersions must answer any version so the client can learn
			// ours: a v0 body with UNSUPPORTED_VERSION listing only
			// ApiVersions' own range, as Kafka's
			// ApiVersionsRequest.getErrorResponse does (KIP-511). The
			// client retries at that version and learns the rest, with
			// the v3+ features; a full table here is taken as final by
			// franz-go, which then never sees transaction.version.
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			self := kmsg.NewApiVersionsResponseApiKey()
			self.ApiKey, self.MinVersion, self.MaxVersion = 18, apis[18].versions.min, s.maxVersion(18)
			resp.ApiKeys = append(resp.ApiKeys, self)
			raw := encodeResponse(nil, hdr, resp)
			return hdr, nil, reply{raw: raw}, nil
		}
		s.log.Warn("unsupported request", "key", hdr.key, "name", kmsg.NameForKey(hdr.key), "version", hdr.version, "client", hdr.clientID)
		return hdr, nil, unsupported(hdr), nil
	}
	req := kmsg.RequestForKey(hdr.key)
	req.SetVersion(hdr.version)
	if req.IsFlexible() {
		var err error
		if rest, err = skipTags(rest); err != nil {
			return hdr, nil, reply{}, err
		}
	}
	if err := req.ReadFrom(rest); err != nil {
		return hdr, nil, reply{}, fmt.Errorf("decoding %s v%d: %w", kmsg.NameForKey(hdr.key), hdr.version, err)
	}
	return hdr, req, reply{}, nil
}

// skipTags skips a header's tagged fields (KIP-482); we use none of them.
func skipTags(b []byte) ([]byte, error) {
	n, b, err := uvarint(b)
	if err != nil {
		return nil, err
	}
	if n > uint64(len(b)) {
		return nil, errors.New("tagged field count runs past the frame")
	}
	for i := uint64(0); i < n; i++ {
		if _, b, err = uvarint(b); err != nil { // tag
			return nil, err
		}
		var sz uint64
		if sz, b, err = uvarint(b); err != nil {
			return nil, err
		}
		if sz > uint64(len(b)) {
			return nil, errors.New("tagged field runs past the frame")
		}
		b = b[sz:]
	}
	return b, nil
}

func uvarint(b []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, errors.New("bad uvarint in request header")
	}
	return v, b[n:], nil
}

// unsupported answers UNSUPPORTED_VERSION in place of a response body and
// closes the connection: the client cannot parse anything else.
func unsupported(hdr header) reply {
	raw := binary.BigEndian.AppendUint32(nil, 6)
	raw = binary.BigEndian.AppendUint32(raw, uint32(hdr.correlationID))
	raw = binary.BigEndian.AppendUint16(raw, uint16(kerr.UnsupportedVersion.Code))
	return reply{raw: raw, closeAfter: true}
}

func (s *Server) dispatch(ctx context.Context, hdr header, req kmsg.Request) reply {
	if controllerKeys[hdr.key] && forwarded(hdr) {
		return handleController(s, ctx, hdr, req)
	}
	if r, refused := s.checkRequest(hdr, req); refused {
		return r
	}
	return apis[hdr.key].handle(s, ctx, hdr, req)
}

func now(r kmsg.Response) reply { return reply{resp: r} }
