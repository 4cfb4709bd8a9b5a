package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"gregor/cluster/faultpoint"
	"gregor/cluster/invariant"
)

// Controller is one node of the controller quorum: a raft voter whose FSM
// holds the metadata image, and, while it is the raft leader, the active
// controller that answers broker RPCs and fences expired sessions.
type Controller struct {
	cfg   Config
	log   hclog.Logger
	fsm   *fsm
	store *fileStore
	trans *raft.NetworkTransport
	raft  *raft.Raft

	// mu guards the controller-local state below. None of it is
	// replicated: a new active controller starts it afresh.
	mu sync.Mutex
	// active: this node is raft leader and has applied everything
	// committed before its term (barrier), so its image is current.
	active bool
	// settled is closed once a leadership change of this node has played
	// out (active, or the barrier failed); awaitActive waits on it.
	settled chan struct{}
	// lastSeen: last heartbeat (or registration, or takeover) per broker.
	lastSeen map[int32]time.Time

	notify    chan bool
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// New starts a controller node: opens its stores, bootstraps the static
// voter set if there is no raft state yet, and joins the quorum.
func New(cfg Config) (*Controller, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Controller{cfg: cfg, log: cfg.Logger, lastSeen: map[int32]time.Time{},
		settled: make(chan struct{}), notify: make(chan bool, 1), stop: make(chan struct{})}
	close(c.settled)
	c.fsm = newFSM(cfg.StrictInvariants || invariant.On(), cfg.Logger)
	if err := c.open(); err != nil {
		c.closeStores()
		return nil, err
	}
	c.wg.Add(2)
	go c.leadershipLoop()
	go c.sessionLoop()
	return c, nil
}

func (c *Controller) open() error {
	var err error
	if c.store, err = openFileStore(c.cfg.FS, filepath.Join(c.cfg.DataDir, "raft")); err != nil {
		return err
	}
	snaps := c.cfg.Snapshots
	if snaps == nil {
		if snaps, err = raft.NewFileSnapshotStoreWithLogger(c.cfg.DataDir, 2, c.log); err != nil {
			return err
		}
	}
	ln := c.cfg.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", c.cfg.raftAddr(c.cfg.NodeID)); err != nil {
			return err
		}
	}
	// Until the transport owns the listener, a failure must close it.
	defer func() {
		if c.trans == nil {
			ln.Close()
		}
	}()
	dial := c.cfg.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	// MaxRPCsInFlight 1: no pipelined replication. hashicorp/raft's
	// pipeline can wedge when a follower's answer fails (a stalled link's
	// read deadline): pipelineDecode returns, leaving decodeResponses
	// parked on doneCh while pipelineReplicate parks its next send on
	// inprogressCh, and the pipeline's Close is deferred behind it; no
	// more entries reach that follower and Shutdown waits forever (a
	// controller test hung 14 minutes in CI under a stall partition;
	// hashicorp/raft#612, grafana/pyroscope#5518). Synchronous
	// AppendEntries are bounded by Timeout; the quorum's traffic is light.
	c.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: &streamLayer{Listener: ln, dial: dial}, MaxPool: 3, MaxRPCsInFlight: 1,
		Timeout: c.cfg.RaftIOTimeout, Logger: c.log})

	rc := raft.DefaultConfig()
	rc.LocalID = serverID(c.cfg.NodeID)
	rc.HeartbeatTimeout = c.cfg.HeartbeatTimeout
	rc.ElectionTimeout = c.cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = c.cfg.LeaderLeaseTimeout
	rc.CommitTimeout = c.cfg.CommitTimeout
	rc.SnapshotThreshold = c.cfg.SnapshotThreshold
	rc.TrailingLogs = c.cfg.TrailingLogs
	rc.SnapshotInterval = c.cfg.SnapshotInterval
	rc.NotifyCh = c.notify
	rc.Logger = c.log
	if err := raft.ValidateConfig(rc); err != nil {
		return err
	}
	has, err := raft.HasExistingState(c.store, c.store, snaps)
	if err != nil {
		return err
	}
	if !has {
		var conf raft.Configuration
		for _, v := range c.cfg.Voters {
			suffrage := raft.Voter
			if v.NonVoter {
				suffrage = raft.Nonvoter
			}
			conf.Servers = append(conf.Servers, raft.Server{
				Suffrage: suffrage, ID: serverID(v.ID), Address: raft.ServerAddress(v.RaftAddr)})
		}
		if err := raft.BootstrapCluster(rc, c.store, c.store, snaps, c.trans, conf); err != nil {
			return err
		}
	}
	c.raft, err = raft.NewRaft(rc, c.fsm, c.store, c.store, snaps, c.trans)
	return err
}

