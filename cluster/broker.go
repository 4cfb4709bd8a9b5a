package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/faultnet"
	"gregor/cluster/meta"
	"gregor/cluster/replica"
	"gregor/cluster/storage"
	"gregor/cluster/wire"
)

type tp struct {
	topic string
	index int32
}

// Broker is one running broker.
type Broker struct {
	cfg  Config
	log  *slog.Logger
	rcfg replica.Config

	ln     net.Listener
	server *wire.Server
	// net is the fault layer every connection of this broker goes through
	// (inert unless the process runtime writes <data>/netfaults.json).
	net *faultnet.Layer
	meta   *localMeta
	pids   *producerIDs

	mu         sync.RWMutex
	partitions map[tp]*replica.Partition

	stop      chan struct{}
	stopWatch context.CancelFunc
	wg        sync.WaitGroup
}

// Start opens the data directory, recovers every partition and starts
// serving. The broker runs until Close.
func Start(cfg Config) (*Broker, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	b := &Broker{cfg: cfg, log: cfg.Logger.With("node", cfg.NodeID), partitions: map[tp]*replica.Partition{}, stop: make(chan struct{})}
	b.rcfg = replica.Config{NodeID: cfg.NodeID, ReplicaLagMax: cfg.ReplicaLagMax, Bugs: cfg.Bugs, Logger: b.log}
	b.cfg.Storage.Logger = b.log

	host, portStr, err := net.SplitHostPort(cfg.Advertise)
	if err != nil {
		return nil, fmt.Errorf("advertised address %q: %w (give host:port)", cfg.Advertise, err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	if portStr == "0" { // an ephemeral port: advertise the one we got
		_, portStr, _ = net.SplitHostPort(ln.Addr().String())
		b.cfg.Advertise = net.JoinHostPort(host, portStr)
	}
	port, _ := strconv.Atoi(portStr)
	b.ln = ln

	if b.pids, err = openProducerIDs(cfg.DataDir, cfg.NodeID); err != nil {
		ln.Close()
		return nil, err
	}
	if b.meta, err = openLocalMeta(&b.cfg, host, int32(port)); err != nil {
		ln.Close()
		return nil, err
	}
	if err := b.apply(b.meta.image()); err != nil {
		ln.Close()
		b.closePartitions()
		return nil, err
	}
	b.server = wire.NewServer(b, wire.Options{MaxRequestBytes: cfg.MaxRequestBytes, Logger: b.log})
	b.net = faultnet.New(host)
	watchCtx, stopWatch := context.WithCancel(context.Background())
	b.stopWatch = stopWatch
	b.wg.Add(3)
	go func() {
		defer b.wg.Done()
		b.net.Watch(watchCtx, filepath.Join(cfg.DataDir, faultnet.FileName), 50*time.Millisecond, func(err error) {
			b.log.Warn("reading network faults", "err", err)
		})
	}()
	go func() {
		defer b.wg.Done()
		if err := b.server.Serve(b.net.Listener(ln)); err != nil {
			b.log.Error("serve", "err", err)
		}
	}()
	go func() {
		defer b.wg.Done()
		b.housekeeping()
	}()
	b.log.Info("broker started", "listen", ln.Addr().String(), "advertise", b.cfg.Advertise, "data", cfg.DataDir)
	return b, nil
}

// Addr is the address the broker listens on.
func (b *Broker) Addr() string { return b.ln.Addr().String() }

// Advertised is the address clients are told to use.
func (b *Broker) Advertised() string { return b.cfg.Advertise }

// Close stops serving and closes every partition cleanly (a controlled
// shutdown: logs are synced and marked clean).
func (b *Broker) Close() error {
	select {
	case <-b.stop:
		return nil
	default:
	}
	close(b.stop)
	b.stopWatch()
	b.server.Close()
	b.wg.Wait()
	return b.closePartitions()
}

func (b *Broker) closePartitions() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	for k, p := range b.partitions {
		if err := p.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s/%d: %w", k.topic, k.index, err))
		}
		delete(b.partitions, k)
	}
	return errors.Join(errs...)
}

// housekeeping runs the periodic duties: HW checkpoints, retention, ISR
// shrink checks. Every duty is bounded by the partition count.
func (b *Broker) housekeeping() {
	hw := time.NewTicker(b.cfg.HWCheckpointEvery)
	defer hw.Stop()
	ret := time.NewTicker(b.cfg.RetentionCheckEvery)
	defer ret.Stop()
	isr := time.NewTicker(max(b.cfg.ReplicaLagMax/4, 10*time.Millisecond))
	defer isr.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-hw.C:
			for _, p := range b.snapshotPartitions() {
				if err := p.CheckpointHW(); err != nil {
					b.log.Warn("hw checkpoint", "topic", p.Topic, "partition", p.Index, "err", err)
				}
			}
		case <-ret.C:
			for _, p := range b.snapshotPartitions() {
				if _, err := p.Log().EnforceRetention(time.Now()); err != nil {
					b.log.Warn("retention", "topic", p.Topic, "partition", p.Index, "err", err)
				}
			}
		case <-isr.C:
			for _, p := range b.snapshotPartitions() {
				p.MaybeShrinkISR()
			}
		}
	}
}

