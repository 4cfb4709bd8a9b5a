package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/faultnet"
	"gregor/cluster/faultpoint"
	"gregor/cluster/meta"
	"gregor/cluster/nodefault"
	"gregor/cluster/replica"
	"gregor/cluster/storage"
	"gregor/cluster/txn"
	"gregor/cluster/wire"
	"gregor/internal/fsys"
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
	net  *faultnet.Layer
	meta *localMeta // single-broker metadata; nil in a cluster
	q    *quorum    // controller quorum link; nil for a single broker
	pids *producerIDs

	// groups coordinates consumer groups (groups.go); it stops with b.stop.
	groups *groupCoordinator
	// txns coordinates transactions (txns.go); it stops with b.stop, and
	// with it the connections its markers and leaders' verifications use.
	txns        *txn.Coordinator
	markerConns *peerConns
	// shares runs KIP-932's share roles (shares.go); they stop with b.stop.
	shares      *shareRoles
	verifyConns *peerConns

	mu         sync.RWMutex
	partitions map[tp]*replica.Partition
	// fetchers replicate the partitions this broker follows, one per
	// partition, for the (leader, epoch) the metadata names.
	fetchers map[tp]*fetcher

	// isrEligible is the set of brokers the last applied image has
	// registered and unfenced (replica.Config.IsrEligible reads it under a
	// partition's lock, so it is an atomic, not under mu).
	isrEligible atomic.Pointer[map[int32]bool]

	stats       replica.Stats
	cutPower    bool // set by powerCut before shutdown: partitions crash
	metricsAddr string

	// nodeFaultsFile: the node's disk and clock faults come from its
	// control file, and its events go to the file beside it.
	nodeFaultsFile bool
	dirFailed      sync.Once

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
	cfg.FS = fsys.Or(cfg.FS)
	watchNodeFaults := cfg.NodeFaults == nil
	if watchNodeFaults {
		cfg.NodeFaults = nodefault.New(cfg.FS, storage.IsSegmentFile)
	}
	cfg.FS = cfg.NodeFaults.Disk
	cfg.Storage.FS = cfg.FS
	if err := cfg.FS.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	b := &Broker{cfg: cfg, log: cfg.Logger.With("node", cfg.NodeID), partitions: map[tp]*replica.Partition{},
		fetchers: map[tp]*fetcher{}, stop: make(chan struct{})}
	b.rcfg = replica.Config{NodeID: cfg.NodeID, ReplicaLagMax: cfg.ReplicaLagMax, Bugs: cfg.Bugs, Logger: b.log, Stats: &b.stats,
		Now: cfg.NodeFaults.Clock.Now, LogDirFailure: b.logDirFailed}
	if len(cfg.Peers) > 0 {
		b.rcfg.IsrEligible = func(id int32) bool {
			m := b.isrEligible.Load()
			return m != nil && (*m)[id]
		}
		b.rcfg.AlterISR = func(ctx context.Context, p meta.Partition, newISR []int32) {
			// The request ends with the broker: nothing of a stopped
			// broker keeps running (the simulation's kill relies on it).
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			go func() {
				select {
				case <-b.stop:
					cancel()
				case <-ctx.Done():
				}
			}()
			b.mu.RLock()
			q := b.q
			b.mu.RUnlock()
			if q == nil {
				if rp := b.Partition(p.Topic, p.Index); rp != nil {
					rp.ClearPendingISR(p)
				}
				return
			}
			q.alterISR(ctx, p, newISR)
		}
	}
	b.cfg.Storage.Logger = b.log

	host, portStr, err := net.SplitHostPort(cfg.Advertise)
	if err != nil {
		return nil, fmt.Errorf("advertised address %q: %w (give host:port)", cfg.Advertise, err)
	}
	if err := b.cfg.Security.prepare(host, cfg.DataDir); err != nil {
		return nil, err
	}
	b.net = cfg.Net
	if b.net == nil {
		b.net = faultnet.New(host)
	}
	ln, err := b.net.Network().Listen(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	if portStr == "0" { // an ephemeral port: advertise the one we got
		_, portStr, _ = net.SplitHostPort(ln.Addr().String())
		b.cfg.Advertise = net.JoinHostPort(host, portStr)
	}
	port, _ := strconv.Atoi(portStr)
	b.ln = ln

	if b.pids, err = openProducerIDs(cfg.FS, cfg.DataDir, cfg.NodeID); err != nil {
		ln.Close()
		return nil, err
	}
	if len(cfg.Peers) == 0 {
		if b.meta, err = openLocalMeta(&b.cfg, host, int32(port)); err != nil {
			ln.Close()
			return nil, err
		}
		if err := b.apply(b.meta.image()); err != nil {
			ln.Close()
			b.closePartitions()
			return nil, err
		}
	}
	wopts := wire.Options{MaxRequestBytes: cfg.MaxRequestBytes, Logger: b.log, ConsumerProtocol: cfg.Groups.ConsumerProtocol}
	if err := b.wireOptions(&wopts); err != nil {
		ln.Close()
		b.closePartitions()
		return nil, err
	}
	b.server = wire.NewServer(b, wopts)
	b.groups = b.startGroups()
	b.txns = b.startTxns()
	b.shares = b.startShares()
	watchCtx, stopWatch := context.WithCancel(context.Background())
	b.stopWatch = stopWatch
	if cfg.Net == nil {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.net.Watch(watchCtx, filepath.Join(cfg.DataDir, faultnet.FileName), 50*time.Millisecond, func(err error) {
				b.log.Warn("reading network faults", "err", err)
			})
		}()
		b.wg.Add(1)
		go func() { defer b.wg.Done(); b.watchFaultPoints(watchCtx) }()
	}
	if watchNodeFaults {
		b.nodeFaultsFile = true
		b.wg.Add(1)
		go func() { defer b.wg.Done(); b.watchNodeFaults(watchCtx) }()
	}
	b.wg.Add(2)
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
	if cfg.MetricsListen != "" {
		if err := b.serveMetrics(cfg.MetricsListen); err != nil {
			b.crash()
			return nil, err
		}
	}
	if len(cfg.Peers) > 0 {
		// The Kafka listener serves before registration: the active
		// controller may be this very node, reached through it.
		q, err := b.startQuorum(host, int32(port))
		if err != nil {
			b.crash()
			return nil, err
		}
		b.mu.Lock()
		b.q = q
		b.mu.Unlock()
		// An image may have arrived before b.q was set.
		if err := b.apply(q.current()); err != nil {
			b.log.Error("applying metadata", "err", err)
		}
	}
	b.log.Info("broker started", "listen", ln.Addr().String(), "advertise", b.cfg.Advertise, "data", cfg.DataDir, "peers", len(cfg.Peers))
	return b, nil
}

