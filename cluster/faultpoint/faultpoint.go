// Package faultpoint is the cluster's registry of named fault points
// (FoundationDB's BUGGIFY, issue 29): the places in the protocol where a
// fault matters, each named by a constant whose comment says which window
// it opens. The protocol calls Hit(point, attrs) at the step; the harness
// arms points (through the runtime's control channel: the process runtime's
// control file, FileName, in the node's data directory, polled by Watch) and
// the broker then acts there: it crashes, stalls, cuts its links or holds a
// response. Every firing is appended to the node's firings file
// (FiringsName), which the harness reads back into the history.
//
// Off by default and free when off: Hit is an atomic load of a nil table
// (BenchmarkHitUnarmed). A broker acts only on points the harness armed.
package faultpoint

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Point names a protocol step where a fault opens a window.
type Point string

const (
	// ISRExpandApplied: the leader has applied a published ISR expansion
	// (replica.Partition.Update): the re-admitted follower now counts for
	// the HW. Window: between the expansion and the HW that follows it — a
	// leader dying here hands the partition to a replica that joined the ISR
	// a round trip ago (a follower re-admitted below the HW is lost data).
	ISRExpandApplied Point = "isr-expand-applied"
	// ISRShrinkApplied: the leader has applied a published ISR shrink: acks=all
	// writes now wait on fewer replicas. Window: the HW may jump to the
	// smaller ISR's minimum before the dropped follower learns it is out.
	ISRShrinkApplied Point = "isr-shrink-applied"
	// ISRExpandRequested: the leader asked the controller to add a follower
	// to the ISR (replica requestISR); the request is in flight. Window: the
	// controller may commit the expansion while the follower has not yet
	// fetched everything the HW acknowledged — Kafka re-admits only a
	// follower at the HW, and a leader dying in this round trip (an action
	// with AfterMs: the request leaves first) is what that rule guards.
	ISRExpandRequested Point = "isr-expand-requested"
	// HWAdvanced: the leader moved its high watermark (records below it are
	// acknowledged and visible). Window: between the leader's HW and the
	// followers learning it on their next fetch — a leader change here
	// leaves followers with an older HW (KIP-101, KIP-207).
	HWAdvanced Point = "hw-advanced"
	// LeaderElected: this replica became the partition's leader
	// (becomeLeader). Window: the new leader has not heard from any follower
	// yet; its HW may be behind the old leader's (KIP-207).
	LeaderElected Point = "leader-elected"
	// LeaderEpochBumped: the new leader assigned its leader epoch at its LEO
	// (the epoch cache entry followers truncate by, KIP-101/279). Window:
	// between the epoch's start and the first record written in it.
	LeaderEpochBumped Point = "leader-epoch-bumped"
	// FollowerTruncated: a follower truncated its log (leader-epoch
	// truncation, or a full truncation below the leader's log start).
	// Window: the records above the truncation point are gone here and not
	// yet fetched again from the leader.
	FollowerTruncated Point = "follower-truncated"
	// BrokerRegistered: the controller applied a broker's registration (a
	// restarted broker is back, unfenced only after its first heartbeat).
	// Window: between a restart and the re-registration taking effect.
	BrokerRegistered Point = "broker-registered"
	// CoordinatorLoadStart: this broker was elected for an internal topic's
	// partition and starts loading its coordinator shard (clients get
	// COORDINATOR_LOAD_IN_PROGRESS). Window: the old coordinator's last
	// writes are still being replayed here.
	CoordinatorLoadStart Point = "coordinator-load-start"
	// CoordinatorLoadDone: the shard's replay returned; it answers clients.
	// Window: the first requests served from the reloaded state.
	CoordinatorLoadDone Point = "coordinator-load-done"
	// OffsetCommitApplied: an OffsetCommit was written to __consumer_offsets
	// and applied to the group's state, its answer not yet sent. Window: a
	// commit durable but unacknowledged (the consumer retries or moves on).
	OffsetCommitApplied Point = "offset-commit-applied"
	// GenerationBumped: a group finished a rebalance's join phase with a new
	// generation. Window: members still hold the old generation; their
	// commits must be refused (stale-generation commits, commits during a
	// rebalance).
	GenerationBumped Point = "generation-bumped"
	// PrepareCommitDurable: a transaction's PrepareCommit state is durable in
	// __transaction_state and its markers are about to be written. Window:
	// the commit is decided but no partition has its marker (a coordinator
	// dying here must complete it on load).
	PrepareCommitDurable Point = "prepare-commit-durable"
	// MarkersWritten: every partition of a transaction has its marker; the
	// Complete state is not yet written. Window: markers written, the
	// transaction still pending in the coordinator's log.
	MarkersWritten Point = "markers-written"
	// BrokerFenced: the active controller committed a Fence record for a
	// broker whose session expired (Kafka's
	// ReplicationControlManager.fenceStaleBroker): its partitions' leaders
	// and ISRs are being moved off it. Window: between the fence and every
	// broker learning the new leaders (the fenced broker may still believe
	// it leads; a second failure here leaves the partition with the ISR the
	// fence just shrank).
	BrokerFenced Point = "broker-fenced"
	// TxnOffsetsApplied: a TxnOffsetCommit's write to __consumer_offsets
	// returned and its offsets are pending on the transaction's marker
	// (GroupMetadataManager.onTxnOffsetCommitAppend), the answer not yet
	// sent. Window: the offsets durable, not yet visible to the group, the
	// producer not yet told (an EndTxn racing a coordinator failover).
	TxnOffsetsApplied Point = "txn-offsets-applied"
	// SegmentRolled: a partition's log rolled to a new segment (Kafka's
	// UnifiedLog.roll): the old one synced, the recovery point moved to the
	// new base. Window: the new segment exists with nothing in it, its
	// index empty; a crash here restarts from a recovery point at the roll.
	SegmentRolled Point = "segment-rolled"
)

