// Package queue is the queue workload of DESIGN.md section 4: producers send
// unique integer values to keys ("topic/partition") and consumers poll the
// keys they assigned; every operation and its completion goes to the
// history. It is driven by franz-go, unchanged, as a user's client would be.
package queue

import (
	"context"
	"fmt"
	"net"
	"time"

	"gregor/history"
	"gregor/workloads/kit"
)

// Config is a workload's configuration.
type Config struct {
	// Bootstrap are the brokers the clients seed from; New needs them,
	// Validate does not (a run validates its settings before any broker
	// exists).
	Bootstrap []string
	Topic     string
	// Partitions of Topic; the keys are Topic/0 .. Topic/Partitions-1.
	Partitions int
	// Acks is "0", "1" or "all" (history.ParseAcks).
	Acks        string
	Idempotence bool
	// Retries bounds franz-go's tries per record; < 0 keeps its default
	// (unbounded within DeliveryTimeout).
	Retries int
	// DeliveryTimeout bounds one send, retries included (delivery.timeout.ms).
	DeliveryTimeout time.Duration
	// Rate is sends per second over all producers; 0 means unlimited.
	Rate float64
	// MaxInFlight is Kafka's max.in.flight.requests.per.connection: the
	// records a producer process keeps in flight. Each send operation then
	// carries MaxInFlight sends, each produced once the request carrying the
	// one before is written (see send). 0 or 1: one record at a time. At
	// most MaxInFlightIdempotent with idempotence, MaxInFlightLimit without.
	MaxInFlight int
	// Producers and Consumers are the client processes (each runs one
	// operation at a time on its own client).
	Producers, Consumers int
	// PollTimeout bounds one poll.
	PollTimeout time.Duration
	// Seed drives which key each send goes to and which client a crash hits.
	Seed int64
	// Dial, if set, is the dialer of a workload client process (its history
	// process id): the harness routes every client through its client-link
	// network (runtime/clientlink) so link faults can act on it. nil: dial
	// directly.
	Dial func(process int) func(ctx context.Context, network, host string) (net.Conn, error)
	// ResponseTimeout bounds a producer's wait for one produce answer before
	// it closes the connection and retries (franz-go: ProduceRequestTimeout
	// plus RequestTimeoutOverhead; Kafka's request.timeout.ms). 0: the
	// default, min(DeliveryTimeout, 10s) plus 2 s. Link faults need it
	// below their hold, so that a client whose answer was lost really
	// retries to the same broker while the fault lasts.
	ResponseTimeout time.Duration
}

// requestOverhead is franz-go's RequestTimeoutOverhead for every client:
// the wait for an answer beyond a request's own timeout field.
const requestOverhead = 2 * time.Second

// MinResponseTimeout bounds ResponseTimeout below: half of it is the
// produce request's own timeout (the broker's wait for the ISR), which must
// leave the ISR time to answer.
const MinResponseTimeout = time.Second

// produceTimeouts are franz-go's ProduceRequestTimeout and
// RequestTimeoutOverhead for a producer, which add up to the response
// timeout.
func (c *Config) produceTimeouts() (request, overhead time.Duration) {
	if c.ResponseTimeout == 0 {
		return min(c.DeliveryTimeout, 10*time.Second), requestOverhead
	}
	overhead = min(requestOverhead, c.ResponseTimeout/2)
	return c.ResponseTimeout - overhead, overhead
}

// MaxInFlightIdempotent is Kafka's bound on max.in.flight.requests.per.connection
// for an idempotent producer (ProducerConfig refuses more: the broker keeps
// the last five batches per producer to recognise retries; KAFKA-5494).
const MaxInFlightIdempotent = 5

// MaxInFlightLimit bounds MaxInFlight without idempotence: a send operation
// carries that many records, and the history's operations stay small.
const MaxInFlightLimit = 16

// Validate checks c's settings and fills defaults; each error names the
// gregor run flag that fixes it.
func (c *Config) Validate() error {
	if c.Topic == "" {
		c.Topic = kit.DefaultTopic
	}
	if c.Partitions < 1 {
		return fmt.Errorf("--partitions %d: give at least 1", c.Partitions)
	}
	acks, err := history.ParseAcks(c.Acks)
	if err != nil {
		return fmt.Errorf("--%w", err)
	}
	c.Acks = acks
	if c.Idempotence && c.Acks != "all" {
		return fmt.Errorf("--idempotence with --acks %s: an idempotent producer needs every acknowledgement; franz-go, like Kafka, requires acks=all for idempotence; use --acks all or drop --idempotence", c.Acks)
	}
	if c.Producers < 1 || c.Consumers < 0 || c.Producers+c.Consumers > kit.MaxClients {
		return fmt.Errorf("--concurrency %d and --consumers %d: give at least one producer and at most %d clients", c.Producers, c.Consumers, kit.MaxClients)
	}
	if c.Rate < 0 || c.Rate > kit.MaxRate {
		return fmt.Errorf("--rate %v: give 0 (unlimited) to %d", c.Rate, kit.MaxRate)
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 1
	}
	switch {
	case c.MaxInFlight < 1 || c.MaxInFlight > MaxInFlightLimit:
		return fmt.Errorf("--max-in-flight %d: give 1 to %d", c.MaxInFlight, MaxInFlightLimit)
	case c.Idempotence && c.MaxInFlight > MaxInFlightIdempotent:
		return fmt.Errorf("--max-in-flight %d with --idempotence: Kafka allows an idempotent producer at most %d requests in flight (the broker dedupes the last %d batches); give at most %d or drop --idempotence",
			c.MaxInFlight, MaxInFlightIdempotent, MaxInFlightIdempotent, MaxInFlightIdempotent)
	}
	if c.DeliveryTimeout <= 0 {
		c.DeliveryTimeout = kit.DefaultDeliveryTimeout
	}
	if c.ResponseTimeout != 0 && (c.ResponseTimeout < MinResponseTimeout || c.ResponseTimeout > c.DeliveryTimeout+requestOverhead) {
		return fmt.Errorf("response timeout %v: give %v to the delivery timeout plus %v (%v)", c.ResponseTimeout,
			MinResponseTimeout, requestOverhead, c.DeliveryTimeout+requestOverhead)
	}
	if c.PollTimeout <= 0 {
		c.PollTimeout = 500 * time.Millisecond
	}
	return nil
}

// Keys lists every key of c.
func (c *Config) Keys() []string {
	keys := make([]string, c.Partitions)
	for p := range keys {
		keys[p] = kit.Key(c.Topic, int32(p))
	}
	return keys
}
