package controller

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/cluster/meta"
)

// maxSubscribers bounds Subscribe; each subscriber costs one channel send
// per apply.
const maxSubscribers = 64

// fsm applies the replicated metadata log to the Image. raft calls Apply,
// Snapshot and Restore from one goroutine; readers use the atomic pointer.
type fsm struct {
	img    atomic.Pointer[Image]
	strict bool
	log    hclog.Logger
	// violations counts invariant violations seen in non-strict mode.
	violations atomic.Int64

	mu     sync.Mutex
	subs   map[int]chan *Image
	nextID int
}

func newFSM(strict bool, log hclog.Logger) *fsm {
	f := &fsm{strict: strict, log: log, subs: map[int]chan *Image{}}
	f.img.Store(emptyImage())
	return f
}

func (f *fsm) image() *Image { return f.img.Load() }

// publish installs img after checking the invariants, and notifies
// subscribers without blocking: each channel has room for one image and
// holds only the newest.
func (f *fsm) publish(img *Image) {
	if err := checkInvariants(img); err != nil {
		if f.strict {
			panic(fmt.Sprintf("controller: invariant violated at version %d: %v", img.Version, err))
		}
		f.violations.Add(1)
		f.log.Error("metadata invariant violated", "version", img.Version, "error", err)
	}
	f.img.Store(img)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.subs {
		select {
		case <-ch: // drop the stale image nobody read yet
		default:
		}
		select {
		case ch <- img:
		default: // cannot happen: we are the only sender and just drained
		}
	}
}

func (f *fsm) subscribe() (<-chan *Image, func(), error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.subs) >= maxSubscribers {
		return nil, nil, fmt.Errorf("controller: more than %d subscribers", maxSubscribers)
	}
	ch := make(chan *Image, 1)
	ch <- f.image()
	id := f.nextID
	f.nextID++
	f.subs[id] = ch
	return ch, func() {
		f.mu.Lock()
		delete(f.subs, id)
		f.mu.Unlock()
	}, nil
}

// Apply implements raft.FSM.
func (f *fsm) Apply(l *raft.Log) any {
	rec, err := decodeRecord(l.Data)
	if err != nil {
		// A record we cannot read was written by a different build; skip
		// it rather than diverge by crashing only some nodes.
		f.log.Error("skipping undecodable record", "index", l.Index, "error", err)
		return applyResult{Code: kerr.UnknownServerError.Code}
	}
	img := f.image().clone()
	img.Version = l.Index
	res := applyRecord(img, rec, l.Index)
	f.publish(img)
	return res
}

func applyRecord(img *Image, rec record, index uint64) applyResult {
	switch {
	case rec.Register != nil:
		return applyRegister(img, *rec.Register, int64(index), rec.Policy)
	case rec.Fence != nil:
		return applyFence(img, *rec.Fence, rec.Policy)
	case rec.Unfence != nil:
		return applyUnfence(img, *rec.Unfence, rec.Policy)
	case rec.Shutdown != nil:
		return applyShutdown(img, *rec.Shutdown, rec.Policy)
	case rec.AlterPartition != nil:
		return applyAlterPartition(img, *rec.AlterPartition)
	case rec.CreateTopic != nil:
		return applyCreateTopic(img, *rec.CreateTopic)
	case rec.DeleteTopic != nil:
		return applyDeleteTopic(img, *rec.DeleteTopic)
	case rec.Configs != nil:
		return applyConfigs(img, *rec.Configs, rec.Policy)
	case rec.CreatePartitions != nil:
		return applyCreatePartitions(img, *rec.CreatePartitions)
	case rec.Elect != nil:
		return applyElect(img, *rec.Elect, rec.Policy)
	case rec.Scram != nil:
		return applyScram(img, *rec.Scram)
	case rec.ACLs != nil:
		return applyACLs(img, *rec.ACLs)
	case rec.Reassign != nil:
		return applyReassign(img, *rec.Reassign)
	}
	return applyResult{Code: kerr.InvalidRequest.Code}
}

// forEachPartition calls fn on every partition (topics in name order, so
// that the result never depends on map order).
func forEachPartition(img *Image, fn func(t TopicInfo, p *meta.Partition)) {
	for _, n := range img.TopicNames() {
		t := img.Topics[n]
		for i := range t.Partitions {
			fn(t, &t.Partitions[i])
		}
	}
}

// dropBroker applies the consequences of broker id becoming ineligible.
func dropBroker(img *Image, id int32, pol electPolicy) {
	forEachPartition(img, func(t TopicInfo, p *meta.Partition) {
		if p.InISR(id) || p.Leader == id {
			withoutBroker(p, id, img.live, img.uncleanFor(t, pol), pol)
		}
	})
}

