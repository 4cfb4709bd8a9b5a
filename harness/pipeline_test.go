package harness

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"gregor/checker"
	"gregor/history"
	"gregor/workloads/queue"
)

// --max-in-flight pipelines: a producer process keeps several produce
// requests in flight on its client (what exercises Kafka's idempotent dedupe
// window of five batches and the order of in-flight batches), each send
// operation carries that many sends, and a correct cluster's history of it
// checks clean. The control at 1 never has two requests in flight, so the
// peak measures the pipelining, not the client.
func TestPipelinedProducersKeepRequestsInFlight(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	if testing.Short() {
		t.Skip("two 3 s workloads on a cluster")
	}
	c := startCluster(t, testSpec("pipe", 3, 2))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A 50 ms delay on every link: an acks=all answer then waits for a
	// follower's fetch round trip, so a pipelining client has requests
	// outstanding while it writes the next (on bare loopback an answer can
	// beat the next record's write).
	if err := slowAll(50*time.Millisecond)(ctx, c); err != nil {
		t.Fatal(err)
	}
	run := func(maxInFlight int) (peak int, ops []history.Op) {
		topic := fmt.Sprintf("pipe%d", maxInFlight)
		if err := CreateTopic(ctx, c.Bootstrap(), TopicSpec{Name: topic, Partitions: 2, RF: 3, MinISR: 2}); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		h := history.NewWriter(&buf, 0)
		wl, err := queue.New(queue.Config{Bootstrap: c.Bootstrap(), Topic: topic, Partitions: 2, Acks: "all", Idempotence: true,
			Retries: -1, Rate: 400, Producers: 2, Consumers: 1, MaxInFlight: maxInFlight, Seed: 5}, h, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		wctx, stop := context.WithTimeout(ctx, 3*time.Second)
		defer stop()
		wl.Run(wctx)
		if err := wl.FinalRead(ctx); err != nil {
			t.Fatal(err)
		}
		h.Close()
		ops, _, _, err = history.ReadAll(&buf)
		if err != nil {
			t.Fatal(err)
		}
		return wl.PeakInFlight(), ops
	}
	peak, ops := run(5)
	sends := 0
	for _, op := range ops {
		if op.F != history.FSend || op.Type != history.Invoke {
			continue
		}
		sends++
		if len(op.Mops) != 5 {
			t.Fatalf("op %d carries %d sends, want 5", op.Index, len(op.Mops))
		}
	}
	if sends == 0 {
		t.Fatal("no send operation")
	}
	if peak < 2 {
		t.Fatalf("max in flight 5: at most %d produce request in flight at once", peak)
	}
	res, err := checker.Check(ops, &history.Config{Acks: "all", MinISR: 2, RF: 3, Idempotence: true, MaxInFlight: 5}, checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid != checker.ValidTrue || res.Stats.Records == 0 {
		t.Fatalf("a correct cluster's pipelined history: valid %v, counts %v, %d records read", res.Valid, res.Counts, res.Stats.Records)
	}
	t.Logf("max in flight 5: peak %d requests, %d send operations, %d records read", peak, sends, res.Stats.Records)
	if peak, _ := run(1); peak != 1 {
		t.Fatalf("max in flight 1: peak %d requests in flight, want 1", peak)
	}
}
