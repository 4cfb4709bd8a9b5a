package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/meta"
	"gregor/cluster/replica"
)

// emptyBackend is a broker with no topics: enough for every handler to run
// its decode-and-answer path.
type emptyBackend struct{}

func (emptyBackend) NodeID() int32      { return 1 }
func (emptyBackend) ClusterID() string  { return "fuzz" }
func (emptyBackend) Image() *meta.Image { return meta.Empty() }
func (emptyBackend) Partition(string, int32) *replica.Partition {
	return nil
}
func (emptyBackend) CreateTopic(context.Context, TopicSpec) (*meta.Topic, *kerr.Error, string) {
	return nil, kerr.InvalidReplicationFactor, "no brokers"
}
func (emptyBackend) DeleteTopic(context.Context, string) (*kerr.Error, string) {
	return kerr.UnknownTopicOrPartition, ""
}
func (emptyBackend) AutoCreateTopics() bool { return false }
func (emptyBackend) BrokerDefaults() map[string]string {
	return map[string]string{"min.insync.replicas": "1"}
}
func (emptyBackend) ReadOnlyBrokerConfigs() map[string]ReadOnlyConfig { return nil }
func (emptyBackend) NewProducerID(context.Context) (int64, int16, *kerr.Error) {
	return 1, 0, nil
}

func testServer() *Server {
	return NewServer(emptyBackend{}, Options{MaxRequestBytes: 1 << 20, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// frameFor encodes req as a request frame body (without the size prefix).
func frameFor(req kmsg.Request, version int16) []byte {
	req.SetVersion(version)
	b := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, 7)
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "fuzz"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

// seedRequests holds a request of every API at every version s advertises.
func seedRequests(s *Server) [][]byte {
	var seeds [][]byte
	for key, a := range apis {
		for v := a.versions.min; v <= s.maxVersion(key); v++ {
			req := kmsg.RequestForKey(key)
			seeds = append(seeds, frameFor(req, v))
		}
	}
	md := kmsg.NewPtrMetadataRequest()
	topic := "t"
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
	seeds = append(seeds, frameFor(md, 9))
	return seeds
}

// FuzzDecode feeds arbitrary frames to the decode and dispatch path: it must
// answer or refuse, never panic.
func FuzzDecode(f *testing.F) {
	s := testServer()
	for _, seed := range seedRequests(s) {
		f.Add(seed)
		f.Add(seed[:len(seed)/2])
	}
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, frame []byte) {
		watchdog := time.AfterFunc(5*time.Second, func() { panic("fuzz input hung for 5s") })
		defer watchdog.Stop()
		hdr, req, rep, err := s.decode(frame)
		if err != nil {
			return
		}
		if req == nil {
			if rep.raw == nil {
				t.Fatal("unsupported request without an answer")
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		r := s.dispatch(ctx, hdr, req)
		if r.later != nil {
			r.resp = r.later()
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("key %d v%d took %v", hdr.key, hdr.version, d)
		}
		if !r.none && r.resp == nil && r.raw == nil {
			t.Fatalf("key %d v%d: no response", hdr.key, hdr.version)
		}
		if r.resp != nil {
			encodeResponse(nil, hdr, r.resp)
		}
	})
}

// TestSeedsDecode checks every seed decodes (the seeds exercise every
// registered API at every version we advertise).
func TestSeedsDecode(t *testing.T) {
	s := testServer()
	for _, seed := range seedRequests(s) {
		hdr, req, _, err := s.decode(seed)
		if err != nil || req == nil {
			t.Fatalf("key %d v%d: %v", hdr.key, hdr.version, err)
		}
	}
}

// dialServer serves s on a loopback listener and returns a client
// connection with a 10 s deadline; both close with the test.
func dialServer(t *testing.T, s *Server) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// serveBytes writes raw bytes to a served connection and returns what the
// server answered before closing it.
func serveBytes(t *testing.T, s *Server, in []byte) []byte {
	t.Helper()
	c := dialServer(t, s)
	if _, err := c.Write(in); err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(bufio.NewReader(c))
	return out
}

// TestOversizedFrameClosesConnection: a frame announcing more than the limit
// is refused before anything is read or allocated.
func TestOversizedFrameClosesConnection(t *testing.T) {
	s := testServer()
	in := binary.BigEndian.AppendUint32(nil, 1<<30) // 1 GiB announced
	if out := serveBytes(t, s, in); len(out) != 0 {
		t.Fatalf("answered an oversized frame: %x", out)
	}
}

// TestTruncatedFrameClosesConnection: a frame cut short ends the connection
// without an answer (the server waits for the rest, then sees EOF).
func TestTruncatedFrameClosesConnection(t *testing.T) {
	s := testServer()
	body := frameFor(kmsg.NewPtrApiVersionsRequest(), 3)
	in := binary.BigEndian.AppendUint32(nil, uint32(len(body)+10))
	in = append(in, body...)
	c := dialServer(t, s)
	c.Write(in)
	c.(*net.TCPConn).CloseWrite()
	out, _ := io.ReadAll(c)
	if len(out) != 0 {
		t.Fatalf("answered a truncated frame: %x", out)
	}
}

// TestUnknownKeyAnswersUnsupportedVersion: a key we do not implement gets
// UNSUPPORTED_VERSION, then the connection is closed.
func TestUnknownKeyAnswersUnsupportedVersion(t *testing.T) {
	s := testServer()
	body := binary.BigEndian.AppendUint16(nil, 999)
	body = binary.BigEndian.AppendUint16(body, 0)
	body = binary.BigEndian.AppendUint32(body, 42)
	body = binary.BigEndian.AppendUint16(body, 0xffff) // null client id
	in := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	in = append(in, body...)
	out := serveBytes(t, s, in)
	if len(out) != 10 {
		t.Fatalf("answer %x, want size+correlation+error code", out)
	}
	if corr := binary.BigEndian.Uint32(out[4:]); corr != 42 {
		t.Fatalf("correlation id %d", corr)
	}
	if code := int16(binary.BigEndian.Uint16(out[8:])); code != kerr.UnsupportedVersion.Code {
		t.Fatalf("error code %d, want UNSUPPORTED_VERSION", code)
	}
}

// TestApiVersionsTooNew: ApiVersions at a version we do not know is answered
// at v0 with UNSUPPORTED_VERSION and ApiVersions' own range (Kafka's
// ApiVersionsRequest.getErrorResponse), so the client can retry.
func TestApiVersionsTooNew(t *testing.T) {
	s := testServer()
	body := binary.BigEndian.AppendUint16(nil, 18)
	body = binary.BigEndian.AppendUint16(body, 99)
	body = binary.BigEndian.AppendUint32(body, 5)
	body = binary.BigEndian.AppendUint16(body, 0xffff)
	in := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	in = append(in, body...)
	c := dialServer(t, s)
	c.Write(in)
	var sz [4]byte
	if _, err := io.ReadFull(c, sz[:]); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	if err := resp.ReadFrom(buf[4:]); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 {
		t.Fatalf("error %d with %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
}