// Points lists every point, in the order the help shows them.
var Points = []Point{ISRExpandApplied, ISRShrinkApplied, ISRExpandRequested, HWAdvanced, LeaderElected, LeaderEpochBumped,
	FollowerTruncated, BrokerRegistered, CoordinatorLoadStart, CoordinatorLoadDone, OffsetCommitApplied,
	GenerationBumped, PrepareCommitDurable, MarkersWritten, BrokerFenced, TxnOffsetsApplied, SegmentRolled}

// Scope is the part of the cluster a point is in: which workloads reach it.
type Scope string

const (
	// Replication: every run that writes records reaches these.
	Replication Scope = "replication"
	// Controller: broker registrations and fences, reached by any restart
	// or expired session.
	Controller Scope = "controller"
	// Storage: log segments; reached only once a partition's log passes
	// segment.bytes (64 MiB by default, more than a short run writes).
	Storage Scope = "storage"
	// Coordinators: the load of a group or transaction coordinator shard.
	Coordinators Scope = "coordinators"
	// Groups: a consumer group's commits and rebalances.
	Groups Scope = "groups"
	// Transactions: a transaction's completion and its offsets.
	Transactions Scope = "transactions"
)

var scopes = map[Point]Scope{
	ISRExpandApplied: Replication, ISRShrinkApplied: Replication, ISRExpandRequested: Replication, HWAdvanced: Replication,
	LeaderElected: Replication, LeaderEpochBumped: Replication, FollowerTruncated: Replication,
	BrokerRegistered: Controller, BrokerFenced: Controller, SegmentRolled: Storage,
	CoordinatorLoadStart: Coordinators, CoordinatorLoadDone: Coordinators,
	OffsetCommitApplied: Groups, GenerationBumped: Groups,
	PrepareCommitDurable: Transactions, MarkersWritten: Transactions, TxnOffsetsApplied: Transactions,
}

