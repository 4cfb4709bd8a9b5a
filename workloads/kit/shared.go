package kit

import (
	"context"
	"fmt"
	"time"
)

// Bounds and defaults every workload's clients share.
const (
	// MaxClients bounds a run's client processes: each is a goroutine
	// with a client.
	MaxClients = 256
	// MaxRate bounds --rate: a limiter ticks once per operation.
	MaxRate = 100000
	// DefaultDeliveryTimeout is delivery.timeout.ms when none is given:
	// short, so a send a fault stalls is settled (failed or indeterminate)
	// within a test rather than after Kafka's two minutes.
	DefaultDeliveryTimeout = 5 * time.Second
	// DefaultTopic is the test topic when none is given; its partitions
	// are the history's keys (Key).
	DefaultTopic = "queue"
)

// Key is the history key of a partition: "topic/partition".
func Key(topic string, partition int32) string { return fmt.Sprintf("%s/%d", topic, partition) }

// Limiter hands out one token per operation at rate, with a burst of at
// most burst; nil means unlimited. It stops when ctx ends.
func Limiter(ctx context.Context, rate float64, burst int) <-chan struct{} {
	if rate <= 0 {
		return nil
	}
	ch := make(chan struct{}, max(1, burst))
	every := time.Duration(float64(time.Second) / rate)
	go func() {
		t := time.NewTicker(max(every, time.Microsecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				select {
				case ch <- struct{}{}:
				default:
				}
			}
		}
	}()
	return ch
}
