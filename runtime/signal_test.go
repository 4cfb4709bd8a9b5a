package runtime

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// closeRecorder is a Cluster whose Close reports the context it got, as it
// was during the call (the caller cancels it afterwards).
type closeRecorder struct {
	Cluster // nil: any other method panics, so the test shows only Close runs
	closed  chan closeCall
}

type closeCall struct {
	err         error
	hasDeadline bool
}

func (c *closeRecorder) Close(ctx context.Context) error {
	_, ok := ctx.Deadline()
	c.closed <- closeCall{ctx.Err(), ok}
	return nil
}

func TestCloseOnSignalClosesWithAFreshBoundedContext(t *testing.T) {
	rec := &closeRecorder{closed: make(chan closeCall, 1)}
	got := make(chan os.Signal, 1)
	stop := CloseOnSignal(rec, 5*time.Second, func(s os.Signal, err error) { got <- s })
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case call := <-rec.closed:
		if call.err != nil {
			t.Fatal("Close got a dead context")
		}
		if !call.hasDeadline {
			t.Fatal("Close got an unbounded context")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SIGINT did not close the cluster")
	}
	select {
	case s := <-got:
		if s != os.Interrupt {
			t.Fatalf("onSignal got %v", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("onSignal not called")
	}
}

func TestCloseOnSignalStopDoesNotClose(t *testing.T) {
	rec := &closeRecorder{closed: make(chan closeCall, 1)}
	stop := CloseOnSignal(rec, time.Second, nil)
	stop()
	stop() // idempotent
	select {
	case <-rec.closed:
		t.Fatal("closed without a signal")
	case <-time.After(50 * time.Millisecond):
	}
}
