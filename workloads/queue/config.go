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
	// most kit.MaxInFlightIdempotent with idempotence, kit.MaxInFlightLimit without.
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

// Validate checks c's settings and fills defaults; each error names the
// gregor run flag that fixes it.
func (c *Config) Validate() error {
	if c.Topic == "" {
		c.Topic = kit.DefaultTopic
	}
	// The producers' settings are every workload's (kit.Shared.Validate).
	sh := kit.Shared{Partitions: c.Partitions, Acks: c.Acks, Idempotence: c.Idempotence, MaxInFlight: c.MaxInFlight,
		DeliveryTimeout: c.DeliveryTimeout, Rate: c.Rate, Producers: c.Producers}
	if err := sh.Validate(c.Consumers); err != nil {
		return err
	}
	c.Acks, c.MaxInFlight, c.DeliveryTimeout = sh.Acks, sh.MaxInFlight, sh.DeliveryTimeout
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