// Addr is the address the broker listens on.
func (b *Broker) Addr() string { return b.ln.Addr().String() }

// Advertised is the address clients are told to use.
func (b *Broker) Advertised() string { return b.cfg.Advertise }

// Close is a controlled shutdown (SIGTERM): leadership moves away and the
// broker leaves every ISR at once, then it stops serving and closes every
// partition cleanly (logs synced and marked clean).
func (b *Broker) Close() error { return b.shutdown(true) }

// crash stops the broker without a controlled shutdown, as a SIGKILL would
// end its protocol conversations (its files are closed normally; in-process
// tests use it where a real kill would need a child process).
func (b *Broker) crash() error { return b.shutdown(false) }

// powerCut is crash plus the loss of every write not yet durable (lazyfs):
// what SIGKILL of a --lazyfs broker does, for in-process tests.
func (b *Broker) powerCut() error {
	b.cutPower = true
	return b.shutdown(false)
}

// Crash is crash for runtimes that hold brokers in their own process (the
// simulation's kill): every goroutine of the broker ends, nothing is handed
// over.
func (b *Broker) Crash() error { return b.crash() }

// PowerCut is powerCut for runtimes that hold brokers in their own process
// (the simulation's kill of a --lazyfs node): a crash that loses every write
// not yet durable.
func (b *Broker) PowerCut() error { return b.powerCut() }

