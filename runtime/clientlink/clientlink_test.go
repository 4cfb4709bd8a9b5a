package clientlink

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"
)

// server is a stand-in broker: it reads length-prefixed frames (as Kafka's
// are) and answers each with the same frame, recording what it got.
type server struct {
	ln  net.Listener
	mu  sync.Mutex
	got []string
	ch  chan struct{} // pinged at each frame
}

func newServer(t *testing.T) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{ln: ln, ch: make(chan struct{}, 64)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *server) serve(c net.Conn) {
	defer c.Close()
	for {
		f, err := readFrame(c)
		if err != nil {
			return
		}
		s.mu.Lock()
		s.got = append(s.got, string(f))
		s.mu.Unlock()
		s.ch <- struct{}{}
		if err := writeFrame(c, f); err != nil {
			return
		}
	}
}

func (s *server) frames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

// waitFrames waits for the server to have n frames.
func (s *server) waitFrames(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for len(s.frames()) < n {
		select {
		case <-s.ch:
		case <-deadline:
			t.Fatalf("server has %v, want %d frames", s.frames(), n)
		}
	}
	return s.frames()
}

func writeFrame(w io.Writer, b []byte) error {
	buf := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
	_, err := w.Write(append(buf, b...))
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(n[:]))
	_, err := io.ReadFull(r, b)
	return b, err
}

func dial(t *testing.T, l *Links, proc int, addr string) net.Conn {
	t.Helper()
	c, err := l.Dialer(proc)(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip sends one frame and reads its answer within d.
func roundTrip(c net.Conn, msg string, d time.Duration) (string, error) {
	if err := writeFrame(c, []byte(msg)); err != nil {
		return "", err
	}
	c.SetReadDeadline(time.Now().Add(d))
	b, err := readFrame(c)
	return string(b), err
}

func TestResetClosesOnlyThatClientsConnections(t *testing.T) {
	s := newServer(t)
	l := New()
	a1, a2, b := dial(t, l, 1, s.ln.Addr().String()), dial(t, l, 1, s.ln.Addr().String()), dial(t, l, 2, s.ln.Addr().String())
	if n := l.Reset(s.ln.Addr().String(), []int{1}); n != 2 {
		t.Fatalf("reset %d connections, want 2", n)
	}
	for _, c := range []net.Conn{a1, a2} {
		if _, err := roundTrip(c, "x", time.Second); err == nil {
			t.Fatal("a reset connection still answers")
		}
	}
	if got, err := roundTrip(b, "y", 5*time.Second); err != nil || got != "y" {
		t.Fatalf("another client's connection: %q %v", got, err)
	}
	if got, err := roundTrip(dial(t, l, 1, s.ln.Addr().String()), "z", 5*time.Second); err != nil || got != "z" {
		t.Fatalf("a new connection after the reset: %q %v", got, err)
	}
}

func TestLoseAppliesRequestsButDropsAnswers(t *testing.T) {
	s := newServer(t)
	addr := s.ln.Addr().String()
	l := New()
	old := dial(t, l, 1, addr)
	other := dial(t, l, 2, addr)
	l.Lose(addr, []int{1})
	if _, err := roundTrip(old, "req-1", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("an answer came through a lost link: %v", err)
	}
	if got := s.waitFrames(t, 1); got[0] != "req-1" {
		t.Fatalf("server got %v: the request must arrive though its answer is lost", got)
	}
	if _, err := roundTrip(dial(t, l, 1, addr), "req-2", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection dialed during the fault heard the broker: %v", err)
	}
	if got, err := roundTrip(other, "req-3", 5*time.Second); err != nil || got != "req-3" {
		t.Fatalf("another client lost its answer: %q %v", got, err)
	}
	l.Unlose(addr, []int{1})
	if got, err := roundTrip(dial(t, l, 1, addr), "req-4", 5*time.Second); err != nil || got != "req-4" {
		t.Fatalf("a connection dialed after the fault: %q %v", got, err)
	}
	// A connection that lost bytes lost its framing: it stays deaf.
	if _, err := roundTrip(old, "req-5", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection that lost bytes heard the broker again: %v", err)
	}
	if n := len(s.waitFrames(t, 5)); n != 5 {
		t.Fatalf("server got %d requests, want all 5", n)
	}
}

// Held requests arrive late, in order, after a newer connection's request,
// and even after their client closed the connection.
func TestHoldDeliversLateAfterTheClientGaveUp(t *testing.T) {
	s := newServer(t)
	addr := s.ln.Addr().String()
	l := New()
	held := dial(t, l, 1, addr)
	if _, err := l.Hold(addr, []int{1}, time.Hour); err == nil {
		t.Fatal("a hold longer than MaxHold accepted")
	}
	if n, err := l.Hold(addr, []int{1}, MaxHold); err != nil || n != 1 {
		t.Fatalf("hold: %d %v", n, err)
	}
	for _, m := range []string{"old-1", "old-2", "old-3"} {
		if err := writeFrame(held, []byte(m)); err != nil {
			t.Fatalf("a held write failed: %v", err)
		}
	}
	// The retry, on a new connection, overtakes them.
	if got, err := roundTrip(dial(t, l, 1, addr), "retry", 5*time.Second); err != nil || got != "retry" {
		t.Fatalf("a new connection during the hold: %q %v", got, err)
	}
	if got := s.frames(); len(got) != 1 || got[0] != "retry" {
		t.Fatalf("server got %v before the hold ended, want only the retry", got)
	}
	held.Close() // the client gives up
	l.Heal()
	got := s.waitFrames(t, 4)
	if want := []string{"retry", "old-1", "old-2", "old-3"}; !slices.Equal(got, want) {
		t.Fatalf("server got %v, want %v", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*drainAfterLate)
	defer cancel()
	if err := l.Wait(ctx); err != nil {
		t.Fatalf("late delivery did not finish: %v", err)
	}
	if n := len(l.matching(addr, []int{1})); n != 1 { // the retry's connection
		t.Fatalf("%d connections tracked after the late delivery, want 1", n)
	}
}

// A hold ends by itself when its time is up.
func TestHoldEndsByItself(t *testing.T) {
	s := newServer(t)
	addr := s.ln.Addr().String()
	l := New()
	c := dial(t, l, 1, addr)
	if _, err := l.Hold(addr, []int{1}, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got, err := roundTrip(c, "late", 10*time.Second); err != nil || got != "late" {
		t.Fatalf("held request never answered: %q %v", got, err)
	}
}
