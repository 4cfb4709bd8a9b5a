package queue

import (
	"errors"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The attempt tracker calls a send clean only when every produce request
// written was answered and no per-partition error was ambiguous.
func TestAttempts(t *testing.T) {
	a := newAttempts()
	w, e, l := writeHook{a}, e2eHook{a}, logHook{a}
	var meta kgo.BrokerMetadata
	if !a.clean() {
		t.Fatal("fresh tracker not clean")
	}
	w.OnBrokerWrite(meta, produceKey, 100, 0, 0, nil)
	if a.clean() {
		t.Fatal("a written, unanswered produce request is clean")
	}
	e.OnBrokerE2E(meta, produceKey, kgo.BrokerE2E{})
	if !a.clean() {
		t.Fatal("answered request not clean")
	}
	w.OnBrokerWrite(meta, produceKey, 100, 0, 0, nil)
	e.OnBrokerE2E(meta, produceKey, kgo.BrokerE2E{ReadErr: io.EOF})
	if a.clean() {
		t.Fatal("a request whose response was lost is clean")
	}
	a.reset()
	w.OnBrokerWrite(meta, 3, 100, 0, 0, nil) // metadata: not a produce
	l.Log(kgo.LogLevelInfo, "batch in a produce request failed", "err", kerr.NotEnoughReplicas)
	if !a.clean() {
		t.Fatal("a definite rejection or a metadata request made the send unclean")
	}
	l.Log(kgo.LogLevelInfo, "batch in a produce request failed", "err", kerr.NotEnoughReplicasAfterAppend)
	if a.clean() {
		t.Fatal("NOT_ENOUGH_REPLICAS_AFTER_APPEND on an attempt left the send clean")
	}
	a.reset()
	w.OnBrokerWrite(meta, produceKey, 0, 0, 0, errors.New("dial refused"))
	if !a.clean() {
		t.Fatal("a write that sent no byte counts as an attempt")
	}
}

func TestConfigValidate(t *testing.T) {
	c := Config{Bootstrap: []string{"x:1"}, Partitions: 2, Acks: "1", Idempotence: true}
	if err := c.Validate(); err == nil {
		t.Fatal("idempotence with acks=1 accepted")
	}
	c = Config{Bootstrap: []string{"x:1"}, Partitions: 2, Acks: "-1", Producers: 1}
	if err := c.Validate(); err != nil || c.Acks != "all" || c.Topic != "queue" || c.DeliveryTimeout <= 0 {
		t.Fatalf("%+v: %v", c, err)
	}
	if got := c.Keys(); len(got) != 2 || got[1] != "queue/1" {
		t.Fatalf("keys %v", got)
	}
}
