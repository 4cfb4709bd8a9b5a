package faultnet

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// echo serves a line echo on a loopback IP through layer l.
func echo(t *testing.T, l *Layer, addr string) net.Listener {
	t.Helper()
	raw, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ln := l.Listener(raw)
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

func roundTrip(c net.Conn, deadline time.Duration) error {
	c.SetDeadline(time.Now().Add(deadline))
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return err
	}
	_, err := bufio.NewReader(c).ReadString('\n')
	return err
}

// TestPartitionStallsAndHealRestores: traffic between two "hosts" (loopback
// IPs) stalls while either side drops the other, times out at the
// connection's deadline, and flows again after a heal.
func TestPartitionStallsAndHealRestores(t *testing.T) {
	server, client := New("127.0.0.1"), New("127.0.0.2")
	ln := echo(t, server, "127.0.0.1:0")
	c, err := client.Dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := roundTrip(c, 5*time.Second); err != nil {
		t.Fatalf("healthy round trip: %v", err)
	}
	client.Set(Rules{Drop: []string{"127.0.0.1"}})
	err = roundTrip(c, 300*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("round trip across a partition: %v, want a timeout", err)
	}
	// A new dial to a blocked host stalls, then fails.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := client.Dial(ctx, "tcp", ln.Addr().String()); err == nil {
		t.Fatal("dial across a partition succeeded")
	}
	client.Set(Rules{})
	c2, err := client.Dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial after heal: %v", err)
	}
	defer c2.Close()
	if err := roundTrip(c2, 5*time.Second); err != nil {
		t.Fatalf("round trip after heal: %v", err)
	}
}

// TestAcceptSideDrops: the accepting side's rule alone cuts the pair.
func TestAcceptSideDrops(t *testing.T) {
	server, client := New("127.0.0.1"), New("127.0.0.3")
	ln := echo(t, server, "127.0.0.1:0")
	server.Set(Rules{Drop: []string{"127.0.0.3"}})
	c, err := client.Dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err) // the kernel completes the handshake; the layer drops it
	}
	defer c.Close()
	if err := roundTrip(c, 300*time.Millisecond); err == nil {
		t.Fatal("a blocked peer's connection was served")
	}
}

// TestCloseEndsStall: closing a stalled connection unblocks its reader at
// once, as closing a socket does (brokers rely on it to shut down).
func TestCloseEndsStall(t *testing.T) {
	server, client := New("127.0.0.1"), New("127.0.0.4")
	ln := echo(t, server, "127.0.0.1:0")
	c, err := client.Dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	client.Set(Rules{Drop: []string{"127.0.0.1"}})
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	c.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("read on a closed stalled connection returned data")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("closing a stalled connection did not unblock its reader")
	}
}

// TestDeadlineMovedEndsStall: moving a stalled read's deadline into the
// past unblocks it at once, as on a socket: kconn cancels a request in
// flight that way, and a stall that kept the deadline it started with held
// a cancelled controller heartbeat for its whole timeout.
func TestDeadlineMovedEndsStall(t *testing.T) {
	server, client := New("127.0.0.1"), New("127.0.0.5")
	ln := echo(t, server, "127.0.0.1:0")
	c, err := client.Dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	client.Set(Rules{Drop: []string{"127.0.0.1"}})
	c.SetDeadline(time.Now().Add(time.Hour))
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	c.SetDeadline(time.Unix(1, 0))
	select {
	case err := <-done:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("stalled read after its deadline passed: %v, want a timeout", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("moving the deadline into the past did not unblock a stalled read")
	}
}

// TestWatchAppliesControlFile: rules written to the control file take
// effect; removing it heals.
func TestWatchAppliesControlFile(t *testing.T) {
	l := New("127.0.0.1")
	path := filepath.Join(t.TempDir(), FileName)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go l.Watch(ctx, path, 10*time.Millisecond, func(err error) { t.Errorf("watch: %v", err) })
	if err := WriteRules(path, Rules{Drop: []string{"127.0.0.9"}, DelayMs: 5}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { b, _ := l.blocked("127.0.0.9"); return b })
	if r := l.Rules(); r.DelayMs != 5 {
		t.Fatalf("rules %+v", r)
	}
	os.Remove(path)
	waitUntil(t, func() bool { b, _ := l.blocked("127.0.0.9"); return !b })
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met within 5s")
}

// TestDelaySlowsWrites: a configured delay makes a round trip measurably
// slower than an undelayed one, side by side (a ratio, not a time).
func TestDelaySlowsWrites(t *testing.T) {
	server, client := New("127.0.0.1"), New("127.0.0.5")
	ln := echo(t, server, "127.0.0.1:0")
	c, err := client.Dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	measure := func() time.Duration {
		start := time.Now()
		for i := 0; i < 5; i++ {
			if err := roundTrip(c, 5*time.Second); err != nil {
				t.Fatal(err)
			}
		}
		return time.Since(start)
	}
	base := measure()
	client.Set(Rules{DelayMs: 40})
	slow := measure()
	if slow < 4*base || slow < 150*time.Millisecond {
		t.Fatalf("delay 40ms x 5 writes: %v vs %v undelayed", slow, base)
	}
}
