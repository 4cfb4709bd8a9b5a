package cluster

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gregor/cluster/coordinator"
	"gregor/cluster/nodefault"
	"gregor/cluster/replica"
)

// LogDirFailureExitCode is the exit status of a broker whose log directory
// failed (Kafka's Exit.halt(1) in LogManager.handleLogDirFailure once no
// log directory is left online).
const LogDirFailureExitCode = 1

// Now is the broker's wall clock: the host's, skewed by the node's clock
// fault (cluster/nodefault). It stamps LogAppendTime, the coordinators'
// records and their timestamps (transaction.timeout.ms is judged by it),
// retention.ms and the followers' lag (replica.lag.time.max.ms: Kafka reads
// System.currentTimeMillis for all of these).
func (b *Broker) Now() time.Time { return b.cfg.NodeFaults.Clock.Now() }

// NodeFaults is the node's disk and clock.
func (b *Broker) NodeFaults() *nodefault.State { return b.cfg.NodeFaults }

// coordClock is the coordinators' clock: wall-clock readings skewed, timers
// not (Kafka's timer wheel runs on the monotonic clock).
func (b *Broker) coordClock() coordinator.Clock { return skewedClock{b.cfg.NodeFaults.Clock} }

type skewedClock struct{ c *nodefault.Clock }

func (s skewedClock) Now() time.Time { return s.c.Now() }
func (s skewedClock) AfterFunc(d time.Duration, f func()) coordinator.Timer {
	return coordinator.RealClock{}.AfterFunc(d, f)
}

// watchNodeFaults applies the node's control file (the process runtime's
// channel for disk and clock faults) until ctx ends.
func (b *Broker) watchNodeFaults(ctx context.Context) {
	nodefault.Watch(ctx, b.cfg.NodeFaults, b.cfg.DataDir, 50*time.Millisecond,
		func(f nodefault.Flip) { b.FlipBit(f) },
		func(err error) { b.log.Warn("reading node faults", "err", err) })
}

// FlipBit flips one bit at rest in a batch of a partition this broker
// holds (a client topic's: the internal topics are left alone), chosen by
// f.Pick, and records the event. The broker finds out only when it reads
// the batch (storage.Log.Read checks the CRC).
func (b *Broker) FlipBit(f nodefault.Flip) nodefault.Event {
	e := nodefault.Event{Time: time.Now().UnixNano(), ID: f.ID, Node: b.cfg.NodeID, Partition: -1}
	var ps []*replica.Partition
	for _, p := range b.snapshotPartitions() {
		if !strings.HasPrefix(p.Topic, "__") {
			ps = append(ps, p)
		}
	}
	sort.Slice(ps, func(i, j int) bool {
		return ps[i].Topic < ps[j].Topic || ps[i].Topic == ps[j].Topic && ps[i].Index < ps[j].Index
	})
	rng := rand.New(rand.NewPCG(f.Pick, 0x0f11b17))
	if len(ps) == 0 {
		e.Kind, e.Error = nodefault.EventFlipFailed, "no partition of a client topic on this node"
	} else {
		p := ps[rng.IntN(len(ps))]
		e.Topic, e.Partition = p.Topic, p.Index
		fl, err := p.Log().FlipBit(rng.Uint64())
		if err != nil {
			e.Kind, e.Error = nodefault.EventFlipFailed, err.Error()
		} else {
			e.Kind, e.Offset, e.Position, e.Bit = nodefault.EventFlip, fl.Offset, fl.Position, fl.Bit
		}
	}
	b.recordNodeEvent(e)
	return e
}

// logDirFailed takes the log directory offline. gregor keeps one log
// directory per broker, so that is Kafka's case of no log directory left
// online (LogManager.handleLogDirFailure: "Shutdown broker because all log
// dirs ... have failed", Exit.halt): the broker halts at once, nothing
// handed over; the controller fences it when its session expires and
// elects new leaders from the ISR (KIP-112, KIP-858). Its next start
// recovers the directory uncleanly (no clean-shutdown marker was written).
func (b *Broker) logDirFailed(err error) {
	b.dirFailed.Do(func() {
		b.log.Error("Shutdown broker because all log dirs have failed", "dir", b.cfg.DataDir, "err", err)
		b.recordNodeEvent(nodefault.Event{Time: time.Now().UnixNano(), Kind: nodefault.EventLogDirFailure,
			Node: b.cfg.NodeID, Partition: -1, Error: err.Error()})
		if b.cfg.Halt != nil {
			b.cfg.Halt()
			return
		}
		os.Exit(LogDirFailureExitCode)
	})
}

// recordNodeEvent appends e to the events file (process runtime) or the
// node's State (simulation).
func (b *Broker) recordNodeEvent(e nodefault.Event) {
	if !b.nodeFaultsFile {
		b.cfg.NodeFaults.Record(e)
		return
	}
	if err := nodefault.AppendEvent(filepath.Join(b.cfg.DataDir, nodefault.EventsName), e); err != nil {
		b.log.Warn("recording a node-fault event", "err", err)
	}
}
