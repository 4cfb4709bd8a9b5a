package cluster

// Broker-side glue of KIP-932's share roles (cluster/share): the
// share-group coordinator on __consumer_offsets, the share-partition
// leader, the share coordinator on __share_group_state, the share-state
// RPCs sent to the share coordinator's broker over the Kafka protocol, and
// wire.ShareBackend.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/coordinator"
	"gregor/cluster/group"
	"gregor/cluster/meta"
	"gregor/cluster/replica"
	"gregor/cluster/share"
	"gregor/cluster/wire"
)

// shareRoles are a broker's share roles.
type shareRoles struct {
	groups *share.Groups
	mgr    *share.Manager
	state  *share.StateCoordinator
	conns  *peerConns
}

// startShares starts the share roles; they stop when the broker stops,
// before partitions close.
func (b *Broker) startShares() *shareRoles {
	cfg := b.cfg.Share
	cfg.Logger = b.log
	cfg.Defaults()
	env := shareEnv{b}
	r := &shareRoles{conns: newPeerConns(b, "share-state")}
	r.state = share.NewStateCoordinator(share.StateConfig{Topic: meta.ShareGroupStateTopic, PollEvery: cfg.PollEvery, Logger: b.log}, stateTopic{b})
	r.groups = share.NewGroups(cfg, env)
	r.mgr = share.NewManager(cfg, env)
	r.state.Start()
	r.groups.Start()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		<-b.stop
		r.mgr.Close()
		r.conns.close() // a state RPC blocked on a dead peer ends
		r.groups.Close()
		r.state.Close()
	}()
	return r
}

// ShareGroups implements wire.ShareBackend.
func (b *Broker) ShareGroups() *share.Groups {
	if !b.cfg.Groups.ShareProtocol {
		return nil // not offered: wire answers share APIs UNSUPPORTED_VERSION
	}
	return b.shares.groups
}

// ShareManager implements wire.ShareBackend.
func (b *Broker) ShareManager() *share.Manager { return b.shares.mgr }

// ShareState implements wire.ShareBackend.
func (b *Broker) ShareState() *share.StateCoordinator { return b.shares.state }

type stateTopic struct{ b *Broker }

func (t stateTopic) Partitions() int32 { return t.b.partitionCount(meta.ShareGroupStateTopic) }
func (t stateTopic) Log(p int32) coordinator.Log {
	return t.b.internalLog(meta.ShareGroupStateTopic, p)
}

type offsetsTopic struct{ b *Broker }

func (t offsetsTopic) Partitions() int32           { return t.b.partitionCount(group.Topic) }
func (t offsetsTopic) Log(p int32) coordinator.Log { return t.b.internalLog(group.Topic, p) }

type shareEnv struct{ b *Broker }

func (e shareEnv) NodeID() int32                   { return e.b.cfg.NodeID }
func (e shareEnv) OffsetsTopic() coordinator.Topic { return offsetsTopic(e) }
func (e shareEnv) Partition(topic string, p int32) *replica.Partition {
	return e.b.Partition(topic, p)
}

func (e shareEnv) TopicByName(name string) ([16]byte, int32, bool) {
	t := e.b.Image().Topics[name]
	if t == nil {
		return [16]byte{}, 0, false
	}
	return t.ID, int32(len(t.Partitions)), true
}

func (e shareEnv) TopicByID(id [16]byte) (string, int32, bool) {
	for _, t := range e.b.Image().Topics {
		if t.ID == id {
			return t.Name, int32(len(t.Partitions)), true
		}
	}
	return "", 0, false
}

func (e shareEnv) Leader(topic string, p int32) (share.LeaderHint, bool) {
	im := e.b.Image()
	t := im.Topics[topic]
	if t == nil || p < 0 || int(p) >= len(t.Partitions) {
		return share.LeaderHint{}, false
	}
	ps := t.Partitions[p]
	br, ok := im.Brokers[ps.Leader]
	if !ok {
		return share.LeaderHint{}, false
	}
	return share.LeaderHint{Node: br.ID, Epoch: ps.LeaderEpoch, Host: br.Host, Port: br.Port}, true
}

func (e shareEnv) GroupConfig(g string) map[string]string { return e.b.Image().GroupConfigs[g] }

// ClassicGroup asks this broker's group coordinator; it answers only for
// groups it coordinates, which a share group's coordinator does (both live
// on the group's __consumer_offsets partition).
func (e shareEnv) ClassicGroup(id string) bool {
	if e.b.groups == nil {
		return false
	}
	rg := e.b.groups.DescribeGroups(&kmsg.DescribeGroupsRequest{Groups: []string{id}}).Groups[0]
	return rg.ErrorCode == 0 && rg.State != string(group.Dead)
}

// stateRPCBound bounds one share-state round trip (the coordinator answers
// once the state is replicated).
const stateRPCBound = 10 * time.Second

// stateCoordinator is the broker leading k's __share_group_state
// partition, the topic created on first use.
func (e shareEnv) stateCoordinator(ctx context.Context, k share.StateKey) (int32, *kerr.Error) {
	c, err := e.b.findCoordinator(ctx, meta.ShareGroupStateTopic, e.b.shareConfig().StatePartitions, k.CoordinatorKey())
	if err != nil {
		return -1, err
	}
	return c.NodeID, nil
}