// ScopeOf is p's scope.
func ScopeOf(p Point) Scope { return scopes[p] }

// PointsIn lists the points of the given scopes, in Points' order.
func PointsIn(in ...Scope) []Point {
	var out []Point
	for _, p := range Points {
		if slices.Contains(in, scopes[p]) {
			out = append(out, p)
		}
	}
	return out
}

// Action is what the broker does when an armed point fires.
type Action string

const (
	// Crash: the broker exits at once (os.Exit: nothing is handed over,
	// the OS keeps what was written; with --lazyfs, unsynced writes live in
	// the process and are lost: a power cut).
	Crash Action = "crash"
	// Pause: the goroutine that hit the point blocks for the duration, with
	// whatever it holds (the partition's or shard's lock): the point's
	// protocol step stalls, not the whole node.
	Pause Action = "pause"
	// Cut: every link to the node's peers (the other brokers and voters)
	// drops for the duration (the broker's own faultnet layer).
	Cut Action = "cut"
	// Hold: the response being produced at the point is held for the
	// duration. Today it is carried out as Pause: the hitting goroutine, the
	// one answering, blocks.
	Hold Action = "hold"
)

// Actions lists every action.
var Actions = []Action{Crash, Pause, Cut, Hold}

// Aim is which node an armed point acts on.
type Aim string

const (
	// AimHit (the default, ""): the node that reached the point acts (the
	// leader that applied an ISR expansion crashes).
	AimHit Aim = "hit"
	// AimAbout: the node the step is about acts (Attrs.Broker: the follower
	// an ISR change added or dropped, the follower whose fetch moved the
	// HW, the broker the controller registered or fenced); a point that
	// names no such node is about the node that reached it (leader-elected:
	// the new leader). An arm on node N with AimAbout fires at the hits
	// about N, wherever they happen, so it needs every node's points in one
	// registry: the simulation's process; a broker process sees only its
	// own hits (runtime.PointAims).
	AimAbout Aim = "about"
)

// Aims lists every aim.
var Aims = []Aim{AimHit, AimAbout}

// Known reports whether p is a point of the registry.
func Known(p Point) bool { return slices.Contains(Points, p) }

// Arm is one armed point as the control file holds it.
type Arm struct {
	// ID names the arming (the nemesis step); its firings carry it, and a
	// restarted broker counts the firings it already made against Max.
	ID     string `json:"id"`
	Point  Point  `json:"point"`
	Action Action `json:"action"`
	// Probability that a hit fires (0: 1).
	Probability float64 `json:"probability,omitempty"`
	// Max is the most firings (0: 1).
	Max int `json:"max,omitempty"`
	// ForMs is the duration of a pause, cut or hold, in milliseconds.
	ForMs int64 `json:"for_ms,omitempty"`
	// Seed seeds the probability draws.
	Seed uint64 `json:"seed,omitempty"`
	// AfterMs delays the action: 0 acts in the hitting goroutine at once;
	// otherwise the hitting goroutine goes on and the action runs AfterMs
	// later on its own (a crash a fraction of a round trip after the step,
	// once what the step sent has left).
	AfterMs int64 `json:"after_ms,omitempty"`
	// Aim is which node acts ("": AimHit).
	Aim Aim `json:"aim,omitempty"`
}

// For is the action's duration.
func (a Arm) For() time.Duration { return time.Duration(a.ForMs) * time.Millisecond }

// Check validates an arming.
func (a Arm) Check() error {
	if !Known(a.Point) {
		return fmt.Errorf("fault point %q unknown", a.Point)
	}
	if !slices.Contains(Actions, a.Action) {
		return fmt.Errorf("fault point %s: action %q unknown (crash, pause, cut, hold)", a.Point, a.Action)
	}
	if a.Aim != "" && !slices.Contains(Aims, a.Aim) {
		return fmt.Errorf("fault point %s: aim %q unknown (hit, about)", a.Point, a.Aim)
	}
	if a.Probability < 0 || a.Probability > 1 || a.Max < 0 || a.ForMs < 0 || a.AfterMs < 0 {
		return fmt.Errorf("fault point %s: probability %v, max %d, for %d ms: want 0..1 and >= 0", a.Point, a.Probability, a.Max, a.ForMs)
	}
	return nil
}

