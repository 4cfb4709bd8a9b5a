//go:build synctests

package sim

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/cluster"
	"gregor/cluster/nodefault"
	"gregor/internal/fsys"
)

// diskCluster is three brokers and an RF 3 topic (min ISR 2) whose
// partition's leader the tests hit.
type diskCluster struct {
	t      *testing.T
	c      *Cluster
	ctx    context.Context
	topic  string
	leader int32
}

func startDiskCluster(t *testing.T, fsync bool, configs map[string]*string) *diskCluster {
	c, err := Start(Options{Brokers: 3, Configure: func(cfg *cluster.Config) {
		cfg.RaftTimeout = 500 * time.Millisecond
		cfg.SessionTimeout = 1500 * time.Millisecond
		cfg.HeartbeatInterval = 250 * time.Millisecond
		cfg.ReplicaLagMax = 2 * time.Second
		cfg.ShutdownTimeout = 5 * time.Second
		if fsync {
			cfg.Storage.Fsync.Mode = 2 // storage.FsyncAlways
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	d := &diskCluster{t: t, c: c, ctx: ctx, topic: "disk"}
	adm := d.client()
	defer adm.Close()
	two := "2"
	if configs == nil {
		configs = map[string]*string{}
	}
	configs["min.insync.replicas"] = &two
	if err := WaitFor(30*time.Second, func() error {
		_, err := kadm.NewClient(adm).CreateTopic(ctx, 1, 3, configs, d.topic)
		if err != nil && strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
			return nil
		}
		return err
	}); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	d.leader = d.leaderNot(-1, 3)
	return d
}

func (d *diskCluster) client(opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(d.c.Bootstrap()...), kgo.Dialer(d.c.Dial),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.MetadataMinAge(50 * time.Millisecond)}, opts...)...)
	if err != nil {
		d.t.Fatal(err)
	}
	return cl
}

// leaderNot waits for a leader other than not with at least isr replicas
// in sync, as every live broker sees it.
func (d *diskCluster) leaderNot(not int32, isr int) int32 {
	var leader int32
	err := WaitFor(30*time.Second, func() error {
		leader = -1
		for id := int32(1); id <= 3; id++ {
			b := d.c.Broker(id)
			if b == nil || id == not {
				continue
			}
			tp := b.Image().Topics[d.topic]
			if tp == nil || len(tp.Partitions) != 1 {
				return fmt.Errorf("topic not yet visible on %d", id)
			}
			p := tp.Partitions[0]
			if p.Leader < 0 || p.Leader == not || d.c.Broker(p.Leader) == nil || len(p.ISR) < isr {
				return fmt.Errorf("node %d sees leader %d isr %v", id, p.Leader, p.ISR)
			}
			if leader >= 0 && p.Leader != leader {
				return fmt.Errorf("nodes disagree: %d and %d", leader, p.Leader)
			}
			leader = p.Leader
		}
		return nil
	})
	if err != nil {
		d.t.Fatalf("leader (not %d, isr >= %d): %v", not, isr, err)
	}
	return leader
}

// produce sends values [from, from+n) acks=all, idempotent, and returns
// the acknowledged ones.
func (d *diskCluster) produce(prod *kgo.Client, from, n int, acked map[string]bool) {
	for i := from; i < from+n; i++ {
		v := strconv.Itoa(i)
		if err := prod.ProduceSync(d.ctx, &kgo.Record{Topic: d.topic, Partition: 0, Value: []byte(v)}).FirstErr(); err == nil {
			acked[v] = true
		}
	}
}

