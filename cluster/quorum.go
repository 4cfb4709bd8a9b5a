package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/acl"
	"gregor/cluster/controller"
	"gregor/cluster/kconn"
	"gregor/cluster/meta"
	"gregor/cluster/wire"
)

// Peer is one node of a multi-broker cluster: its raft (controller quorum)
// address and its Kafka listener.
type Peer struct {
	ID        int32
	RaftAddr  string
	KafkaAddr string
}

// ParsePeers reads "1@host:raftport,2@..." (KRaft's controller.quorum.voters
// form) and the matching Kafka listeners "1@host:kafkaport,...".
func ParsePeers(voters, kafka string) ([]Peer, error) {
	vs, err := parseIDAddrs(voters)
	if err != nil {
		return nil, fmt.Errorf("--voters: %w", err)
	}
	ks, err := parseIDAddrs(kafka)
	if err != nil {
		return nil, fmt.Errorf("--kafka-peers: %w", err)
	}
	if len(vs) != len(ks) {
		return nil, fmt.Errorf("--voters names %d nodes and --kafka-peers %d: give both for every node", len(vs), len(ks))
	}
	var out []Peer
	for id, ra := range vs {
		ka, ok := ks[id]
		if !ok {
			return nil, fmt.Errorf("node %d is in --voters but not in --kafka-peers", id)
		}
		out = append(out, Peer{ID: id, RaftAddr: ra, KafkaAddr: ka})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func parseIDAddrs(s string) (map[int32]string, error) {
	out := map[int32]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, addr, ok := strings.Cut(part, "@")
		n, err := strconv.Atoi(id)
		if !ok || err != nil || n < 0 {
			return nil, fmt.Errorf("%q: use id@host:port", part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("%q: %v", part, err)
		}
		out[int32(n)] = addr
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list: use id@host:port,...")
	}
	return out, nil
}

// quorum is a broker's link to the controller quorum it takes part in.
type quorum struct {
	b         *Broker
	ctrl      *controller.Controller
	transport *controller.KconnTransport
	client    *controller.Client
	// heartbeats is the lifecycle's own channel to the controller (Kafka's
	// BrokerLifecycleManager has a NodeToControllerChannelManager of its
	// own, "heartbeat", beside AlterPartitionManager's and forwarding's):
	// a connection serves one request at a time, and a heartbeat queued
	// behind a burst of ISR changes (a restart's hundred partitions
	// catching up) missed the session, fencing a live broker, whose
	// elections then made the next burst.
	heartbeats *controller.KconnTransport
	hbClient   *controller.Client
	life       *controller.Lifecycle
	cancelSub  func()

	mu    sync.Mutex
	image *meta.Image
	seen  uint64 // controller image version behind image
}

func (b *Broker) startQuorum(host string, port int32) (*quorum, error) {
	cfg := b.cfg
	var voters []controller.Voter
	addrs := map[int32]string{}
	var nodes []int32
	var self *Peer
	for i, p := range cfg.Peers {
		voters = append(voters, controller.Voter{ID: p.ID, RaftAddr: p.RaftAddr,
			NonVoter: len(cfg.Quorum) > 0 && !slices.Contains(cfg.Quorum, p.ID)})
		addrs[p.ID] = p.KafkaAddr
		nodes = append(nodes, p.ID)
		if p.ID == cfg.NodeID {
			self = &cfg.Peers[i]
		}
	}
	if self == nil {
		return nil, fmt.Errorf("node %d is not in --voters: every broker must be a voter (combined mode)", cfg.NodeID)
	}
	ln, err := b.net.Listen(self.RaftAddr)
	if err != nil {
		return nil, fmt.Errorf("raft listener %s: %w", self.RaftAddr, err)
	}
	rln, rdial, err := b.raftSecurity(ln)
	if err != nil {
		ln.Close()
		return nil, err
	}
	ctrl, err := controller.New(controller.Config{
		NodeID: cfg.NodeID, Voters: voters, DataDir: filepath.Join(cfg.DataDir, "controller"),
		Listener: rln, Dial: rdial, FS: cfg.FS, Snapshots: cfg.RaftSnapshots,
		HeartbeatTimeout: cfg.RaftTimeout, ElectionTimeout: cfg.RaftTimeout,
		SessionTimeout: cfg.SessionTimeout, ClusterID: cfg.ClusterID,
		UncleanElectionDefault: cfg.Unclean, DefaultPartitions: cfg.DefaultPartitions,
		DefaultReplicationFactor: cfg.DefaultRF,
		Bugs:                     controller.Bugs{ElectOutsideISR: cfg.ElectOutsideISR},
		LogOutput:                slogWriter{b.log},
	})
	if err != nil {
		return nil, err
	}
	q := &quorum{b: b, ctrl: ctrl, image: meta.Empty()}
	q.transport = &controller.KconnTransport{Addrs: addrs, Options: b.peerOptions(kconn.Options{
		Dial: b.net.Dial, ClientID: fmt.Sprintf("%s%d", wire.ForwardClientPrefix, cfg.NodeID), DialTimeout: 2 * time.Second})}
	q.client = &controller.Client{Transport: q.transport, Active: ctrl.ActiveController, Nodes: nodes}
	q.heartbeats = &controller.KconnTransport{Addrs: addrs, Options: q.transport.Options}
	q.hbClient = &controller.Client{Transport: q.heartbeats, Active: ctrl.ActiveController, Nodes: nodes}
	ch, cancel, err := ctrl.Subscribe()
	if err != nil {
		ctrl.Close()
		return nil, err
	}
	q.cancelSub = cancel
	if cfg.ControllerOnly {
		// A controller-only voter never registers as a broker: it is never
		// assigned replicas and clients never see it in Metadata.
		return q, q.follow(ch)
	}
	q.life = controller.StartLifecycle(controller.LifecycleConfig{
		BrokerID: cfg.NodeID, Host: host, Port: port, ClusterID: cfg.ClusterID,
		Client:            q.hbClient,
		HeartbeatInterval: cfg.HeartbeatInterval,
		// Half a session: an attempt stalled on a controller that a
		// partition cut off is abandoned in time for the next one to reach
		// the new controller before the session lapses (a stall lasts
		// until the deadline, and the default 5s exceeds short sessions).
		RequestTimeout: heartbeatTimeout(cfg.SessionTimeout, cfg.HeartbeatInterval),
		MetadataOffset: func() int64 { return int64(ctrl.Image().Version) },
	})
	return q, q.follow(ch)
}

// follow applies every published image to the broker's replicas.
func (q *quorum) follow(ch <-chan *controller.Image) error {
	b := q.b
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			select {
			case <-b.stop:
				return
			case im, ok := <-ch:
				if !ok {
					return
				}
				if err := b.apply(q.convert(im)); err != nil {
					b.log.Error("applying metadata", "version", im.Version, "err", err)
				}
			}
		}
	}()
	return nil
}

