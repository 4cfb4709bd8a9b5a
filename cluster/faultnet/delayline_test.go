package faultnet

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"
)

// memPair dials from client to a raw listener on server's host over a fresh
// Mem network, returning the layered client end and the raw accepted end.
func memPair(t *testing.T) (*Layer, net.Conn, net.Conn) {
	t.Helper()
	m := NewMem()
	ln, err := m.Listen("127.0.0.1:9092")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	client := NewOn("127.0.0.2", m)
	c, err := client.Dial(context.Background(), "tcp", "127.0.0.1:9092")
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	t.Cleanup(func() { c.Close(); s.Close() })
	return client, c, s
}

// TestDelayIsALatency: pipelined writes on one delayed connection overlap in
// flight, as netem delays packets: ten requests written back to back, each
// echoed by a delayed server, all come back one round trip (client's delay
// plus server's) after they were sent, not ten round trips. The old model
// (each write slept its delay first) took 10 x 40 + 10 x 60 ms here.
func TestDelayIsALatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMem()
		server, client := NewOn("127.0.0.1", m), NewOn("127.0.0.2", m)
		memEcho(t, server, "127.0.0.1:9092")
		c, err := client.Dial(context.Background(), "tcp", "127.0.0.1:9092")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		client.Set(Rules{DelayMs: 40})
		server.Set(Rules{DelayMs: 60})
		start := time.Now()
		for i := 0; i < 10; i++ {
			if _, err := io.WriteString(c, "ping\n"); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("ten delayed writes took %v to return, want 0 (a write is buffered)", d)
		}
		r := bufio.NewReader(c)
		for i := 0; i < 10; i++ {
			if _, err := r.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d != 100*time.Millisecond {
				t.Fatalf("reply %d after %v, want one round trip of 100ms", i, d)
			}
		}
	})
}

// TestDelayKeepsOrder: a write is never due before the one ahead of it (TCP
// delivers in order), so a short delay after a long one waits for it.
func TestDelayKeepsOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, c, s := memPair(t)
		start := time.Now()
		client.Set(Rules{DelayMs: 100})
		io.WriteString(c, "a")
		client.Set(Rules{DelayMs: 10})
		io.WriteString(c, "b")
		client.Set(Rules{})
		io.WriteString(c, "c") // undelayed, but behind queued bytes
		got := make([]byte, 3)
		if _, err := io.ReadFull(s, got); err != nil {
			t.Fatal(err)
		}
		if string(got) != "abc" {
			t.Fatalf("read %q, want abc in order", got)
		}
		if d := time.Since(start); d != 100*time.Millisecond {
			t.Fatalf("arrived after %v, want the first write's 100ms", d)
		}
	})
}

// TestCloseSendsWhatIsQueued: closing a connection with delayed bytes queued
// sends them when due and then closes, as close(2) leaves a socket's buffer
// to the kernel; the closed end refuses further reads and writes at once.
func TestCloseSendsWhatIsQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, c, s := memPair(t)
		client.Set(Rules{DelayMs: 50})
		start := time.Now()
		io.WriteString(c, "last words")
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("write after close: %v, want ErrClosed", err)
		}
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read after close: %v, want ErrClosed", err)
		}
		got, err := io.ReadAll(s)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "last words" {
			t.Fatalf("peer read %q, want the queued bytes", got)
		}
		if d := time.Since(start); d != 50*time.Millisecond {
			t.Fatalf("peer saw the close after %v, want 50ms", d)
		}
	})
}

// TestDeliveredOutlastsTheDelayLine: Delivered returns once the bytes a
// closed connection still had queued are out (their delay after the write,
// not before), so a cluster that waits for it leaves no deliverer asleep;
// with nothing queued it returns at once.
func TestDeliveredOutlastsTheDelayLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, c, s := memPair(t)
		client.Delivered() // nothing queued yet
		client.Set(Rules{DelayMs: 50})
		start := time.Now()
		io.WriteString(c, "last words")
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		go func() {
			b, _ := io.ReadAll(s)
			got <- string(b)
		}()
		client.Delivered()
		if d := time.Since(start); d != 50*time.Millisecond {
			t.Fatalf("Delivered returned after %v, want the 50ms delay", d)
		}
		if g := <-got; g != "last words" {
			t.Fatalf("peer read %q, want the queued bytes", g)
		}
	})
}

// TestDelayLineIsBounded: a connection holds at most delayLineMax bytes in
// flight, as a socket's send buffer does; a writer past it waits until the
// oldest write has gone out.
func TestDelayLineIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, c, s := memPair(t)
		// The peer reads all five writes: the deliverer has then drained
		// its line and ended before the bubble does.
		drained := make(chan error, 1)
		go func() {
			_, err := io.CopyN(io.Discard, s, 5*delayLineMax/4)
			drained <- err
		}()
		client.Set(Rules{DelayMs: 1000})
		start := time.Now()
		chunk := make([]byte, delayLineMax/4)
		for i := 0; i < 4; i++ {
			if _, err := c.Write(chunk); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("writes within the bound took %v, want 0", d)
		}
		if _, err := c.Write(chunk); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != time.Second {
			t.Fatalf("a write past the bound returned after %v, want the first write's 1s", d)
		}
		if err := <-drained; err != nil {
			t.Fatalf("peer read: %v", err)
		}
	})
}

// TestQueuedBytesWaitForAHeal: bytes queued when a partition begins are held
// (TCP retransmits) and delivered after the heal, not lost.
func TestQueuedBytesWaitForAHeal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, c, s := memPair(t)
		client.Set(Rules{DelayMs: 50})
		start := time.Now()
		io.WriteString(c, "held")
		client.Set(Rules{Drop: []string{"127.0.0.1"}, DelayMs: 50})
		go func() {
			time.Sleep(3 * time.Second)
			client.Set(Rules{})
		}()
		got := make([]byte, 4)
		if _, err := io.ReadFull(s, got); err != nil || string(got) != "held" {
			t.Fatalf("read %q, %v", got, err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Fatalf("delivered after %v, want at the heal (3s)", d)
		}
	})
}