// readAll reads the partition from offset 0 until every acknowledged
// value arrived (bounded by the test's context) and fails on any value
// that was never sent (a corrupt record served).
func (d *diskCluster) readAll(acked map[string]bool, sent int) {
	cons := d.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{d.topic: {0: kgo.NewOffset().AtStart()}}))
	defer cons.Close()
	seen := map[string]bool{}
	missing := func() []string {
		var out []string
		for v := range acked {
			if !seen[v] {
				out = append(out, v)
			}
		}
		return out
	}
	for len(missing()) > 0 {
		fs := cons.PollFetches(d.ctx)
		if err := d.ctx.Err(); err != nil {
			d.t.Fatalf("reading back: %d acknowledged values not read: %v (%v)", len(missing()), missing(), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if n, err := strconv.Atoi(string(r.Value)); err != nil || n < 0 || n >= sent {
				d.t.Errorf("offset %d: value %q was never sent: a corrupt record was served", r.Offset, r.Value)
			}
			seen[string(r.Value)] = true
		})
	}
}

// touch reads the partition from offset 0 for a moment, ignoring what
// fails: a read that reaches the leader's segment file.
func (d *diskCluster) touch() {
	cons := d.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{d.topic: {0: kgo.NewOffset().AtStart()}}))
	defer cons.Close()
	ctx, cancel := context.WithTimeout(d.ctx, 500*time.Millisecond)
	defer cancel()
	cons.PollFetches(ctx)
}

// awaitHalt waits for node id to halt and returns its log-dir failure.
func (d *diskCluster) awaitHalt(id int32, trigger func()) nodefault.Event {
	var ev nodefault.Event
	err := WaitFor(30*time.Second, func() error {
		for _, e := range d.c.NodeFaults(id).Events() {
			if e.Kind == nodefault.EventLogDirFailure && d.c.Broker(id) == nil {
				ev = e
				return nil
			}
		}
		trigger()
		return fmt.Errorf("node %d has not halted", id)
	})
	if err != nil {
		d.t.Fatal(err)
	}
	return ev
}

// TestSimDiskFaultEffects: each disk fault on the leader does what it
// says. EIO on a write, fsync or read and ENOSPC surface as the errno, the
// broker takes its log directory offline and halts, the controller moves
// leadership to an ISR member, writes go on there, and after the node
// returns (disarmed) every acknowledged record reads back.
func TestSimDiskFaultEffects(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault fsys.Fault
		fsync bool
		errno string
	}{
		{"eio-write", fsys.Fault{Op: fsys.OpWrite, Errno: fsys.EIO, Count: 1}, false, "input/output error"},
		{"eio-fsync", fsys.Fault{Op: fsys.OpSync, Errno: fsys.EIO, Count: 1}, true, "input/output error"},
		{"eio-read", fsys.Fault{Op: fsys.OpRead, Errno: fsys.EIO, Count: 1}, false, "input/output error"},
		{"enospc", fsys.Fault{Op: fsys.OpWrite, Errno: fsys.ENOSPC}, false, "no space left on device"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := startDiskCluster(t, c.fsync, nil)
				prod := d.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(60*time.Second), kgo.ProducerLinger(0))
				defer prod.Close()
				acked := map[string]bool{}
				d.produce(prod, 0, 50, acked)
				if err := d.c.NodeFaults(d.leader).Disk.Set([]fsys.Fault{c.fault}); err != nil {
					t.Fatal(err)
				}
				sent := 50
				ev := d.awaitHalt(d.leader, func() {
					if c.fault.Op == fsys.OpRead {
						d.touch()
						return
					}
					d.produce(prod, sent, 1, acked)
					sent++
				})
				if !strings.Contains(ev.Error, c.errno) {
					t.Fatalf("log-dir failure %q, want %q", ev.Error, c.errno)
				}
				if d.c.NodeFaults(d.leader).Disk.Injected() == 0 {
					t.Fatal("no error was injected")
				}
				next := d.leaderNot(d.leader, 2)
				d.produce(prod, sent, 50, acked)
				sent += 50
				if err := d.c.NodeFaults(d.leader).Disk.Set(nil); err != nil {
					t.Fatal(err)
				}
				if err := d.c.Restart(d.leader); err != nil {
					t.Fatal(err)
				}
				d.leaderNot(-1, 3)
				d.readAll(acked, sent)
				t.Logf("%s: node %d halted (%s); leader %d; %d acknowledged of %d", c.name, d.leader, ev.Error, next, len(acked), sent)
			})
		})
	}
}