func serverID(id int32) raft.ServerID { return raft.ServerID(strconv.Itoa(int(id))) }

// Close leaves the quorum (without handing over leadership: to the others
// it looks like a crash) and releases the stores. Safe to call twice.
func (c *Controller) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.stop)
		if c.raft != nil {
			err = c.raft.Shutdown().Error()
		}
		c.wg.Wait()
		err = errors.Join(err, c.closeStores())
	})
	return err
}

func (c *Controller) closeStores() error {
	var err error
	if c.trans != nil {
		err = c.trans.Close()
	}
	if c.store != nil {
		err = errors.Join(err, c.store.Close())
	}
	return err
}

// NodeID is this node's id.
func (c *Controller) NodeID() int32 { return c.cfg.NodeID }

// Image returns the current metadata image (never nil; do not modify).
func (c *Controller) Image() *Image { return c.fsm.image() }

// Subscribe returns a channel that holds the latest image: it receives the
// current one at once and then, after each apply, the newest (older unread
// images are dropped, so a slow reader never blocks the FSM). cancel stops
// delivery; the channel is not closed. At most 64 subscribers.
func (c *Controller) Subscribe() (ch <-chan *Image, cancel func(), err error) {
	return c.fsm.subscribe()
}

// ActiveController is the node id of the raft leader as this node knows
// it, or -1 when there is none (election in progress, or cut off).
func (c *Controller) ActiveController() int32 {
	_, id := c.raft.LeaderWithID()
	if id == "" {
		return -1
	}
	n, err := strconv.ParseInt(string(id), 10, 32)
	if err != nil {
		return -1
	}
	return int32(n)
}

// IsActive reports whether this node is the active controller: raft leader
// with an image that includes everything committed before its term.
func (c *Controller) IsActive() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active && c.raft.State() == raft.Leader
}

// awaitActive returns once this node is not a raft leader still catching up
// (the barrier after its election): active, not leader, or ctx or
// ApplyTimeout ended. A broker learns the new leader from raft at once, and
// a NOT_CONTROLLER answer in that window sent it probing the other nodes —
// among them the old controller, cut off by the partition that caused the
// election, where its heartbeat stalled longer than its session.
func (c *Controller) awaitActive(ctx context.Context) {
	c.mu.Lock()
	active, settled := c.active, c.settled
	c.mu.Unlock()
	if active || c.raft.State() != raft.Leader {
		return
	}
	t := time.NewTimer(c.cfg.ApplyTimeout)
	defer t.Stop()
	select {
	case <-settled:
	case <-ctx.Done():
	case <-t.C:
	case <-c.stop:
	}
}

// InvariantViolations counts image invariant violations seen (only
// non-strict mode survives one).
func (c *Controller) InvariantViolations() int64 { return c.fsm.violations.Load() }

// errNotActive makes a handler answer NOT_CONTROLLER.
var errNotActive = errors.New("controller: not the active controller")

