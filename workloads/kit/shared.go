package kit

import (
	"gregor/history"

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

// Producers' bounds (--max-in-flight).
const (
	// MaxInFlightIdempotent is Kafka's bound on
	// max.in.flight.requests.per.connection for an idempotent producer
	// (ProducerConfig refuses more: the broker keeps the last five batches
	// per producer to recognise retries; KAFKA-5494).
	MaxInFlightIdempotent = 5
	// MaxInFlightLimit bounds MaxInFlight without idempotence: a send
	// operation carries that many records, and the history's operations
	// stay small.
	MaxInFlightLimit = 16
	// KafkaMaxInFlight is Kafka's default
	// max.in.flight.requests.per.connection (ProducerConfig): what a user's
	// producer runs with unless told otherwise, and so `gregor run`'s.
	KafkaMaxInFlight = 5
)

// Validate checks the settings every workload's producers are made from,
// and fills their defaults (acks spelled canonically, one record in
// flight, the delivery timeout); readers are the clients beside the
// producers that count against MaxClients. Each error names the gregor run
// flag that fixes it.
func (s *Shared) Validate(readers int) error {
	if s.Partitions < 1 {
		return fmt.Errorf("--partitions %d: give at least 1", s.Partitions)
	}
	acks, err := history.ParseAcks(s.Acks)
	if err != nil {
		return fmt.Errorf("--%w", err)
	}
	s.Acks = acks
	if s.Idempotence && s.Acks != "all" {
		return fmt.Errorf("--idempotence with --acks %s: an idempotent producer needs every acknowledgement; franz-go, like Kafka, requires acks=all for idempotence; use --acks all or drop --idempotence", s.Acks)
	}
	if s.Producers < 1 || readers < 0 || s.Producers+readers > MaxClients {
		return fmt.Errorf("--concurrency %d and --consumers %d: give at least one producer and at most %d clients", s.Producers, readers, MaxClients)
	}
	if s.Rate < 0 || s.Rate > MaxRate {
		return fmt.Errorf("--rate %v: give 0 (unlimited) to %d", s.Rate, MaxRate)
	}
	if s.MaxInFlight == 0 {
		s.MaxInFlight = 1
	}
	switch {
	case s.MaxInFlight < 1 || s.MaxInFlight > MaxInFlightLimit:
		return fmt.Errorf("--max-in-flight %d: give 1 to %d", s.MaxInFlight, MaxInFlightLimit)
	case s.Idempotence && s.MaxInFlight > MaxInFlightIdempotent:
		return fmt.Errorf("--max-in-flight %d with --idempotence: Kafka allows an idempotent producer at most %d requests in flight (the broker dedupes the last %d batches); give at most %d or drop --idempotence",
			s.MaxInFlight, MaxInFlightIdempotent, MaxInFlightIdempotent, MaxInFlightIdempotent)
	}
	if s.DeliveryTimeout <= 0 {
		s.DeliveryTimeout = DefaultDeliveryTimeout
	}
	return nil
}
