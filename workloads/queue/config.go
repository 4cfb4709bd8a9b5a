// Package queue is the queue workload of DESIGN section 4: producers send
// unique integer values to keys ("topic/partition") and consumers poll the
// keys they assigned; every operation and its completion goes to the
// history. It is driven by franz-go, unchanged, as a user's client would be.
package queue

import (
	"fmt"
	"time"
)

// Config is a workload's configuration.
type Config struct {
	Bootstrap []string
	Topic     string
	// Partitions of Topic; the keys are Topic/0 .. Topic/Partitions-1.
	Partitions int
	// Acks is "0", "1" or "all".
	Acks        string
	Idempotence bool
	// Retries bounds franz-go's tries per record; < 0 keeps its default
	// (unbounded within DeliveryTimeout).
	Retries int
	// DeliveryTimeout bounds one send, retries included (delivery.timeout.ms).
	DeliveryTimeout time.Duration
	// Rate is sends per second over all producers; <= 0 means unlimited.
	Rate float64
	// Producers and Consumers are the client processes (each runs one
	// operation at a time on its own client).
	Producers, Consumers int
	// PollTimeout bounds one poll.
	PollTimeout time.Duration
	// Seed drives which key each send goes to and which client a crash hits.
	Seed int64
}

// MaxClients bounds Producers+Consumers: each is a goroutine with a client.
const MaxClients = 256

// MaxRate bounds Rate: the limiter ticks once per send.
const MaxRate = 100000

// Validate checks c and fills defaults.
func (c *Config) Validate() error {
	if len(c.Bootstrap) == 0 {
		return fmt.Errorf("queue: no bootstrap brokers")
	}
	if c.Topic == "" {
		c.Topic = "queue"
	}
	if c.Partitions < 1 {
		return fmt.Errorf("queue: %d partitions: give at least 1", c.Partitions)
	}
	switch c.Acks {
	case "0", "1", "all":
	case "-1":
		c.Acks = "all"
	default:
		return fmt.Errorf("queue: acks %q: give 0, 1 or all", c.Acks)
	}
	if c.Idempotence && c.Acks != "all" {
		return fmt.Errorf("queue: idempotence needs acks=all (franz-go refuses otherwise): use --acks all or drop --idempotence")
	}
	if c.Producers < 0 || c.Consumers < 0 || c.Producers+c.Consumers > MaxClients {
		return fmt.Errorf("queue: %d producers + %d consumers: give 0..%d in all", c.Producers, c.Consumers, MaxClients)
	}
	if c.Rate > MaxRate {
		return fmt.Errorf("queue: rate %v: at most %d sends/s", c.Rate, MaxRate)
	}
	if c.DeliveryTimeout <= 0 {
		c.DeliveryTimeout = 5 * time.Second
	}
	if c.PollTimeout <= 0 {
		c.PollTimeout = 500 * time.Millisecond
	}
	return nil
}

// Key is the history key of a partition.
func Key(topic string, partition int32) string { return fmt.Sprintf("%s/%d", topic, partition) }

// Keys lists every key of c.
func (c *Config) Keys() []string {
	keys := make([]string, c.Partitions)
	for p := range keys {
		keys[p] = Key(c.Topic, int32(p))
	}
	return keys
}
