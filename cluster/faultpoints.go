package cluster

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"gregor/cluster/faultpoint"
)

// CrashExitCode is the exit status of a broker that a fault point crashed.
const CrashExitCode = 86

// watchFaultPoints arms the fault points the harness names in the node's
// control file (cluster/faultpoint), with this broker's crash and cut.
func (b *Broker) watchFaultPoints(ctx context.Context) {
	faultpoint.Watch(ctx, b.cfg.NodeID, b.cfg.DataDir, faultpoint.Handlers{Crash: b.faultCrash, Cut: b.faultCut},
		50*time.Millisecond, func(err error) { b.log.Warn("reading fault points", "err", err) })
}

// faultCrash is a fault point's crash: the process exits at once, nothing
// handed over; the OS keeps what was written (with --lazyfs the unsynced
// writes live in this process and go with it: a power cut).
func (b *Broker) faultCrash() {
	b.log.Warn("fault point: crashing", "file", filepath.Join(b.cfg.DataDir, faultpoint.FiringsName))
	os.Exit(CrashExitCode)
}

// faultCut drops this node's links to every peer for d, then puts the rules
// back unless the harness changed them meanwhile.
func (b *Broker) faultCut(d time.Duration) {
	lift := b.cutPeers()
	time.Sleep(d)
	lift()
}

// cutPeers drops every link to the peers and returns what puts the rules
// back, unless the harness changed them meanwhile.
func (b *Broker) cutPeers() (lift func()) {
	before := b.net.Rules()
	cut := before
	cut.Drop = slices.Clone(before.Drop)
	self, _, _ := net.SplitHostPort(b.cfg.Advertise)
	for _, p := range b.cfg.Peers {
		for _, addr := range []string{p.RaftAddr, p.KafkaAddr} {
			if h, _, err := net.SplitHostPort(addr); err == nil && h != self && !slices.Contains(cut.Drop, h) {
				cut.Drop = append(cut.Drop, h)
			}
		}
	}
	b.net.Set(cut)
	return func() {
		if now := b.net.Rules(); slices.Equal(now.Drop, cut.Drop) && now.DelayMs == cut.DelayMs && now.LossPct == cut.LossPct {
			b.net.Set(before)
		}
	}
}

// Stopping is closed once the broker begins to stop (a crash, a kill or a
// controlled shutdown): a runtime holding brokers in its own process (the
// simulation) waits on it where a fault point's crash would have exited.
func (b *Broker) Stopping() <-chan struct{} { return b.stop }

// FaultCutAsync is the cut action of this broker's fault points for a
// runtime that installs the handlers itself (the simulation, which has no
// control file): every link to its peers dropped now, lifted after d on a
// goroutine of its own, so the hitting goroutine does not block.
func (b *Broker) FaultCutAsync(d time.Duration) {
	lift := b.cutPeers()
	go func() {
		time.Sleep(d)
		lift()
	}()
}