// reviveOffline elects leaders for offline partitions after a broker
// became live.
func reviveOffline(img *Image, pol electPolicy) {
	forEachPartition(img, func(t TopicInfo, p *meta.Partition) {
		electIfOffline(p, img.live, img.uncleanFor(t, pol), pol)
	})
}

func applyRegister(img *Image, r registerRec, epoch int64, pol electPolicy) applyResult {
	b := BrokerInfo{ID: r.ID, Host: r.Host, Port: r.Port, Epoch: epoch, Fenced: true}
	img.Brokers[r.ID] = b
	// A restarted broker lost whatever its previous incarnation had: it
	// leaves ISRs and leaderships like a fenced one.
	dropBroker(img, r.ID, pol)
	return applyResult{Broker: b}
}

// current returns the broker named by r if r names its current incarnation.
func current(img *Image, r brokerRec) (BrokerInfo, int16) {
	b, ok := img.Brokers[r.ID]
	if !ok {
		return b, kerr.BrokerIDNotRegistered.Code
	}
	if b.Epoch != r.Epoch {
		return b, kerr.StaleBrokerEpoch.Code
	}
	return b, 0
}

func applyFence(img *Image, r brokerRec, pol electPolicy) applyResult {
	b, code := current(img, r)
	if code != 0 || b.Fenced {
		return applyResult{Code: code, Broker: b}
	}
	b.Fenced = true
	img.Brokers[r.ID] = b
	dropBroker(img, r.ID, pol)
	return applyResult{Broker: b}
}

func applyUnfence(img *Image, r brokerRec, pol electPolicy) applyResult {
	b, code := current(img, r)
	if code != 0 || !b.Fenced || b.ShuttingDown {
		return applyResult{Code: code, Broker: b}
	}
	b.Fenced = false
	img.Brokers[r.ID] = b
	reviveOffline(img, pol)
	return applyResult{Broker: b}
}

func applyShutdown(img *Image, r brokerRec, pol electPolicy) applyResult {
	b, code := current(img, r)
	if code != 0 || b.ShuttingDown {
		return applyResult{Code: code, Broker: b}
	}
	b.ShuttingDown = true
	img.Brokers[r.ID] = b
	dropBroker(img, r.ID, pol)
	return applyResult{Broker: b}
}

func applyCreateTopic(img *Image, r createRec) applyResult {
	if _, ok := img.Topics[r.Name]; ok {
		return applyResult{Code: kerr.TopicAlreadyExists.Code}
	}
	t := TopicInfo{Name: r.Name, ID: r.ID, Configs: map[string]string{}}
	for k, v := range r.Configs {
		t.Configs[k] = v
	}
	for i, reps := range r.Assignment {
		if len(reps) == 0 {
			return applyResult{Code: kerr.InvalidReplicaAssignment.Code}
		}
		t.Partitions = append(t.Partitions, newPartition(img, r.Name, int32(i), reps))
	}
	img.Topics[r.Name] = t
	img.TopicsCreated++
	return applyResult{Topic: t}
}

// newPartition is a new partition on replicas reps, led by the first. The
// assignment was made from live brokers, but one may have been fenced
// between proposal and apply: then a live one is elected, if any.
func newPartition(img *Image, topic string, index int32, reps []int32) meta.Partition {
	p := meta.Partition{Topic: topic, Index: index,
		Replicas: slices.Clone(reps), ISR: slices.Clone(reps), Leader: reps[0]}
	if !img.live(p.Leader) {
		p.Leader, p.ISR = elect(p, img.live, false, electPolicy{})
		if p.Leader == meta.NoLeader {
			p.ISR = slices.Clone(reps)
		}
	}
	return p
}

func applyDeleteTopic(img *Image, r deleteRec) applyResult {
	t, ok := img.Topics[r.Name]
	if !ok {
		return applyResult{Code: kerr.UnknownTopicOrPartition.Code}
	}
	delete(img.Topics, r.Name)
	return applyResult{Topic: t}
}

// Snapshot implements raft.FSM. The image is immutable, so persisting it
// later from another goroutine is safe.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return imageSnapshot{f.image()}, nil
}

// Restore implements raft.FSM.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	img := emptyImage()
	if err := json.NewDecoder(rc).Decode(img); err != nil {
		return fmt.Errorf("controller: restore snapshot: %w", err)
	}
	if img.Brokers == nil {
		img.Brokers = map[int32]BrokerInfo{}
	}
	if img.Topics == nil {
		img.Topics = map[string]TopicInfo{}
	}
	f.publish(img)
	return nil
}

type imageSnapshot struct{ img *Image }

func (s imageSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode(s.img); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (imageSnapshot) Release() {}