// Control is the control file's content: the points armed on the node.
type Control struct {
	Arms []Arm `json:"arms"`
}

// Attrs say what a hit is about. Topic "" means no partition.
type Attrs struct {
	Node      int32
	Topic     string
	Partition int32
	Group     string
	Txn       string
	// Broker is the broker the step is about, 0 for none: the broker a
	// controller step registered or fenced, the follower an ISR change
	// added or dropped, the follower whose fetch moved the HW (AimAbout).
	Broker int32
}

// about is the node a hit is about: Broker, or else the node that hit it.
func (a Attrs) about() int32 {
	if a.Broker != 0 {
		return a.Broker
	}
	return a.Node
}

// Firing is one fired point, as the firings file holds it (a JSON line).
type Firing struct {
	// Time is the broker's wall clock, Unix nanoseconds.
	Time      int64  `json:"time"`
	ID        string `json:"id"`
	Point     Point  `json:"point"`
	Action    Action `json:"action"`
	Node      int32  `json:"node"`
	Topic     string `json:"topic,omitempty"`
	Partition int32  `json:"partition"`
	Group     string `json:"group,omitempty"`
	Txn       string `json:"txn,omitempty"`
	Broker    int32  `json:"broker,omitempty"`
	ForMs     int64  `json:"for_ms,omitempty"`
	// N numbers the arming's firings from 1.
	N int `json:"n"`
	// HitBy is the node that reached the point when another one, Node,
	// acted (AimAbout); 0 when they are the same.
	HitBy int32 `json:"hit_by,omitempty"`
}

// Key is the firing's topic partition as the history writes keys, "" for none.
func (f Firing) Key() string {
	if f.Topic == "" {
		return ""
	}
	return fmt.Sprintf("%s/%d", f.Topic, f.Partition)
}

// Handlers are how a node carries out actions. Crash ends the node: a
// broker process does not return from it (os.Exit); a runtime holding
// brokers in its own process (the simulation) returns once the broker is
// stopping, its connections closed. Cut drops the node's peer links for d;
// Pause, if set, carries out pause and hold without blocking the hitting
// goroutine (the simulation freezes the node for d, as SIGSTOP does); unset,
// the hitting goroutine sleeps for d. Record stores a firing before its
// action runs.
type Handlers struct {
	Crash  func()
	Cut    func(d time.Duration)
	Pause  func(d time.Duration)
	Record func(Firing) error
}

// armed is an Arm in force on a node.
type armed struct {
	Arm
	node int32
	h    *Handlers
	mu   sync.Mutex
	n    int
	rng  *rand.Rand
}

// table is the armed points by name; nil when nothing is armed.
type table map[Point][]*armed

var (
	current atomic.Pointer[table]
	mu      sync.Mutex
	nodes   = map[int32]*nodeState{}
)

type nodeState struct {
	h    Handlers
	arms []*armed
}

// Hit is the protocol reaching point p. When nothing is armed it is one
// atomic load.
func Hit(p Point, a Attrs) {
	if t := current.Load(); t != nil {
		(*t).hit(p, a)
	}
}

func (t table) hit(p Point, a Attrs) {
	for _, x := range t[p] {
		at := a.Node
		if x.Aim == AimAbout {
			at = a.about()
		}
		if at != 0 && x.node != 0 && at != x.node {
			continue
		}
		if f, ok := x.fire(a); ok {
			x.act(f)
		}
	}
}

