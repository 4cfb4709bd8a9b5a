package cluster

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/cluster/nodefault"
	"gregor/internal/fsys"
)

// The process runtime's channel: a broker that owns its disk reads its
// control file (nodefaults.json). An armed EIO on every segment write (a
// failed device) fails the produce with KAFKA_STORAGE_ERROR, the broker records the
// log-directory failure in its events file and halts (Halt stands in for
// the exit); a flip asked for by the file is made once and recorded; the
// file's skew moves the broker's clock.
func TestBrokerNodeFaultsFromControlFile(t *testing.T) {
	dir := t.TempDir()
	halted := make(chan struct{})
	b := startBroker(t, dir, func(c *Config) {
		c.AutoCreateTopics = true
		c.Halt = func() { close(halted) }
	})
	cl := newClient(t, b.Addr(), kgo.RequestRetries(0), kgo.RecordRetries(1), kgo.ProducerLinger(0))
	createTopic(t, cl, "t", 1, nil)
	produceAll(t, cl, "t", 1, 20)
	ctl := filepath.Join(dir, nodefault.FileName)
	events := filepath.Join(dir, nodefault.EventsName)

	if err := nodefault.WriteControl(ctl, nodefault.Control{SkewMs: 7_200_000, Flip: &nodefault.Flip{ID: "f", Pick: 3}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return b.Now().Sub(time.Now()) > 2*time.Hour-time.Minute })
	var flip nodefault.Event
	waitUntil(t, func() bool {
		es, _ := nodefault.ReadEvents(events)
		for _, e := range es {
			if e.Kind == nodefault.EventFlip && e.ID == "f" {
				flip = e
				return true
			}
		}
		return false
	})
	if flip.Topic != "t" || flip.Partition != 0 || flip.Node != 1 {
		t.Fatalf("flip %+v", flip)
	}

	if err := nodefault.WriteControl(ctl, nodefault.Control{Disk: []fsys.Fault{{Op: fsys.OpWrite, Errno: fsys.EIO}},
		Flip: &nodefault.Flip{ID: "f", Pick: 3}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return b.Now().Sub(time.Now()) < time.Minute && b.NodeFaults().Disk.Armed() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: 0, Value: []byte("x")}).FirstErr()
	if err != kerr.KafkaStorageError {
		t.Fatalf("produce on a failing disk: %v, want KAFKA_STORAGE_ERROR", err)
	}
	select {
	case <-halted:
	case <-time.After(10 * time.Second):
		t.Fatal("the broker did not halt on its log-directory failure")
	}
	es, _ := nodefault.ReadEvents(events)
	var flips, failures int
	for _, e := range es {
		switch e.Kind {
		case nodefault.EventFlip:
			flips++
		case nodefault.EventLogDirFailure:
			failures++
			if !strings.Contains(e.Error, "input/output error") {
				t.Errorf("log-dir failure %q", e.Error)
			}
		}
	}
	if flips != 1 || failures != 1 {
		t.Fatalf("events %+v: want the flip once and one log-dir failure", es)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
