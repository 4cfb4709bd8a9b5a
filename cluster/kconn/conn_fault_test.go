package kconn

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawPeer accepts one connection, reads one request frame and lets answer
// write whatever it likes (or nothing), then holds the conn until the test ends.
func rawPeer(t *testing.T, answer func(c net.Conn, corr int32)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var hdr [4]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(c, frame); err != nil {
			return
		}
		answer(c, int32(binary.BigEndian.Uint32(frame[4:8])))
		<-done
	}()
	return ln.Addr().String()
}

func metadataV1() kmsg.Request {
	r := kmsg.NewPtrMetadataRequest()
	r.SetVersion(1)
	return r
}

func TestPeerClosesMidResponse(t *testing.T) {
	addr := rawPeer(t, func(c net.Conn, corr int32) {
		b := binary.BigEndian.AppendUint32(nil, 100)
		b = binary.BigEndian.AppendUint32(b, uint32(corr))
		c.Write(append(b, 1, 2, 3))
		c.Close()
	})
	ctx := testCtx(t)
	c, err := Dial(ctx, addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Request(ctx, metadataV1()); err == nil {
		t.Fatal("truncated response decoded without error")
	}
	if _, err := c.Request(ctx, metadataV1()); !errors.Is(err, ErrClosed) {
		t.Fatalf("request after wire error: %v, want ErrClosed", err)
	}
}

func TestContextDeadlineUnblocksSilentPeer(t *testing.T) {
	addr := rawPeer(t, func(net.Conn, int32) {}) // never answers
	c, err := Dial(testCtx(t), addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	if _, err := c.Request(ctx, metadataV1()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
}

func TestContextCancelWithoutDeadline(t *testing.T) {
	addr := rawPeer(t, func(net.Conn, int32) {})
	c, err := Dial(testCtx(t), addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := c.Request(ctx, metadataV1()); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want Canceled", err)
	}
}

func TestOversizedFrameRejected(t *testing.T) {
	addr := rawPeer(t, func(c net.Conn, corr int32) {
		b := binary.BigEndian.AppendUint32(nil, 1<<30)
		c.Write(binary.BigEndian.AppendUint32(b, uint32(corr)))
	})
	ctx := testCtx(t)
	c, err := Dial(ctx, addr, Options{MaxResponseBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Request(ctx, metadataV1()); err == nil {
		t.Fatal("1 GiB frame accepted")
	}
	if cap(c.buf) >= 1<<20 {
		t.Fatalf("buffer grew to %d bytes for a rejected frame", cap(c.buf))
	}
}

func TestWrongCorrelationID(t *testing.T) {
	addr := rawPeer(t, func(c net.Conn, corr int32) {
		b := binary.BigEndian.AppendUint32(nil, 4)
		c.Write(binary.BigEndian.AppendUint32(b, uint32(corr+7)))
	})
	ctx := testCtx(t)
	c, err := Dial(ctx, addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Request(ctx, metadataV1()); err == nil {
		t.Fatal("mismatched correlation id accepted")
	}
}

func TestSkipTags(t *testing.T) {
	// two tags: (tag 0, 2 bytes), (tag 5, 0 bytes), then body byte 9
	b := []byte{2, 0, 2, 0xaa, 0xbb, 5, 0, 9}
	rest, err := skipTags(b)
	if err != nil || len(rest) != 1 || rest[0] != 9 {
		t.Fatalf("skipTags = %v, %v", rest, err)
	}
	if _, err := skipTags([]byte{1, 0, 200}); err == nil {
		t.Fatal("tag size beyond buffer accepted")
	}
}
