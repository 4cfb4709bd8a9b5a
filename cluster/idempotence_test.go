package cluster

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// dropProxy forwards Kafka connections to a broker and, while drops > 0,
// swallows a produce response and cuts the connection: the broker wrote the
// batch, the client never heard, as after a network failure.
type dropProxy struct {
	ln      net.Listener
	target  string
	drops   atomic.Int32
	dropped atomic.Int32
	wg      sync.WaitGroup
}

func newDropProxy(t *testing.T) *dropProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{ln: ln}
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *dropProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.handle(c)
		}()
	}
}

func readFrameRaw(r io.Reader) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(sz[:])
	if n > 64<<20 {
		return nil, io.ErrUnexpectedEOF
	}
	buf := make([]byte, 4+n)
	copy(buf, sz[:])
	_, err := io.ReadFull(r, buf[4:])
	return buf, err
}

func (p *dropProxy) handle(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	var mu sync.Mutex
	keys := map[int32]int16{} // correlation id -> api key
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			f, err := readFrameRaw(client)
			if err != nil {
				server.Close()
				return
			}
			mu.Lock()
			keys[int32(binary.BigEndian.Uint32(f[8:]))] = int16(binary.BigEndian.Uint16(f[4:]))
			mu.Unlock()
			if _, err := server.Write(f); err != nil {
				return
			}
		}
	}()
	for {
		f, err := readFrameRaw(server)
		if err != nil {
			break
		}
		mu.Lock()
		key := keys[int32(binary.BigEndian.Uint32(f[4:]))]
		mu.Unlock()
		if key == 0 && p.drops.Load() > 0 {
			p.drops.Add(-1)
			p.dropped.Add(1)
			break // swallow the produce response and cut the connection
		}
		if _, err := client.Write(f); err != nil {
			break
		}
	}
	client.Close()
	<-done
}

// TestIdempotentRetryAfterDroppedResponse: the broker appends a batch, the
// response is lost, franz-go retries it with the same producer id and
// sequence, and the broker answers with the original offsets instead of
// writing it twice.
func TestIdempotentRetryAfterDroppedResponse(t *testing.T) {
	proxy := newDropProxy(t)
	b := startBroker(t, t.TempDir(), func(c *Config) { c.Advertise = proxy.ln.Addr().String() })
	proxy.target = b.Addr()
	go proxy.serve()

	cl := newClient(t, proxy.ln.Addr().String(), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))
	createTopic(t, cl, "idem", 1, nil)
	proxy.drops.Store(3)
	const n = 50
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < n; i++ {
		// One record per synchronous produce so each drop hits a batch the
		// broker has already written.
		r := &kgo.Record{Topic: "idem", Value: []byte{byte(i)}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		if r.Offset != int64(i) {
			t.Fatalf("record %d acknowledged at offset %d", i, r.Offset)
		}
	}
	if proxy.dropped.Load() != 3 {
		t.Fatalf("proxy dropped %d responses, want 3: the retry path was not exercised", proxy.dropped.Load())
	}
	_, _, leo := b.Partition("idem", 0).Offsets()
	if leo != n {
		t.Fatalf("log holds %d records for %d sends: a retried batch was written twice", leo, n)
	}
	got := consumeBytes(t, b.Addr(), "idem", n)
	for i, v := range got {
		if v != byte(i) {
			t.Fatalf("offset %d holds %d", i, v)
		}
	}
}

func consumeBytes(t *testing.T, addr, topic string, n int) []byte {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []byte
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d", len(out), n)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r.Value[0]) })
	}
	return out
}