func (x *armed) fire(a Attrs) (Firing, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	limit := x.Max
	if limit <= 0 {
		limit = 1
	}
	if x.n >= limit {
		return Firing{}, false
	}
	if p := x.Probability; p > 0 && p < 1 && x.rng.Float64() >= p {
		return Firing{}, false
	}
	x.n++
	node, by := a.Node, int32(0)
	if x.Aim == AimAbout {
		node = a.about()
	}
	if node == 0 {
		node = x.node
	}
	if a.Node != 0 && a.Node != node {
		by = a.Node
	}
	return Firing{Time: time.Now().UnixNano(), ID: x.ID, Point: x.Point, Action: x.Action, Node: node,
		Topic: a.Topic, Partition: a.Partition, Group: a.Group, Txn: a.Txn, Broker: a.Broker, ForMs: x.ForMs, N: x.n,
		HitBy: by}, true
}

func (x *armed) act(f Firing) {
	if x.h.Record != nil {
		_ = x.h.Record(f) // a firing not recorded still fires: the fault is the point
	}
	if x.AfterMs > 0 {
		go func() {
			time.Sleep(time.Duration(x.AfterMs) * time.Millisecond)
			x.do()
		}()
		return
	}
	x.do()
}

func (x *armed) do() {
	switch x.Action {
	case Crash:
		if x.h.Crash != nil {
			x.h.Crash()
		}
	case Pause, Hold:
		if x.h.Pause != nil {
			x.h.Pause(x.For())
			return
		}
		time.Sleep(x.For())
	case Cut:
		if x.h.Cut != nil {
			x.h.Cut(x.For())
		}
	}
}

// Install registers node's handlers; its points are armed by Set.
func Install(node int32, h Handlers) {
	mu.Lock()
	defer mu.Unlock()
	nodes[node] = &nodeState{h: h}
	rebuild()
}

// Uninstall disarms node and forgets its handlers (the broker closed).
func Uninstall(node int32) {
	mu.Lock()
	defer mu.Unlock()
	delete(nodes, node)
	rebuild()
}

// Set arms exactly arms on node (nil disarms everything), which must be
// installed. fired counts the firings each arming ID already made (a
// restarted node's firings file), so Max holds across restarts.
func Set(node int32, arms []Arm, fired map[string]int) error {
	for _, a := range arms {
		if err := a.Check(); err != nil {
			return err
		}
	}
	mu.Lock()
	defer mu.Unlock()
	st := nodes[node]
	if st == nil {
		return fmt.Errorf("fault points: node %d has no handlers installed", node)
	}
	old := map[string]*armed{}
	for _, x := range st.arms {
		old[x.ID+"\x00"+string(x.Point)] = x
	}
	st.arms = nil
	for _, a := range arms {
		if x := old[a.ID+"\x00"+string(a.Point)]; x != nil && x.Arm == a {
			st.arms = append(st.arms, x) // unchanged: keeps its count and draws
			continue
		}
		x := &armed{Arm: a, node: node, h: &st.h, n: fired[a.ID], rng: rand.New(rand.NewPCG(a.Seed, uint64(node)))}
		st.arms = append(st.arms, x)
	}
	rebuild()
	return nil
}

// Armed returns the arms in force on node.
func Armed(node int32) []Arm {
	mu.Lock()
	defer mu.Unlock()
	var out []Arm
	if st := nodes[node]; st != nil {
		for _, x := range st.arms {
			out = append(out, x.Arm)
		}
	}
	return out
}

// rebuild publishes the table of every node's arms. Caller holds mu.
func rebuild() {
	t := table{}
	for _, st := range nodes {
		for _, x := range st.arms {
			t[x.Point] = append(t[x.Point], x)
		}
	}
	if len(t) == 0 {
		current.Store(nil)
		return
	}
	current.Store(&t)
}

// ParseControl reads a control file's content.
func ParseControl(b []byte) (Control, error) {
	var c Control
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("fault points control: %w", err)
	}
	for _, a := range c.Arms {
		if err := a.Check(); err != nil {
			return c, err
		}
	}
	return c, nil
}
