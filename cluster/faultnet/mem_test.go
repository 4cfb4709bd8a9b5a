package faultnet

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// memEcho serves a line echo on addr of network m through layer l.
func memEcho(t *testing.T, l *Layer, addr string) net.Listener {
	t.Helper()
	ln, err := l.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := io.WriteString(c, line); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln
}

// TestMemFaultsOnVirtualTime: over the in-memory network, in a bubble, a
// partition stalls a round trip until its deadline and a heal restores it,
// and a link delay costs exactly its delay per write, on virtual time.
func TestMemFaultsOnVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMem()
		server, client := NewOn("127.0.0.1", m), NewOn("127.0.0.2", m)
		memEcho(t, server, "127.0.0.1:9092")
		c, err := client.Dial(context.Background(), "tcp", "127.0.0.1:9092")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := roundTrip(c, 5*time.Second); err != nil {
			t.Fatalf("healthy round trip: %v", err)
		}
		client.Set(Rules{Drop: []string{"127.0.0.1"}})
		start := time.Now()
		err = roundTrip(c, 300*time.Millisecond)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("round trip across a partition: %v, want a timeout", err)
		}
		if d := time.Since(start); d != 300*time.Millisecond {
			t.Fatalf("stalled %v, want the deadline's 300ms", d)
		}
		client.Set(Rules{})
		c2, err := client.Dial(context.Background(), "tcp", "127.0.0.1:9092")
		if err != nil {
			t.Fatalf("dial after heal: %v", err)
		}
		defer c2.Close()
		server.Set(Rules{DelayMs: 40})
		start = time.Now()
		if err := roundTrip(c2, 5*time.Second); err != nil {
			t.Fatalf("round trip after heal: %v", err)
		}
		if d := time.Since(start); d != 40*time.Millisecond {
			t.Fatalf("delayed round trip took %v, want the server's 40ms", d)
		}
	})
}

// TestMemCloseHost: a killed host's connections close as the kernel closes a
// dead process's sockets (the peer reads EOF), its listener is gone (dials
// are refused), and writes are buffered without a reader up to the buffer.
func TestMemCloseHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMem()
		ln, err := m.Listen("127.0.0.1:9092")
		if err != nil {
			t.Fatal(err)
		}
		accepted := make(chan net.Conn, 1)
		go func() {
			c, err := ln.Accept()
			if err == nil {
				accepted <- c
			}
		}()
		c, err := m.Dial(context.Background(), "127.0.0.2", "127.0.0.1:9092")
		if err != nil {
			t.Fatal(err)
		}
		s := <-accepted
		if got := s.RemoteAddr().String(); got != c.LocalAddr().String() {
			t.Fatalf("server sees %s, client is %s", got, c.LocalAddr())
		}
		if n, err := c.Write(make([]byte, memBuffer)); err != nil || n != memBuffer {
			t.Fatalf("buffered write: %d, %v", n, err)
		}
		m.CloseHost("127.0.0.1")
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("read from a killed host: %v, want EOF", err)
		}
		if _, err := m.Dial(context.Background(), "127.0.0.2", "127.0.0.1:9092"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial to a killed host: %v, want connection refused", err)
		}
	})
}