func (b *Broker) shutdown(controlled bool) error {
	select {
	case <-b.stop:
		return nil
	default:
	}
	if !controlled {
		// A crash stops at once, before taking any lock: a goroutine that a
		// fault point's crash stalled (the simulation's, which waits on
		// Stopping) may hold b.mu.
		close(b.stop)
	}
	b.mu.RLock()
	q := b.q
	b.mu.RUnlock()
	if q != nil && controlled {
		q.shutdown(true, b.cfg.ShutdownTimeout)
	}
	if controlled {
		close(b.stop)
	}
	if q != nil && !controlled {
		q.shutdown(false, 0)
	}
	b.stopWatch()
	b.stopFetchers()
	b.server.Close()
	b.wg.Wait()
	return b.closePartitions()
}

func (b *Broker) stopFetchers() {
	b.mu.Lock()
	fs := b.fetchers
	b.fetchers = map[tp]*fetcher{}
	b.mu.Unlock()
	for _, f := range fs {
		f.stop()
	}
}

func (b *Broker) closePartitions() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	for k, p := range b.partitions {
		if b.cutPower {
			p.Crash()
			delete(b.partitions, k)
			continue
		}
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
				if _, err := p.Log().EnforceRetention(b.Now()); err != nil {
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
	// Until this incarnation is registered and unfenced, it takes no
	// leadership from metadata (see quorum.registeredIn); demotions and
	// follower roles apply at once.
	mayLead := len(b.cfg.Peers) == 0 || (b.q != nil && b.q.registeredIn(im))
	eligible := make(map[int32]bool, len(im.Brokers))
	for id, br := range im.Brokers {
		eligible[id] = !br.Fenced
	}
	b.isrEligible.Store(&eligible)
	want := map[tp]bool{}
	static := b.BrokerDefaults()
	for _, t := range im.Topics {
		// Resolved on every image: min.insync.replicas changes at runtime
		// (AlterConfigs) reach the partitions with the next image.
		layers := im.Layers(t, b.cfg.NodeID, static)
		minISR := int(layers.Int(meta.ConfigMinISR))
		for _, ps := range t.Partitions {
			if !meta.Contains(ps.Replicas, b.cfg.NodeID) {
				continue
			}
			k := tp{t.Name, ps.Index}
			want[k] = true
			p := b.partitions[k]
			if p == nil {
				// Log options are read when the replica opens (a change of
				// retention or segment size applies from the next start).
				opts := b.cfg.Storage
				opts.RetentionMs = layers.Int(meta.ConfigRetentionMs)
				opts.RetentionBytes = layers.Int(meta.ConfigRetentionSize)
				opts.SegmentBytes = layers.Int(meta.ConfigSegmentBytes)
				at := faultpoint.Attrs{Node: b.cfg.NodeID, Topic: t.Name, Partition: ps.Index}
				opts.Rolled = func(int64) { faultpoint.Hit(faultpoint.SegmentRolled, at) }
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
			if ps.Leader == b.cfg.NodeID && !mayLead {
				continue
			}
			p.Update(ps, minISR)
			b.syncFetcher(k, p, ps)
		}
	}
	for k, p := range b.partitions {
		if want[k] {
			continue
		}
		if f := b.fetchers[k]; f != nil {
			go f.stop()
			delete(b.fetchers, k)
		}
		p.Close()
		delete(b.partitions, k)
		if err := b.cfg.FS.RemoveAll(partitionDir(b.cfg.DataDir, k.topic, k.index)); err != nil {
			b.log.Warn("removing deleted partition", "topic", k.topic, "partition", k.index, "err", err)
		}
	}
	return nil
}

// syncFetcher runs a fetcher for a partition this broker follows, for the
// published leader and epoch, and stops any other. Caller holds mu.
func (b *Broker) syncFetcher(k tp, p *replica.Partition, ps meta.Partition) {
	f := b.fetchers[k]
	follow := ps.Leader != meta.NoLeader && ps.Leader != b.cfg.NodeID && len(b.cfg.Peers) > 0
	if f != nil && (!follow || f.leader != ps.Leader || f.epoch != ps.LeaderEpoch) {
		// Stopping waits for an in-flight request (bounded); do it off the
		// metadata path.
		go f.stop()
		delete(b.fetchers, k)
		f = nil
	}
	if follow && f == nil {
		select {
		case <-b.stop:
			return
		default:
		}
		b.fetchers[k] = b.startFetcher(p, ps.Leader, ps.LeaderEpoch)
	}
}

// --- wire.Backend ---

// NodeID implements wire.Backend.
func (b *Broker) NodeID() int32 { return b.cfg.NodeID }

// ClusterID implements wire.Backend.
func (b *Broker) ClusterID() string { return b.cfg.ClusterID }

// Image implements wire.Backend.
func (b *Broker) Image() *meta.Image {
	b.mu.RLock()
	q := b.q
	b.mu.RUnlock()
	if q != nil {
		return q.current()
	}
	if b.meta == nil {
		return meta.Empty()
	}
	return b.meta.image()
}

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
	if b.q != nil {
		return b.q.createTopic(ctx, spec)
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
	if b.q != nil {
		return b.q.deleteTopic(ctx, name)
	}
	if e, msg := b.meta.delete(name); e != nil {
		return e, msg
	}
	if err := b.apply(b.meta.image()); err != nil {
		return kerr.KafkaStorageError, err.Error()
	}
	return nil, ""
}

// ReadOnlyBrokerConfigs implements wire.Backend. replica.lag.time.max.ms is
// what a client needs to reason about ISR shrinks (gregor's min-ISR check
// reads it back from a cluster it attaches to); Kafka's default is 30 s
// (ReplicationConfigs.REPLICA_LAG_TIME_MAX_MS_DEFAULT).
func (b *Broker) ReadOnlyBrokerConfigs() map[string]wire.ReadOnlyConfig {
	return map[string]wire.ReadOnlyConfig{
		"replica.lag.time.max.ms": {Value: strconv.FormatInt(b.cfg.ReplicaLagMax.Milliseconds(), 10), KafkaDefault: "30000"},
	}
}

// BrokerDefaults implements wire.Backend: this broker's static configs (its
// command line), by Kafka's broker config names.
func (b *Broker) BrokerDefaults() map[string]string {
	unlimited := func(n int64) string {
		if n <= 0 { // storage.Options: 0 or below is unlimited
			return "-1"
		}
		return strconv.FormatInt(n, 10)
	}
	segment := b.cfg.Storage.SegmentBytes
	if segment <= 0 {
		segment = storage.DefaultSegmentBytes
	}
	return map[string]string{
		meta.ConfigMinISR:     strconv.Itoa(b.cfg.MinISR),
		meta.ConfigUnclean:    strconv.FormatBool(b.cfg.Unclean),
		"log.retention.ms":    unlimited(b.cfg.Storage.RetentionMs),
		"log.retention.bytes": unlimited(b.cfg.Storage.RetentionBytes),
		"log.segment.bytes":   strconv.FormatInt(segment, 10),
	}
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

// Controller implements wire.Backend: controller RPCs (and topic requests
// forwarded by other brokers) go to this node's controller, which answers
// NOT_CONTROLLER unless it is the active one.
func (b *Broker) Controller(ctx context.Context, req kmsg.Request) (kmsg.Response, bool) {
	b.mu.RLock()
	q := b.q
	b.mu.RUnlock()
	if q == nil {
		return nil, false
	}
	resp, err := q.ctrl.Handle(ctx, req)
	if err != nil {
		b.log.Warn("controller request", "key", req.Key(), "err", err)
		return nil, false
	}
	return resp, true
}