func (b *Broker) snapshotPartitions() []*replica.Partition {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]*replica.Partition, 0, len(b.partitions))
	for _, p := range b.partitions {
		out = append(out, p)
	}
	return out
}

func partitionDir(dataDir, topic string, index int32) string {
	return filepath.Join(dataDir, fmt.Sprintf("%s-%d", topic, index))
}

// apply brings local replicas in line with a metadata image: opens replicas
// this broker is assigned, passes each its published state, and closes and
// removes replicas of deleted topics.
func (b *Broker) apply(im *meta.Image) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	want := map[tp]bool{}
	for _, t := range im.Topics {
		minISR := b.cfg.MinISR
		if v, ok := t.Configs[meta.ConfigMinISR]; ok {
			if n, err := strconv.Atoi(v); err == nil {
				minISR = n
			}
		}
		for _, ps := range t.Partitions {
			if !meta.Contains(ps.Replicas, b.cfg.NodeID) {
				continue
			}
			k := tp{t.Name, ps.Index}
			want[k] = true
			p := b.partitions[k]
			if p == nil {
				opts := b.cfg.Storage
				if v, ok := t.Configs[meta.ConfigRetentionMs]; ok {
					if n, err := strconv.ParseInt(v, 10, 64); err == nil {
						opts.RetentionMs = n
					}
				}
				if v, ok := t.Configs[meta.ConfigRetentionSize]; ok {
					if n, err := strconv.ParseInt(v, 10, 64); err == nil {
						opts.RetentionBytes = n
					}
				}
				if v, ok := t.Configs[meta.ConfigSegmentBytes]; ok {
					if n, err := strconv.ParseInt(v, 10, 64); err == nil {
						opts.SegmentBytes = n
					}
				}
				l, err := storage.Open(partitionDir(b.cfg.DataDir, t.Name, ps.Index), opts)
				if err != nil {
					return fmt.Errorf("opening %s/%d: %w", t.Name, ps.Index, err)
				}
				if p, err = replica.Open(&b.rcfg, t.Name, ps.Index, l); err != nil {
					l.Close()
					return fmt.Errorf("opening %s/%d: %w", t.Name, ps.Index, err)
				}
				b.partitions[k] = p
			}
			p.Update(ps, minISR)
		}
	}
	for k, p := range b.partitions {
		if want[k] {
			continue
		}
		p.Close()
		delete(b.partitions, k)
		if err := os.RemoveAll(partitionDir(b.cfg.DataDir, k.topic, k.index)); err != nil {
			b.log.Warn("removing deleted partition", "topic", k.topic, "partition", k.index, "err", err)
		}
	}
	return nil
}

// --- wire.Backend ---

// NodeID implements wire.Backend.
func (b *Broker) NodeID() int32 { return b.cfg.NodeID }

// ClusterID implements wire.Backend.
func (b *Broker) ClusterID() string { return b.cfg.ClusterID }

// Image implements wire.Backend.
func (b *Broker) Image() *meta.Image { return b.meta.image() }

// Partition implements wire.Backend.
func (b *Broker) Partition(topic string, index int32) *replica.Partition {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.partitions[tp{topic, index}]
}

// AutoCreateTopics implements wire.Backend.
func (b *Broker) AutoCreateTopics() bool { return b.cfg.AutoCreateTopics }

// CreateTopic implements wire.Backend.
func (b *Broker) CreateTopic(ctx context.Context, spec wire.TopicSpec) (*meta.Topic, *kerr.Error, string) {
	if spec.RF == -1 {
		spec.RF = b.cfg.DefaultRF
	}
	t, e, msg := b.meta.create(spec)
	if e != nil || spec.ValidateOnly {
		return t, e, msg
	}
	if err := b.apply(b.meta.image()); err != nil {
		b.log.Error("applying metadata", "err", err)
		return nil, kerr.KafkaStorageError, err.Error()
	}
	return t, nil, ""
}

// DeleteTopic implements wire.Backend.
func (b *Broker) DeleteTopic(ctx context.Context, name string) (*kerr.Error, string) {
	if e, msg := b.meta.delete(name); e != nil {
		return e, msg
	}
	if err := b.apply(b.meta.image()); err != nil {
		return kerr.KafkaStorageError, err.Error()
	}
	return nil, ""
}

// NewProducerID implements wire.Backend.
func (b *Broker) NewProducerID(ctx context.Context) (int64, int16, *kerr.Error) {
	id, err := b.pids.allocate()
	if err != nil {
		b.log.Error("allocating producer id", "err", err)
		return -1, -1, kerr.KafkaStorageError
	}
	return id, 0, nil
}
