package runtime

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// CloseOnSignal tears the cluster down when the process gets SIGINT or
// SIGTERM: it calls c.Close with a fresh context bounded by timeout (the
// caller's context is likely cancelled by then), then onSignal (e.g. cancel
// the run, or exit). The returned stop removes the handler; call it once the
// cluster is closed normally. A second signal while closing is ignored so a
// double Ctrl-C does not leave containers behind.
func CloseOnSignal(c Cluster, timeout time.Duration, onSignal func(os.Signal, error)) (stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	var once sync.Once
	go func() {
		select {
		case sig := <-ch:
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			err := c.Close(ctx)
			cancel()
			if onSignal != nil {
				onSignal(sig, err)
			}
		case <-done:
		}
	}()
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
		})
	}
}
