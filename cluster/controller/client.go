package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/cluster/acl"
	"gregor/cluster/meta"
	"gregor/internal/sleep"
)

// Client sends requests to the active controller, finding it and retrying
// NOT_CONTROLLER answers and transport errors with bounded exponential
// backoff until ctx (or Timeout) expires or MaxAttempts is spent.
//
// A retried request may have been applied already (the answer was lost):
// registration then yields a newer epoch, CreateTopics TOPIC_ALREADY_EXISTS,
// AlterPartition INVALID_UPDATE_VERSION — all safe, as in Kafka.
type Client struct {
	Transport Transport
	// Active returns the active controller's node id as the caller knows
	// it, or -1; typically the local (*Controller).ActiveController.
	Active func() int32
	// Nodes are tried in turn when Active has no answer or its answer
	// just failed.
	Nodes []int32
	// Timeout bounds one call when ctx has no deadline; default 30s.
	Timeout time.Duration
	// Backoff is the first retry delay (default 50ms), doubling up to
	// MaxBackoff (default 1s).
	Backoff, MaxBackoff time.Duration
	// MaxAttempts bounds attempts per call; default 200.
	MaxAttempts int
}

// ErrNoController is returned when no attempt reached the active controller.
var ErrNoController = errors.New("controller: no active controller reached")

// Request sends req to the active controller and returns its response.
func (cl *Client) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, orDur(cl.Timeout, 30*time.Second))
		defer cancel()
	}
	backoff := orDur(cl.Backoff, 50*time.Millisecond)
	maxBackoff := orDur(cl.MaxBackoff, time.Second)
	attempts := cl.MaxAttempts
	if attempts <= 0 {
		attempts = 200
	}
	var lastErr error = ErrNoController
	// badHint: the Active answer that just failed; it is skipped until
	// Active changes its mind. next rotates through Nodes meanwhile.
	badHint, next := int32(-1), 0
	for i := 0; i < attempts; i++ {
		target, hinted := int32(-1), false
		if cl.Active != nil {
			if h := cl.Active(); h >= 0 && h != badHint {
				target, hinted = h, true
			}
		}
		if target < 0 && len(cl.Nodes) > 0 {
			target = cl.Nodes[next%len(cl.Nodes)]
			next++
		}
		if target >= 0 {
			resp, err := cl.attempt(ctx, target, badHint, req)
			switch {
			case err == nil && !notController(resp):
				return resp, nil
			case err == nil:
				lastErr = fmt.Errorf("%w: node %d answered NOT_CONTROLLER", ErrNoController, target)
			default:
				lastErr = err
			}
			if hinted {
				badHint = target
			}
			if errors.Is(err, errLeaderMoved) {
				continue // Active names the new controller: no backoff
			}
		}
		if !sleep.For(ctx, backoff) {
			return nil, fmt.Errorf("%w (last: %v)", ctx.Err(), lastErr)
		}
		backoff = min(2*backoff, maxBackoff)
	}
	return nil, lastErr
}

// leaderPoll is how often an attempt in flight checks whether Active has
// moved on; a tick costs one Active call, and attempts are few (heartbeats,
// ISR changes, topic changes).
const leaderPoll = 25 * time.Millisecond

// errLeaderMoved cancels an attempt whose target is no longer the node
// Active names.
var errLeaderMoved = errors.New("controller: the active controller moved while the request was in flight")

// attempt sends req to target and abandons it as soon as Active names a
// third node (neither target nor badHint, the hint that already failed):
// the quorum has a new leader, and the old one may be cut off. A request to
// a partitioned node stalls (dropped packets) until ctx ends — for a
// heartbeat, the lifecycle's RequestTimeout, longer than a broker session —
// so without this a broker whose heartbeat was in flight to the old
// controller when a partition isolated it missed its whole session on the
// new controller and was fenced although it was healthy and on the majority
// side. In combined mode the new controller could fence itself that way,
// and every ISR could shrink onto the isolated broker.
func (cl *Client) attempt(ctx context.Context, target, badHint int32, req kmsg.Request) (kmsg.Response, error) {
	if cl.Active == nil {
		return cl.Transport.Roundtrip(ctx, target, req)
	}
	actx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(leaderPoll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if h := cl.Active(); h >= 0 && h != target && h != badHint {
					cancel(errLeaderMoved)
					return
				}
			}
		}
	})
	resp, err := cl.Transport.Roundtrip(actx, target, req)
	close(done)
	wg.Wait()
	cancel(nil)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), errLeaderMoved) {
		err = fmt.Errorf("%w (node %d): %v", errLeaderMoved, target, err)
	}
	return resp, err
}

