package queue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/history"
)

// timedOut is how franz-go wraps the last retry's error when a record's
// delivery timeout passes (producer.go: "%w, last err: %w").
func timedOut(last error) error { return fmt.Errorf("%w, last err: %w", kgo.ErrRecordTimeout, last) }

func TestClassify(t *testing.T) {
	cases := []struct {
		name  string
		err   error
		clean bool
		want  history.Type
		code  string
	}{
		{"ok", nil, true, history.OK, ""},
		{"rejected before append", kerr.NotEnoughReplicas, true, history.Fail, "NOT_ENOUGH_REPLICAS"},
		{"retried NER until timeout", timedOut(kerr.NotEnoughReplicas), true, history.Fail, "NOT_ENOUGH_REPLICAS"},
		// An earlier attempt may have appended: unknown, whatever the last error.
		{"NER after an unanswered attempt", timedOut(kerr.NotEnoughReplicas), false, history.Info, "NOT_ENOUGH_REPLICAS"},
		{"after append", kerr.NotEnoughReplicasAfterAppend, true, history.Info, "NOT_ENOUGH_REPLICAS_AFTER_APPEND"},
		{"not leader", timedOut(kerr.NotLeaderForPartition), true, history.Info, "NOT_LEADER_FOR_PARTITION"},
		{"request timed out", kerr.RequestTimedOut, true, history.Info, "REQUEST_TIMED_OUT"},
		{"bare timeout", kgo.ErrRecordTimeout, true, history.Info, "TIMEOUT"},
		{"connection lost", timedOut(io.EOF), true, history.Info, "TIMEOUT"},
		{"network", &net.OpError{Op: "read", Err: io.EOF}, true, history.Info, "NETWORK"},
		{"client closed", kgo.ErrClientClosed, true, history.Info, "CLIENT_CLOSED"},
		{"context", context.DeadlineExceeded, true, history.Info, "TIMEOUT"},
	}
	for _, c := range cases {
		if got := Classify(c.err, c.clean); got != c.want {
			t.Errorf("%s: %v -> %v, want %v", c.name, c.err, got, c.want)
		}
		if got := ErrorName(c.err); got != c.code {
			t.Errorf("%s: name %q, want %q", c.name, got, c.code)
		}
	}
}

// An operation of several sends (--max-in-flight) is ok only when all were
// acknowledged, fail only when all were certainly refused: a part that
// happened makes it unknown, never fail (a wrong fail is a false G1a).
func TestClassifyOp(t *testing.T) {
	ner := kerr.NotEnoughReplicas
	cases := []struct {
		name  string
		errs  []error
		clean bool
		want  history.Type
	}{
		{"all acknowledged", []error{nil, nil, nil}, true, history.OK},
		{"all refused before append", []error{ner, ner}, true, history.Fail},
		{"all refused, an attempt unanswered", []error{ner, ner}, false, history.Info},
		{"some acknowledged, some refused", []error{nil, ner}, true, history.Info},
		{"refused and timed out", []error{ner, kgo.ErrRecordTimeout}, true, history.Info},
		{"one send, refused", []error{ner}, true, history.Fail},
	}
	for _, c := range cases {
		if got := ClassifyOp(c.errs, c.clean); got != c.want {
			t.Errorf("%s: %v -> %v, want %v", c.name, c.errs, got, c.want)
		}
	}
}

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