// FindShareCoordinator implements wire.ShareCoordinatorFinder: the leader
// of the __share_group_state partition of key, a share partition named as
// Kafka's FindCoordinator v6 key type SHARE takes it
// ("groupId:topicId:partition", KafkaApis.getCoordinator with
// ShareCoordinator.partitionFor), the topic created on first use. A
// malformed key is INVALID_REQUEST; a broker without share roles has no
// share coordinator (COORDINATOR_NOT_AVAILABLE).
func (b *Broker) FindShareCoordinator(ctx context.Context, key string) (wire.Coordinator, *kerr.Error, string) {
	if b.ShareGroups() == nil {
		return wire.Coordinator{}, kerr.CoordinatorNotAvailable, ""
	}
	k, err := share.ParseCoordinatorKey(key)
	if err != nil {
		return wire.Coordinator{}, kerr.InvalidRequest, err.Error()
	}
	c, e := b.findCoordinator(ctx, meta.ShareGroupStateTopic, b.shareConfig().StatePartitions, k.CoordinatorKey())
	return c, e, ""
}

func (b *Broker) shareConfig() share.Config {
	c := b.cfg.Share
	c.Defaults()
	return c
}

// stateRPC sends req to k's share coordinator, retrying while there is
// none yet (the topic just created, its leader moving, its shard loading)
// until the bound, as Kafka's PersisterStateManager retries
// COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS.
func (e shareEnv) stateRPC(ctx context.Context, k share.StateKey, req kmsg.Request) (kmsg.Response, *kerr.Error) {
	ctx, cancel := context.WithTimeout(ctx, stateRPCBound)
	defer cancel()
	backoff := 20 * time.Millisecond
	// Bound: the context's deadline; each pass waits at least backoff.
	for {
		resp, ke := e.stateRPCOnce(ctx, k, req)
		if ke == nil {
			if ke = coordinatorError(resp); ke == nil {
				return resp, nil
			}
		}
		if ke != kerr.CoordinatorNotAvailable && ke != kerr.NotCoordinator && ke != kerr.CoordinatorLoadInProgress {
			return resp, ke
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ke
		case <-t.C:
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

func (e shareEnv) stateRPCOnce(ctx context.Context, k share.StateKey, req kmsg.Request) (kmsg.Response, *kerr.Error) {
	node, ke := e.stateCoordinator(ctx, k)
	if ke != nil {
		return nil, ke
	}
	resp, err := e.b.shares.conns.request(ctx, node, req)
	if err != nil {
		return nil, kerr.CoordinatorNotAvailable
	}
	return resp, nil
}

// coordinatorError is a share-state answer's coordinator-level error (the
// one partition's NOT_COORDINATOR and kin), nil when it has none.
func coordinatorError(resp kmsg.Response) *kerr.Error {
	var codes []int16
	switch r := resp.(type) {
	case *kmsg.ReadShareGroupStateResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				codes = append(codes, p.ErrorCode)
			}
		}
	case *kmsg.WriteShareGroupStateResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				codes = append(codes, p.ErrorCode)
			}
		}
	case *kmsg.InitializeShareGroupStateResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				codes = append(codes, p.ErrorCode)
			}
		}
	case *kmsg.DeleteShareGroupStateResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				codes = append(codes, p.ErrorCode)
			}
		}
	}
	e := share.FirstError(codes)
	if e == kerr.CoordinatorNotAvailable || e == kerr.NotCoordinator || e == kerr.CoordinatorLoadInProgress {
		return e
	}
	return nil
}

func (e shareEnv) ReadState(ctx context.Context, k share.StateKey, leaderEpoch int32) (share.PartitionState, *kerr.Error) {
	resp, ke := e.stateRPC(ctx, k, share.ReadRequest(k, leaderEpoch))
	if ke != nil {
		return share.PartitionState{}, ke
	}
	return share.ParseRead(resp.(*kmsg.ReadShareGroupStateResponse))
}

func (e shareEnv) WriteState(ctx context.Context, k share.StateKey, st share.PartitionState) *kerr.Error {
	resp, ke := e.stateRPC(ctx, k, share.WriteRequest(k, st))
	if ke != nil {
		return ke
	}
	var codes []int16
	for _, t := range resp.(*kmsg.WriteShareGroupStateResponse).Topics {
		for _, p := range t.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return share.FirstError(codes)
}

func (e shareEnv) InitializeState(ctx context.Context, k share.StateKey, start int64) *kerr.Error {
	resp, ke := e.stateRPC(ctx, k, share.InitializeRequest(k, start))
	if ke != nil {
		return ke
	}
	var codes []int16
	for _, t := range resp.(*kmsg.InitializeShareGroupStateResponse).Topics {
		for _, p := range t.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return share.FirstError(codes)
}

func (e shareEnv) DeleteState(ctx context.Context, k share.StateKey) *kerr.Error {
	resp, ke := e.stateRPC(ctx, k, share.DeleteRequest(k))
	if ke != nil {
		return ke
	}
	var codes []int16
	for _, t := range resp.(*kmsg.DeleteShareGroupStateResponse).Topics {
		for _, p := range t.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return share.FirstError(codes)
}