// slogWriter carries raft's log lines (hclog text) into the broker's log.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(b []byte) (int, error) {
	w.l.Warn("raft", "line", strings.TrimSpace(string(b)))
	return len(b), nil
}

// convert turns the controller's image into the broker's view, once per
// version. A published meta.Image is never modified: readers hold it
// without a lock.
//
// Why two images: controller.Image is the replicated state machine, what
// raft agrees on and snapshots; it holds what only the controller needs
// (a broker's ShuttingDown apart from Fenced, the count of topics ever
// created that rotates assignments) and nothing that is not in the log.
// meta.Image is what a broker serves and acts on: it adds what the log
// does not hold (the active controller, raft's leadership; a topic's
// Internal flag), folds Fenced and ShuttingDown into the one flag Metadata
// needs, and is also made without any controller by a single broker
// (localMeta), whose wire and replica layers must not depend on raft. The
// partition, the part both sides reason about, is one type (meta.Partition)
// and is shared, not copied: both images are immutable once published.
func (q *quorum) convert(im *controller.Image) *meta.Image {
	q.mu.Lock()
	defer q.mu.Unlock()
	if im.Version == q.seen && q.image != nil && q.image.Version == im.Version {
		if active := q.ctrl.ActiveController(); active != q.image.ControllerID {
			c := *q.image // only the controller moved: share the maps
			c.ControllerID = active
			q.image = &c
		}
		return q.image
	}
	out := &meta.Image{Version: im.Version, ControllerID: q.ctrl.ActiveController(),
		Brokers: make(map[int32]meta.Broker, len(im.Brokers)), Topics: make(map[string]*meta.Topic, len(im.Topics))}
	for id, b := range im.Brokers {
		out.Brokers[id] = meta.Broker{ID: b.ID, Host: b.Host, Port: b.Port, Fenced: !b.Live(), Epoch: b.Epoch}
	}
	for name, t := range im.Topics {
		out.Topics[name] = &meta.Topic{Name: name, ID: t.ID, Configs: t.Configs, Internal: meta.IsInternal(name),
			Partitions: t.Partitions}
	}
	// Shared, not copied: a published controller image is never modified.
	out.ClusterConfigs, out.BrokerConfigs, out.Scram, out.GroupConfigs = im.ClusterConfigs, im.BrokerConfigs, im.Scram, im.GroupConfigs
	out.ACLs = im.ACLs
	if q.b.cfg.KeepDeletedACLs && q.image != nil {
		out.ACLs = keepDeleted(q.image.ACLs, im.ACLs)
	}
	q.image, q.seen = out, im.Version
	return out
}

func (q *quorum) current() *meta.Image {
	q.mu.Lock()
	im := q.image
	q.mu.Unlock()
	if im.Version != q.ctrl.Image().Version || im.ControllerID != q.ctrl.ActiveController() {
		return q.convert(q.ctrl.Image())
	}
	return im
}

