package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/kconn"
	"gregor/cluster/replica"
	"gregor/internal/sleep"
)

// Follower fetch tuning. Kafka's defaults: replica.fetch.wait.max.ms 500,
// replica.fetch.max.bytes 1 MiB, replica.fetch.backoff.ms 1000 (shorter
// here: a test harness wants quick recovery after a heal).
const (
	replicaFetchWait     = 500 * time.Millisecond
	replicaFetchMaxBytes = 1 << 20
	replicaFetchBackoff  = 100 * time.Millisecond
	replicaRequestBound  = 5 * time.Second
)

// fetcher replicates one partition from its leader in one leader epoch. It
// ends when ctx is cancelled (the broker saw a new leader or epoch) or when
// the partition stops following that leader in that epoch.
type fetcher struct {
	b      *Broker
	p      *replica.Partition
	leader int32
	epoch  int32
	cancel context.CancelFunc
	done   chan struct{}
}

func (b *Broker) startFetcher(p *replica.Partition, leader, epoch int32) *fetcher {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fetcher{b: b, p: p, leader: leader, epoch: epoch, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		f.run(ctx)
	}()
	return f
}

func (f *fetcher) stop() {
	f.cancel()
	<-f.done
}

func (f *fetcher) leaderAddr() (string, error) {
	br, ok := f.b.Image().Brokers[f.leader]
	if !ok {
		return "", fmt.Errorf("leader %d is not a registered broker", f.leader)
	}
	return net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port))), nil
}

func (f *fetcher) run(ctx context.Context) {
	log := f.b.log.With("topic", f.p.Topic, "partition", f.p.Index, "leader", f.leader, "epoch", f.epoch)
	var conn *kconn.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	truncated := false
	if f.b.cfg.Bugs.TruncateToHW {
		// Pre-KIP-101 Kafka truncated a new follower to its own HW at once,
		// before talking to the leader at all (ReplicaManager.makeFollowers).
		if err := f.p.TruncateTo(f.p.Position().HW); err != nil {
			log.Error("truncate to hw", "err", err)
		}
		truncated = true
	}
	// Bounded by ctx: the broker cancels it on any leadership change, and
	// every request below has its own deadline.
	for ctx.Err() == nil && f.p.IsFollowing(f.leader, f.epoch) {
		if conn == nil {
			addr, err := f.leaderAddr()
			if err == nil {
				dctx, cancel := context.WithTimeout(ctx, replicaRequestBound)
				conn, err = kconn.Dial(dctx, addr, f.b.peerOptions(kconn.Options{Dial: f.b.net.Dial, ClientID: fmt.Sprintf("gregor-replica-%d", f.b.cfg.NodeID)}))
				cancel()
			}
			if err != nil {
				log.Debug("follower dial", "err", err)
				sleep.For(ctx, replicaFetchBackoff)
				continue
			}
		}
		var err error
		if !truncated {
			err = f.truncate(ctx, conn)
			truncated = err == nil
		} else {
			var again bool
			again, err = f.fetchOnce(ctx, conn)
			if again {
				truncated = false
			}
		}
		if err != nil {
			if ctx.Err() == nil {
				log.Debug("follower fetch", "err", err)
			}
			var ke *kerr.Error
			if !errors.As(err, &ke) { // connection trouble: redial
				conn.Close()
				conn = nil
			}
			sleep.For(ctx, replicaFetchBackoff)
		}
	}
}

// truncate brings the follower's log to a prefix of the leader's before it
// fetches: by leader epoch (KIP-101/KIP-279), or — under the planted
// pre-KIP-101 bug — to its own high watermark.
func (f *fetcher) truncate(ctx context.Context, conn *kconn.Conn) error {
	pos := f.p.Position()
	if pos.LatestEpoch < 0 {
		// Nothing in the log carries an epoch: nothing to reconcile.
		return f.p.TruncateTo(pos.LogStart)
	}
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(3)
	req.ReplicaID = f.b.cfg.NodeID
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = f.p.Topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition = f.p.Index
	rp.CurrentLeaderEpoch = f.epoch
	rp.LeaderEpoch = pos.LatestEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, replicaRequestBound)
	defer cancel()
	kresp, err := conn.Request(rctx, req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.OffsetForLeaderEpochResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("OffsetForLeaderEpoch: malformed response")
	}
	r := resp.Topics[0].Partitions[0]
	if e := kerr.ErrorForCode(r.ErrorCode); e != nil {
		return e
	}
	if r.LeaderEpoch < 0 || r.EndOffset < 0 {
		// The leader knows no epoch at or below ours: everything we hold
		// is from epochs it never had. Keep only what the HW vouches for.
		return f.p.TruncateTo(pos.HW)
	}
	target := r.EndOffset
	if r.LeaderEpoch != pos.LatestEpoch {
		// KIP-279: the leader's largest epoch <= ours is older than ours;
		// our own end of that epoch may be earlier still.
		if _, localEnd := f.p.EndOffsetForLocalEpoch(r.LeaderEpoch); localEnd >= 0 {
			target = min(target, localEnd)
		}
	}
	return f.p.TruncateTo(min(target, pos.LEO))
}

// fetchOnce sends one Fetch as a follower and applies the answer. It reports
// again=true when the follower must reconcile its log with the leader anew.
func (f *fetcher) fetchOnce(ctx context.Context, conn *kconn.Conn) (again bool, err error) {
	pos := f.p.Position()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID = f.b.cfg.NodeID
	req.MaxWaitMillis = int32(replicaFetchWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = replicaFetchMaxBytes
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = f.p.Topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = f.p.Index
	rp.CurrentLeaderEpoch = f.epoch
	rp.FetchOffset = pos.LEO
	rp.LastFetchedEpoch = -1
	rp.LogStartOffset = pos.LogStart
	rp.PartitionMaxBytes = replicaFetchMaxBytes
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, replicaFetchWait+replicaRequestBound)
	defer cancel()
	kresp, err := conn.Request(rctx, req)
	if err != nil {
		return false, err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if e := kerr.ErrorForCode(resp.ErrorCode); e != nil {
		return false, e
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return false, fmt.Errorf("fetch: malformed response")
	}
	r := resp.Topics[0].Partitions[0]
	switch e := kerr.ErrorForCode(r.ErrorCode); {
	case e == nil:
	case errors.Is(e, kerr.OffsetOutOfRange):
		if pos.LEO < r.LogStartOffset {
			return false, f.p.TruncateFullyAndStartAt(r.LogStartOffset)
		}
		// Our LEO is past the leader's: reconcile by epoch again.
		return true, e
	default:
		return false, e
	}
	if err := f.p.AppendAsFollower(f.leader, f.epoch, r.RecordBatches, r.HighWatermark); err != nil {
		return false, err
	}
	// DeleteRecords on the leader moves its log start; followers follow.
	return false, f.p.FollowLogStart(r.LogStartOffset)
}
