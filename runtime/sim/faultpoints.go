package sim

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"gregor/cluster"
	"gregor/cluster/faultnet"
	"gregor/cluster/faultpoint"
)

// FaultPoints says the sim arms fault points (runtime.CheckFaultPoints):
// its brokers live in this process, so it arms them directly, with no
// control file (faultpoint.Set), and keeps their firings in memory.
func (Runtime) FaultPoints() bool { return true }

// PointActions are the actions the sim carries out. A point is often hit
// holding a sync.Mutex (a partition's), and a goroutine blocked on a
// sync.Mutex is not durably blocked, so virtual time would stop: nothing
// may block at the point. A crash and a cut act at once and return (the
// cut lifted later on a goroutine of its own); a pause or hold freezes the
// whole node from the point for its duration (the sim's pause, SIGSTOP's
// model: Cluster.Pause), on a goroutine of its own, where the process
// runtime stalls only the goroutine that hit the point, with its lock.
func (Runtime) PointActions() []faultpoint.Action {
	return []faultpoint.Action{faultpoint.Crash, faultpoint.Pause, faultpoint.Cut, faultpoint.Hold}
}

// PointAims are the aims the sim carries out: every one, since every
// broker's points are in this process's registry.
func (Runtime) PointAims() []faultpoint.Aim { return faultpoint.Aims }

// PointActionRefusal says why the sim refuses an action.
const PointActionRefusal = "--runtime sim carries out the crash, cut, pause and hold actions of fault points"

// points are the sim's fault-point control channel: per node, the arms in
// force (kept across the node's restarts, as the process runtime's control
// file is) and every firing it made. mu is held only to read or write
// them, never across a wait.
type points struct {
	mu      sync.Mutex
	arms    map[int32][]faultpoint.Arm
	firings map[int32][]faultpoint.Firing
}

// ArmFaultPoints implements runtime.FaultPointer: arms replace what node
// id had; a node that is down gets them when it starts.
func (s *simCluster) ArmFaultPoints(_ context.Context, id int32, arms []faultpoint.Arm) error {
	if err := s.nodeOK(id); err != nil {
		return err
	}
	for _, a := range arms {
		if err := a.Check(); err != nil {
			return err
		}
		if !slices.Contains(Runtime{}.PointActions(), a.Action) {
			return errors.New(PointActionRefusal)
		}
	}
	s.pts.mu.Lock()
	defer s.pts.mu.Unlock()
	s.pts.arms[id] = slices.Clone(arms)
	if s.installed[id] == nil {
		return nil
	}
	return faultpoint.Set(id, arms, faultpoint.Counts(s.pts.firings[id]))
}

// FaultPointFirings implements runtime.FaultPointer: node id's firings in
// order, those of its earlier lives included.
func (s *simCluster) FaultPointFirings(_ context.Context, id int32) ([]faultpoint.Firing, error) {
	if err := s.nodeOK(id); err != nil {
		return nil, err
	}
	s.pts.mu.Lock()
	defer s.pts.mu.Unlock()
	return slices.Clone(s.pts.firings[id]), nil
}

// installPoints gives node id's new broker b its fault-point handlers and
// the arms in force. Caller holds s.mu.
func (s *simCluster) installPoints(id int32, b *cluster.Broker) {
	// dying is set by this life's first crash firing: where a process
	// exits at once, the sim's broker goes on until the kill reaches it,
	// and a firing of a crashing broker is neither recorded nor acted on
	// (the harness would wait for a second stop of a node it restarted).
	var dying, crashed atomic.Bool
	faultpoint.Install(id, faultpoint.Handlers{
		Crash: func() {
			if crashed.CompareAndSwap(false, true) {
				s.pointCrash(id, b)
			}
		},
		Cut: func(d time.Duration) {
			if dying.Load() {
				return
			}
			select {
			case <-b.Stopping(): // a delayed cut after its broker died
			default:
				b.FaultCutAsync(d)
			}
		},
		Pause: func(d time.Duration) {
			if !dying.Load() {
				go s.pointPause(id, b, d)
			}
		},
		Record: func(f faultpoint.Firing) error {
			if dying.Load() || f.Action == faultpoint.Crash && !dying.CompareAndSwap(false, true) {
				return errCrashing
			}
			s.pts.mu.Lock()
			defer s.pts.mu.Unlock()
			s.pts.firings[id] = append(s.pts.firings[id], f)
			return nil
		},
	})
	s.pts.mu.Lock()
	defer s.pts.mu.Unlock()
	s.installed[id] = b
	_ = faultpoint.Set(id, s.pts.arms[id], faultpoint.Counts(s.pts.firings[id])) // checked when armed
}

var errCrashing = errors.New("fault point fired on a crashing broker: not recorded")

// uninstallPoints disarms node id, which is down. Caller holds s.mu.
func (s *simCluster) uninstallPoints(id int32) {
	faultpoint.Uninstall(id)
	s.pts.mu.Lock()
	defer s.pts.mu.Unlock()
	delete(s.installed, id)
}

// pointCrash is a fault point's crash in the sim, in the goroutine that hit
// the point: the node's connections close at once (what it sends next goes
// nowhere, as after a process's exit) and the kill runs on its own
// goroutine (it takes s.mu and waits for the broker's goroutines, this one
// among them). This goroutine returns into its step at once (it may hold a
// sync.Mutex: see PointActions), which ends at its next wait on the
// stopping broker; a write it makes meanwhile is one a kill a moment later
// would have let through too (with --lazyfs the power cut drops it). Where
// the process runtime exits at the point, the sim crashes a step later
// with the network gone at the point.
func (s *simCluster) pointCrash(id int32, b *cluster.Broker) {
	select {
	case <-b.Stopping(): // a delayed crash after its broker died
		return
	default:
	}
	if m, ok := s.c.Net.(*faultnet.Mem); ok {
		m.CloseHost(s.c.hosts[id-1])
	}
	go func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed || s.c.Broker(id) != b {
			return // killed or stopped meanwhile
		}
		s.uninstallPoints(id)
		_ = s.c.Kill(id)
	}()
}

// pointPause is a fault point's pause or hold in the sim: node id's broker
// b frozen for d (Cluster.Pause), on a goroutine of its own (the hitting
// one may hold a sync.Mutex: see PointActions). A node already frozen (a
// pause nemesis in force) is left to that pause; one killed or restarted
// meanwhile is not thawed by this one's end.
func (s *simCluster) pointPause(id int32, b *cluster.Broker, d time.Duration) {
	same := func() bool { return !s.closed && s.c.Broker(id) == b }
	s.mu.Lock()
	if !same() || s.c.Paused(id) || s.c.Pause(id) != nil {
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	time.Sleep(d)
	s.mu.Lock()
	defer s.mu.Unlock()
	if same() {
		s.c.Resume(id)
	}
}