// registeredIn reports whether im holds this broker's current registration,
// unfenced. Until it does, a restarted broker must not act on partition
// states it finds in the replicated log: they predate its restart, and
// leading with a log that lost its unsynced tail (a power cut) would make
// followers truncate acknowledged records to match it. The registration
// record itself moves leadership away from the restarted broker, so any
// leadership published after it was assigned to this incarnation.
func (q *quorum) registeredIn(im *meta.Image) bool {
	if q.life == nil {
		return false // controller-only: never a replica
	}
	epoch := q.life.Epoch()
	b, ok := im.Brokers[q.b.cfg.NodeID]
	return epoch >= 0 && ok && b.Epoch == epoch && !b.Fenced
}

// alterISR asks the active controller for an ISR change on behalf of a
// partition leader; on refusal the partition may ask again later.
func (q *quorum) alterISR(ctx context.Context, p meta.Partition, newISR []int32) {
	if q.life == nil {
		return
	}
	_, err := q.client.AlterISR(ctx, q.b.cfg.NodeID, q.life.Epoch(), controller.ISRChange{
		Topic: p.Topic, Partition: p.Index, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: newISR})
	if err != nil {
		q.b.log.Info("isr change refused", "topic", p.Topic, "partition", p.Index, "isr", newISR, "err", err)
		if rp := q.b.Partition(p.Topic, p.Index); rp != nil {
			rp.ClearPendingISR(p)
		}
	}
}

// createTopic forwards to the active controller and waits until this broker
// has applied the topic, so a Metadata right after sees it.
func (q *quorum) createTopic(ctx context.Context, spec wire.TopicSpec) (*meta.Topic, *kerr.Error, string) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(5) // within what our wire front serves (2-7)
	req.TimeoutMillis = 10_000
	req.ValidateOnly = spec.ValidateOnly
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = spec.Name, spec.Partitions, spec.RF
	for k, v := range spec.Configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name = k
		val := v
		c.Value = &val
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	kresp, err := q.client.Request(ctx, req)
	if err != nil {
		return nil, kerr.RequestTimedOut, err.Error()
	}
	resp := kresp.(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 {
		return nil, kerr.UnknownServerError, "malformed controller response"
	}
	r := resp.Topics[0]
	if e := kerr.ErrorForCode(r.ErrorCode); e != nil {
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		return nil, e.(*kerr.Error), msg
	}
	if spec.ValidateOnly {
		return &meta.Topic{Name: spec.Name, Partitions: make([]meta.Partition, r.NumPartitions)}, nil, ""
	}
	for {
		if t := q.current().Topics[spec.Name]; t != nil {
			return t, nil, ""
		}
		select {
		case <-ctx.Done():
			return nil, kerr.RequestTimedOut, "topic created but not yet visible on this broker"
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (q *quorum) deleteTopic(ctx context.Context, name string) (*kerr.Error, string) {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(5) // by name (v6 moved to Topics by name or id)
	req.TimeoutMillis = 10_000
	req.TopicNames = append(req.TopicNames, name)
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	kresp, err := q.client.Request(ctx, req)
	if err != nil {
		return kerr.RequestTimedOut, err.Error()
	}
	resp := kresp.(*kmsg.DeleteTopicsResponse)
	if len(resp.Topics) != 1 {
		return kerr.UnknownServerError, "malformed controller response"
	}
	if e := kerr.ErrorForCode(resp.Topics[0].ErrorCode); e != nil {
		return e.(*kerr.Error), ""
	}
	return nil, ""
}

// shutdown leaves the cluster: controlled (leadership moved away, ISRs
// left, bounded) or not, then stops the controller.
func (q *quorum) shutdown(controlled bool, bound time.Duration) {
	if q.life != nil {
		if controlled {
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			if err := q.life.ControlledShutdown(ctx); err != nil {
				q.b.log.Warn("controlled shutdown", "err", err)
			}
			cancel()
		}
		q.life.Stop()
	}
	q.cancelSub()
	q.transport.Close()
	q.heartbeats.Close()
	if err := q.ctrl.Close(); err != nil {
		q.b.log.Warn("closing controller", "err", err)
	}
}

// heartbeatTimeout bounds one registration or heartbeat: half the session,
// at least one heartbeat interval, at most 5s, so a stalled attempt leaves
// room in the session for another (the interval is below the session: see
// Config.validate).
func heartbeatTimeout(session, interval time.Duration) time.Duration {
	if session <= 0 {
		return 0 // the lifecycle's default
	}
	return min(max(session/2, interval), 5*time.Second)
}

// keepDeleted is the planted bug BugKeepDeletedACLs: the cache's bindings
// that the log no longer holds stay, in front of the log's.
func keepDeleted(cached, current []acl.Binding) []acl.Binding {
	out := slices.Clone(current)
	for _, b := range cached {
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}
