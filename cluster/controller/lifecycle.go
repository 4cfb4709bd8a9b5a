package controller

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// LifecycleConfig configures a broker's side of the controller protocol.
type LifecycleConfig struct {
	BrokerID  int32
	Host      string
	Port      int32
	ClusterID string
	Client    *Client
	// HeartbeatInterval (broker.heartbeat.interval.ms); default 2s.
	HeartbeatInterval time.Duration
	// RequestTimeout bounds one registration or heartbeat, retries
	// included; default 5s.
	RequestTimeout time.Duration
	// MetadataOffset reports the broker's applied metadata version
	// (Image().Version); may be nil.
	MetadataOffset func() int64
}

// Lifecycle is the broker side of registration and heartbeats, like
// Kafka's BrokerLifecycleManager: register, heartbeat every interval,
// re-register when the controller says the epoch is stale, and run
// controlled shutdown on request.
type Lifecycle struct {
	cfg    LifecycleConfig
	cancel context.CancelFunc
	done   chan struct{}

	mu           sync.Mutex
	epoch        int64 // -1 until registered
	fenced       bool
	wantShutdown bool
	// shutdownOK closes when the controller answers ShouldShutdown.
	shutdownOK chan struct{}
	// kick asks for a heartbeat now rather than at the next tick.
	kick chan struct{}
}

// StartLifecycle registers and starts heartbeating in the background.
func StartLifecycle(cfg LifecycleConfig) *Lifecycle {
	cfg.HeartbeatInterval = orDur(cfg.HeartbeatInterval, 2*time.Second)
	cfg.RequestTimeout = orDur(cfg.RequestTimeout, 5*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	l := &Lifecycle{cfg: cfg, cancel: cancel, done: make(chan struct{}),
		epoch: -1, fenced: true, shutdownOK: make(chan struct{}), kick: make(chan struct{}, 1)}
	go l.run(ctx)
	return l
}

// Epoch is the broker epoch of the current registration, or -1.
func (l *Lifecycle) Epoch() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epoch
}

// Fenced is the fencing state from the last heartbeat answer.
func (l *Lifecycle) Fenced() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fenced
}

// Stop stops heartbeating at once, as a crash would; the controller fences
// the broker when its session expires.
func (l *Lifecycle) Stop() {
	l.cancel()
	<-l.done
}

// ControlledShutdown asks the controller to move leadership away and take
// the broker out of every ISR, and waits until it answers ShouldShutdown
// (then heartbeats stop) or ctx ends.
func (l *Lifecycle) ControlledShutdown(ctx context.Context) error {
	l.mu.Lock()
	l.wantShutdown = true
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
	select {
	case <-l.shutdownOK:
		return nil
	case <-l.done:
		return errors.New("controller: lifecycle stopped before shutdown was acknowledged")
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *Lifecycle) run(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(l.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		if l.step(ctx) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-l.kick:
		}
	}
}

// step registers or heartbeats once; it reports whether to stop.
func (l *Lifecycle) step(ctx context.Context) bool {
	rctx, cancel := context.WithTimeout(ctx, l.cfg.RequestTimeout)
	defer cancel()
	l.mu.Lock()
	epoch, want := l.epoch, l.wantShutdown
	l.mu.Unlock()
	if epoch < 0 {
		e, err := l.cfg.Client.Register(rctx, l.cfg.BrokerID, l.cfg.Host, l.cfg.Port, l.cfg.ClusterID)
		if err == nil {
			l.mu.Lock()
			l.epoch, l.fenced = e, true
			l.mu.Unlock()
		}
		return false
	}
	var off int64
	if l.cfg.MetadataOffset != nil {
		off = l.cfg.MetadataOffset()
	}
	r, err := l.cfg.Client.Heartbeat(rctx, l.cfg.BrokerID, epoch, off, false, want)
	if errors.Is(err, kerr.StaleBrokerEpoch) || errors.Is(err, kerr.BrokerIDNotRegistered) {
		l.mu.Lock()
		l.epoch, l.fenced = -1, true
		l.mu.Unlock()
		return false
	}
	if err != nil {
		return false
	}
	l.mu.Lock()
	l.fenced = r.IsFenced
	l.mu.Unlock()
	if want && r.ShouldShutdown {
		close(l.shutdownOK)
		return true
	}
	return false
}
