package kit

import (
	"context"
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
