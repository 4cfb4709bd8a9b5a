//go:build synctests

package sim

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// killOnMetadata kills every broker, once armed, when the client has read
// a metadata response: the client then knows the partition's leader (its
// sink exists) and next loads its producer id, with every broker gone.
type killOnMetadata struct {
	mu    sync.Mutex
	armed bool
	kill  func()
}

func (h *killOnMetadata) arm() { h.mu.Lock(); h.armed = true; h.mu.Unlock() }

func (h *killOnMetadata) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	h.mu.Lock()
	fire := h.armed && key == 3 // Metadata
	if fire {
		h.armed = false
	}
	h.mu.Unlock()
	if fire {
		h.kill()
	}
}

// refusalClock counts a client's refused dials and how many of them came at
// one virtual instant in a row.
type refusalClock struct {
	mu       sync.Mutex
	total    int
	same     int
	last     time.Time
	onFrozen func(int)
}

// frozenAt is how many refusals at one instant mean the clock stopped: a
// client's few connections are each refused at most once per instant.
const frozenAt = 100_000

func (r *refusalClock) dial(d func(context.Context, string, string) (net.Conn, error)) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d(ctx, network, addr)
		if errors.Is(err, syscall.ECONNREFUSED) {
			r.mu.Lock()
			r.total++
			if now := time.Now(); now.Equal(r.last) {
				r.same++
			} else {
				r.last, r.same = now, 0
			}
			if r.same == frozenAt {
				r.onFrozen(r.same)
			}
			r.mu.Unlock()
		}
		return c, err
	}
}

// TestSimTxnProducerOutlivesEveryBrokerDown: a new transactional producer
// whose first FindCoordinator meets every broker going down redials them
// without a backoff (franz-go's sink retries a failed producer-id load at
// once, and loadCoordinator's dial errors skip the retry backoff), as it
// would against Kafka. Each refusal costs virtual time
// (faultnet.RefusalRoundTrip), so the restarts a second later come and its
// transaction commits. Were refusals free, the clock would stop at the
// outage: the brokers would never restart and the run would spin until its
// wall-clock bound (the hangs of MEASUREMENTS 4.3). The test then restarts
// them itself, to end, and fails.
func TestSimTxnProducerOutlivesEveryBrokerDown(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := startTxnCluster(t)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		base := quickRetries(c)
		adm := newTestClient(t, append(base, kgo.Dialer(c.Dial)))
		defer adm.Close()
		const topic = "outage"
		if err := WaitFor(30*time.Second, func() error {
			_, err := kadm.NewClient(adm).CreateTopic(ctx, 1, 3, nil, topic)
			return err
		}); err != nil {
			t.Fatalf("create topic: %v", err)
		}
		var (
			down, up    time.Time
			restartOnce sync.Once
			frozen      = make(chan int, 1)
		)
		restart := func() {
			restartOnce.Do(func() {
				for id := int32(1); id <= 3; id++ {
					if err := c.Restart(id); err != nil {
						t.Errorf("restart: %v", err)
					}
				}
				up = time.Now()
			})
		}
		hook := &killOnMetadata{kill: func() {
			for id := int32(1); id <= 3; id++ {
				if err := c.Kill(id); err != nil {
					t.Errorf("kill: %v", err)
				}
			}
			down = time.Now()
			go func() {
				time.Sleep(time.Second)
				restart()
			}()
		}}
		refusals := &refusalClock{onFrozen: func(n int) {
			frozen <- n
			go restart()
		}}
		prod := newTestClient(t, append(base, kgo.Dialer(refusals.dial(c.Dial)), kgo.WithHooks(hook),
			kgo.TransactionalID("outage-txn"), kgo.DefaultProduceTopic(topic)))
		defer prod.Close()
		// The producer begins with every broker down, so its producer id
		// is left to load (franz-go flags it for reload on a dial error)
		// by its sink's first produce.
		for id := int32(1); id <= 3; id++ {
			if err := c.Kill(id); err != nil {
				t.Fatal(err)
			}
		}
		if err := prod.BeginTransaction(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		for id := int32(1); id <= 3; id++ {
			if err := c.Restart(id); err != nil {
				t.Fatal(err)
			}
		}
		if err := WaitFor(time.Minute, func() error {
			return adm.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("up")}).FirstErr()
		}); err != nil {
			t.Fatalf("the restarted cluster takes no write: %v", err)
		}
		hook.arm()
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("commit: %v", err)
		}
		select {
		case n := <-frozen:
			t.Fatalf("%d refused dials at one virtual instant: the producer's redials froze the clock", n)
		default:
		}
		refusals.mu.Lock()
		total := refusals.total
		refusals.mu.Unlock()
		if down.IsZero() || total == 0 {
			t.Fatalf("the producer never met the outage (down %v, %d refused dials)", down, total)
		}
		if up.Sub(down) < time.Second {
			t.Errorf("the brokers were down %v of virtual time, want the second the restart waited", up.Sub(down))
		}
		t.Logf("%d refused dials over %v of outage", total, up.Sub(down))
	})
}
