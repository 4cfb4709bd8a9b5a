package kconn

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/faultnet"
)

// TestSecondCallerBehindAStalledRequest: in a synctest bubble, a request to
// a peer that never answers times out on virtual time even while a second
// caller waits for the connection behind it (with a sync.Mutex there, the
// waiting caller is not durably blocked, virtual time stops, and the bubble
// hangs), and the second caller's own deadline follows.
func TestSecondCallerBehindAStalledRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := faultnet.NewMem()
		ln, err := m.Listen("127.0.0.1:9092")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() { // reads every request, answers none
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			io.Copy(io.Discard, c)
		}()
		dial := func(ctx context.Context, _, addr string) (net.Conn, error) { return m.Dial(ctx, "127.0.0.2", addr) }
		c, err := Dial(context.Background(), "127.0.0.1:9092", Options{Dial: dial})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		errs := make(chan error, 2)
		for _, d := range []time.Duration{time.Second, 3 * time.Second} {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), d)
				defer cancel()
				_, err := c.Request(ctx, kmsg.NewPtrMetadataRequest())
				errs <- err
			}()
		}
		for range 2 {
			if err := <-errs; err == nil || !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrClosed) {
				t.Fatalf("request to a silent peer: %v, want its deadline", err)
			}
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("both callers returned after %v virtual, want at most 3s", d)
		}
	})
}