// TestFreezeIsAStoppedProcess: a frozen layer (the sim's pause) is seen by
// its peers as a SIGSTOPped process whose sockets the kernel keeps: a
// client's write is buffered, its read gets no answer until its deadline,
// a new dial completes into the backlog but is not served; the frozen node
// itself neither dials nor sees its own deadline fire; on Thaw everything
// that fell due happens at once: the held echo is answered at the instant
// of the thaw and the node's read returns its timeout then.
func TestFreezeIsAStoppedProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMem()
		server, client := NewOn("127.0.0.1", m), NewOn("127.0.0.2", m)
		memEcho(t, server, "127.0.0.1:9092")
		c, err := client.Dial(context.Background(), "tcp", "127.0.0.1:9092")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := roundTrip(c, 5*time.Second); err != nil {
			t.Fatalf("healthy round trip: %v", err)
		}
		// The frozen node's own read, with a deadline that falls due
		// during the pause, and its own dial.
		memEcho(t, client, "127.0.0.2:9092")
		sc, err := server.Dial(context.Background(), "tcp", "127.0.0.2:9092")
		if err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		server.Freeze()
		readDone := make(chan error, 1)
		sc.SetReadDeadline(time.Now().Add(time.Second))
		go func() { _, err := sc.Read(make([]byte, 1)); readDone <- err }()
		dialDone := make(chan error, 1)
		go func() {
			d, err := server.Dial(context.Background(), "tcp", "127.0.0.2:9092")
			if err == nil {
				d.Close()
			}
			dialDone <- err
		}()

		err = roundTrip(c, 2*time.Second)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("round trip to a frozen node: %v, want a timeout (no answer)", err)
		}
		c2, err := client.Dial(context.Background(), "tcp", "127.0.0.1:9092")
		if err != nil {
			t.Fatalf("dial to a frozen node: %v, want it to complete into the backlog", err)
		}
		defer c2.Close()
		if err := roundTrip(c2, time.Second); !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("round trip on a connection the frozen node never accepted: %v, want a timeout", err)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		select {
		case err := <-readDone:
			t.Fatalf("the frozen node's read returned during the pause: %v", err)
		case err := <-dialDone:
			t.Fatalf("the frozen node's dial returned during the pause: %v", err)
		default:
		}
		if !server.Frozen() {
			t.Fatal("Frozen() is false while frozen")
		}

		// Resume: the echo of the ping written during the pause is
		// answered at once, the node's read returns its timeout, its
		// dial completes, and c2 is served.
		server.Thaw()
		thawed := time.Now()
		c.SetDeadline(time.Now().Add(time.Second))
		if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
			t.Fatalf("the answer held during the pause: %v", err)
		}
		if d := time.Since(thawed); d != 0 {
			t.Fatalf("the held answer came %v after the thaw, want at once", d)
		}
		if err := <-readDone; !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("the frozen node's read: %v, want its deadline's timeout, on resume", err)
		}
		if err := <-dialDone; err != nil {
			t.Fatalf("the frozen node's dial, on resume: %v", err)
		}
		if err := roundTrip(c2, 5*time.Second); err != nil {
			t.Fatalf("round trip on the backlogged connection after the thaw: %v", err)
		}
	})
}

// TestMemRefusalTakesARoundTrip: a client that redials a dead address at
// once, with no backoff (franz-go's producer-id load while every broker is
// down), must still let the virtual clock move: each refusal costs
// RefusalRoundTrip, so the broker that comes back after 5 ms is reached.
// A refusal that cost nothing would spin the loop through its bound at one
// instant, the listener's goroutine never waking.
func TestMemRefusalTakesARoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMem()
		back := 5 * time.Millisecond
		go func() {
			time.Sleep(back)
			if _, err := m.Listen("127.0.0.1:9092"); err != nil {
				t.Error(err)
			}
		}()
		start := time.Now()
		const bound = 1_000_000
		refusals := 0
		for ; refusals < bound; refusals++ {
			c, err := m.Dial(context.Background(), "127.0.0.2", "127.0.0.1:9092")
			if err == nil {
				c.Close()
				break
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("dial %d: %v, want connection refused", refusals, err)
			}
		}
		if refusals == bound {
			t.Fatalf("%d refusals in %v of virtual time: the redial loop froze the clock", bound, time.Since(start))
		}
		// At the instant the listener comes back, its goroutine and the
		// dialer wake together in either order: one more refusal or not.
		if want := int(back / RefusalRoundTrip); refusals != want && refusals != want+1 {
			t.Errorf("%d refusals before the listener came back after %v, want %d or %d (one per %v)", refusals, back, want, want+1, RefusalRoundTrip)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := m.Dial(ctx, "127.0.0.2", "127.0.0.1:9093"); !errors.Is(err, context.Canceled) {
			t.Errorf("refused dial with its context done: %v, want context.Canceled", err)
		}
	})
}