// TestSimBitFlipNeverServed: a bit flipped in a batch of the leader's log
// is never returned to a consumer: the read that reaches it finds the CRC
// mismatch, the leader's log directory goes offline and it halts, an ISR
// member leads with an intact copy, and the consumer reads exactly what was
// sent. Restarted, the node's recovery cuts its log at the flipped batch
// and it fetches the rest again.
func TestSimBitFlipNeverServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := startDiskCluster(t, false, nil)
		prod := d.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(60*time.Second), kgo.ProducerLinger(0))
		defer prod.Close()
		acked := map[string]bool{}
		d.produce(prod, 0, 100, acked)
		e := d.c.Broker(d.leader).FlipBit(nodefault.Flip{ID: "t", Pick: 12345})
		if e.Kind != nodefault.EventFlip || e.Topic != d.topic {
			t.Fatalf("flip: %+v", e)
		}
		ev := d.awaitHalt(d.leader, d.touch)
		if !strings.Contains(ev.Error, "CRC") {
			t.Fatalf("log-dir failure %q, want the CRC mismatch", ev.Error)
		}
		d.leaderNot(d.leader, 2)
		d.readAll(acked, 100)
		if err := d.c.Restart(d.leader); err != nil {
			t.Fatal(err)
		}
		d.leaderNot(-1, 3)
		l := d.c.Broker(d.leader).Partition(d.topic, 0).Log()
		if err := WaitFor(20*time.Second, func() error {
			if _, err := l.Read(0, 1<<20, l.LEO()); err != nil {
				return err
			}
			return nil
		}); err != nil {
			t.Fatalf("the restarted node's log still fails to read: %v", err)
		}
		t.Logf("flipped batch %d on node %d; halted: %s", e.Offset, d.leader, ev.Error)
	})
}

// TestSimClockSkewShiftsLogAppendTime: with message.timestamp.type
// LogAppendTime the leader stamps batches with its own wall clock, so a
// skew of D on the leader moves the stamps by D (Kafka's LogValidator reads
// the broker's time.milliseconds()), and the produce response carries it.
func TestSimClockSkewShiftsLogAppendTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lat := "LogAppendTime"
		d := startDiskCluster(t, false, map[string]*string{"message.timestamp.type": &lat})
		prod := d.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
		defer prod.Close()
		cons := d.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{d.topic: {0: kgo.NewOffset().AtStart()}}))
		defer cons.Close()
		// stamp produces one record stamped two days back by the producer
		// and returns when it was sent and the timestamp a consumer reads.
		stamp := func() (time.Time, time.Time) {
			before := time.Now()
			r := &kgo.Record{Topic: d.topic, Partition: 0, Value: []byte("x"), Timestamp: before.Add(-48 * time.Hour)}
			if err := prod.ProduceSync(d.ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
			for d.ctx.Err() == nil {
				var got []*kgo.Record
				cons.PollFetches(d.ctx).EachRecord(func(r *kgo.Record) { got = append(got, r) })
				if len(got) == 1 {
					if got[0].Attrs.TimestampType() != 1 {
						t.Fatalf("timestamp type %d, want 1 (LogAppendTime)", got[0].Attrs.TimestampType())
					}
					return before, got[0].Timestamp
				}
				if len(got) > 1 {
					t.Fatalf("read %d records, want 1", len(got))
				}
			}
			t.Fatal(d.ctx.Err())
			return before, before
		}
		before, got := stamp()
		if got.Before(before.Add(-time.Second)) || got.After(time.Now().Add(time.Second)) {
			t.Fatalf("unskewed LogAppendTime %v, want about %v (not the producer's own %v)", got, before, before.Add(-48*time.Hour))
		}
		const skew = 90 * time.Minute
		d.c.NodeFaults(d.leader).Clock.SetSkew(skew)
		before, got = stamp()
		if shift := got.Sub(before); shift < skew-time.Second || shift > skew+time.Second {
			t.Fatalf("LogAppendTime %v with the leader skewed %v: shifted %v", got, skew, shift)
		}
	})
}