// propose replicates rec and returns the FSM's result for it. Any raft
// failure (not leader, leadership lost, timeout) becomes errNotActive:
// the outcome may be unknown, and the client retries on the next active
// controller, where records are validated again at apply time.
func (c *Controller) propose(rec record) (applyResult, error) {
	if !c.IsActive() {
		return applyResult{}, errNotActive
	}
	b, err := rec.encode()
	if err != nil {
		return applyResult{}, err
	}
	f := c.raft.Apply(b, c.cfg.ApplyTimeout)
	if err := f.Error(); err != nil {
		c.log.Debug("proposal failed", "error", err)
		return applyResult{}, fmt.Errorf("%w: %v", errNotActive, err)
	}
	res, ok := f.Response().(applyResult)
	if !ok {
		return applyResult{}, fmt.Errorf("controller: unexpected apply response %T", f.Response())
	}
	return res, nil
}

// leadershipLoop tracks raft leadership. On gaining it, a barrier makes
// the image current before the node acts as controller, and every broker
// gets a fresh session: heartbeat times were the old controller's memory.
func (c *Controller) leadershipLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.stop:
			return
		case leader := <-c.notify:
			c.mu.Lock()
			c.active = false
			clear(c.lastSeen)
			settled := c.settled
			if leader {
				settled = make(chan struct{})
				c.settled = settled
			}
			c.mu.Unlock()
			if !leader {
				continue
			}
			if err := c.raft.Barrier(c.cfg.ApplyTimeout).Error(); err != nil {
				c.log.Warn("barrier after election failed", "error", err)
				close(settled)
				continue
			}
			now := time.Now()
			c.mu.Lock()
			for id := range c.Image().Brokers {
				c.lastSeen[id] = now
			}
			c.active = c.raft.State() == raft.Leader
			close(settled)
			c.mu.Unlock()
			c.log.Info("active controller", "node", c.cfg.NodeID)
		}
	}
}

// sessionLoop fences brokers whose session expired, while active.
func (c *Controller) sessionLoop() {
	defer c.wg.Done()
	tick := c.cfg.SessionTimeout / 10
	if tick < 10*time.Millisecond {
		tick = 10 * time.Millisecond
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			for _, r := range c.expired(time.Now()) {
				if _, err := c.propose(record{Policy: c.cfg.policy(), Fence: &r}); err != nil {
					break // lost leadership; the next controller starts afresh
				}
				c.log.Info("fenced broker: session expired", "broker", r.ID, "epoch", r.Epoch)
				faultpoint.Hit(faultpoint.BrokerFenced, faultpoint.Attrs{Node: c.cfg.NodeID, Broker: r.ID})
			}
		}
	}
}

// expired lists unfenced brokers with no heartbeat for SessionTimeout.
func (c *Controller) expired(now time.Time) []brokerRec {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.active {
		return nil
	}
	var out []brokerRec
	img := c.Image()
	for _, id := range img.BrokerIDs() {
		b := img.Brokers[id]
		if b.Fenced {
			continue
		}
		seen, ok := c.lastSeen[id]
		if !ok {
			c.lastSeen[id] = now // registered through an earlier controller
			continue
		}
		if now.Sub(seen) > c.cfg.SessionTimeout {
			out = append(out, brokerRec{ID: id, Epoch: b.Epoch})
		}
	}
	return out
}

// touch records a sign of life from broker id.
func (c *Controller) touch(id int32) {
	c.mu.Lock()
	c.lastSeen[id] = time.Now()
	c.mu.Unlock()
}

// TransferLeadership asks raft to hand the active controller role to voter
// id (tests and nemeses use it to place the controller deliberately). It
// must be called on the active controller.
func (c *Controller) TransferLeadership(id int32) error {
	for _, v := range c.cfg.Voters {
		if v.ID == id && v.NonVoter {
			// raft would accept the request, stall proposals until its
			// election timeout, and leave the leadership where it was.
			return fmt.Errorf("controller: node %d does not vote (dedicated controllers): it cannot lead", id)
		}
		if v.ID == id {
			return c.raft.LeadershipTransferToServer(serverID(id), raft.ServerAddress(v.RaftAddr)).Error()
		}
	}
	return fmt.Errorf("controller: no voter %d", id)
}