func orDur(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// notController reports whether resp says the node is not the active
// controller (per-topic errors count if any topic says so).
func notController(resp kmsg.Response) bool {
	nc := kerr.NotController.Code
	switch r := resp.(type) {
	case *kmsg.BrokerRegistrationResponse:
		return r.ErrorCode == nc
	case *kmsg.BrokerHeartbeatResponse:
		return r.ErrorCode == nc
	case *kmsg.AlterPartitionResponse:
		return r.ErrorCode == nc
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.AlterConfigsResponse:
		return len(r.Resources) > 0 && r.Resources[0].ErrorCode == nc
	case *kmsg.IncrementalAlterConfigsResponse:
		return len(r.Resources) > 0 && r.Resources[0].ErrorCode == nc
	case *kmsg.CreatePartitionsResponse:
		return len(r.Topics) > 0 && r.Topics[0].ErrorCode == nc
	case *kmsg.ElectLeadersResponse:
		return r.ErrorCode == nc
	case *kmsg.AlterPartitionAssignmentsResponse:
		return r.ErrorCode == nc
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		return slices.ContainsFunc(r.Results, func(x kmsg.AlterUserSCRAMCredentialsResponseResult) bool { return x.ErrorCode == nc })
	}
	return aclNotController(resp)
}

func notControllerResponse(req kmsg.Request) kmsg.Response {
	return ErrorResponse(req, kerr.NotController.Code, "")
}

// ErrorResponse answers an admin request (AlterConfigs, IncrementalAlterConfigs,
// CreatePartitions, ElectLeaders, AlterPartitionReassignments) with error
// code nc, and msg where the response has room for one, on every item;
// nil for other requests.
func ErrorResponse(req kmsg.Request, nc int16, msg string) kmsg.Response {
	var m *string
	if msg != "" {
		m = kmsg.StringPtr(msg)
	}
	switch r := req.(type) {
	case *kmsg.AlterConfigsRequest:
		resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
		for _, rr := range r.Resources {
			out := kmsg.NewAlterConfigsResponseResource()
			out.ResourceType, out.ResourceName, out.ErrorCode, out.ErrorMessage = rr.ResourceType, rr.ResourceName, nc, m
			resp.Resources = append(resp.Resources, out)
		}
		return resp
	case *kmsg.IncrementalAlterConfigsRequest:
		resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for _, rr := range r.Resources {
			out := kmsg.NewIncrementalAlterConfigsResponseResource()
			out.ResourceType, out.ResourceName, out.ErrorCode, out.ErrorMessage = rr.ResourceType, rr.ResourceName, nc, m
			resp.Resources = append(resp.Resources, out)
		}
		return resp
	case *kmsg.CreatePartitionsRequest:
		resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
		for _, rt := range r.Topics {
			out := kmsg.NewCreatePartitionsResponseTopic()
			out.Topic, out.ErrorCode, out.ErrorMessage = rt.Topic, nc, m
			resp.Topics = append(resp.Topics, out)
		}
		return resp
	case *kmsg.ElectLeadersRequest:
		resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
		resp.ErrorCode = nc
		return resp
	case *kmsg.AlterPartitionAssignmentsRequest:
		resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		resp.ErrorCode, resp.ErrorMessage = nc, m
		return resp
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		var users []string
		for _, d := range r.Deletions {
			users = append(users, d.Name)
		}
		for _, u := range r.Upsertions {
			users = append(users, u.Name)
		}
		for _, u := range users {
			out := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			out.User, out.ErrorCode, out.ErrorMessage = u, nc, m
			resp.Results = append(resp.Results, out)
		}
		return resp
	}
	return acl.ErrorResponse(req, nc, m)
}

// Versions the typed helpers send; the broker's wire server must accept
// them (its ApiVersions should list keys 56, 62, 63).
const (
	registrationVersion   = 1
	heartbeatVersion      = 1
	alterPartitionVersion = 1 // by topic name; v2+ needs topic ids
)

// Register registers broker id with its Kafka listener and returns the
// new broker epoch.
func (cl *Client) Register(ctx context.Context, id int32, host string, port int32, clusterID string) (int64, error) {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.SetVersion(registrationVersion)
	req.BrokerID, req.ClusterID = id, clusterID
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", host, uint16(port)
	req.Listeners = append(req.Listeners, l)
	resp, err := cl.Request(ctx, req)
	if err != nil {
		return -1, err
	}
	r := resp.(*kmsg.BrokerRegistrationResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return -1, err
	}
	return r.BrokerEpoch, nil
}

// Heartbeat is one broker heartbeat. A non-zero error code in the response
// is returned as a *kerr.Error along with the response.
func (cl *Client) Heartbeat(ctx context.Context, id int32, epoch, metadataOffset int64, wantFence, wantShutdown bool) (*kmsg.BrokerHeartbeatResponse, error) {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.SetVersion(heartbeatVersion)
	req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset = id, epoch, metadataOffset
	req.WantFence, req.WantShutdown = wantFence, wantShutdown
	resp, err := cl.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	r := resp.(*kmsg.BrokerHeartbeatResponse)
	return r, kerr.ErrorForCode(r.ErrorCode)
}

// ISRChange is one AlterPartition item, as the partition leader sends it.
type ISRChange struct {
	Topic          string
	Partition      int32
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []int32
}

// AlterISR sends one ISR change for a partition led by broker id and
// returns the resulting partition state (Leader, LeaderEpoch, ISR,
// PartitionEpoch) or the Kafka error for that partition as a *kerr.Error.
func (cl *Client) AlterISR(ctx context.Context, id int32, epoch int64, ch ISRChange) (meta.Partition, error) {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(alterPartitionVersion)
	req.BrokerID, req.BrokerEpoch = id, epoch
	t := kmsg.NewAlterPartitionRequestTopic()
	t.Topic = ch.Topic
	p := kmsg.NewAlterPartitionRequestTopicPartition()
	p.Partition, p.LeaderEpoch, p.PartitionEpoch, p.NewISR = ch.Partition, ch.LeaderEpoch, ch.PartitionEpoch, ch.NewISR
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := cl.Request(ctx, req)
	if err != nil {
		return meta.Partition{}, err
	}
	r := resp.(*kmsg.AlterPartitionResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return meta.Partition{}, err
	}
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return meta.Partition{}, fmt.Errorf("controller: AlterPartition answer has %d topics", len(r.Topics))
	}
	rp := r.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		return meta.Partition{}, err
	}
	return meta.Partition{Topic: ch.Topic, Index: rp.Partition, ISR: rp.ISR, Leader: rp.LeaderID,
		LeaderEpoch: rp.LeaderEpoch, PartitionEpoch: rp.PartitionEpoch}, nil
}
