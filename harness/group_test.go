package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gregor/checker"
	"gregor/history"
	"gregor/nemesis"
	"gregor/runtime/process"
	"gregor/workloads/group"
)

// groupTest is a short group-workload run on one broker (the faults hit
// consumers, not brokers): 2 consumers on 4 partitions, 200 sends/s, a
// 6 s fault phase with the given client nemesis every ~2 s.
func groupTest(t *testing.T, name string, seed int64, kind nemesis.Kind, g group.Config) Test {
	if g.Consumers == 0 {
		g.Consumers = 2
	}
	if g.SessionTimeout == 0 {
		g.SessionTimeout = 2 * time.Second
	}
	if g.ProcessingTime == 0 {
		g.ProcessingTime = 3 * time.Millisecond
	}
	consumers := g.Consumers
	g.Consumers = 0 // Config.Consumers counts them
	return Test{
		Config: Config{Name: name, Store: t.TempDir(), Cluster: testCluster(1, 1), Partitions: 4, RF: 1,
			Workload: WorkloadGroup, Acks: "all", Retries: -1, DeliveryTimeout: 4 * time.Second, Rate: 200,
			Producers: 2, Consumers: consumers, Group: g, Seed: seed,
			Nemeses: []string{string(kind)}, Interval: 2 * time.Second, Hold: time.Millisecond,
			WarmUp: time.Second, TimeLimit: 6 * time.Second,
			RecoveryTimeout: 20 * time.Second, FinalReadTimeout: 20 * time.Second},
		Runtime: process.Runtime{Dir: t.TempDir()}, Binary: binary, CheckTimeout: 20 * time.Second,
	}
}

func runGroup(t *testing.T, tc Test) *Report {
	t.Helper()
	rep, err := Run(context.Background(), tc)
	if err != nil {
		t.Fatalf("%s: run: %v (report %+v)", tc.Name, err, rep)
	}
	if len(rep.Result.Groups) != 1 {
		t.Fatalf("%s: group figures: %+v", tc.Name, rep.Result.Groups)
	}
	g := rep.Result.Groups[0]
	t.Logf("%s: valid %s counts %v; rebalances %d (total pause %v), static rejoins %d, peak lag %d, processed %d, failed %d, ends %+v",
		tc.Name, rep.Result.Valid, rep.Result.Counts, g.RebalanceCount, time.Duration(g.TotalPause), g.StaticRejoins,
		g.PeakLag, g.Processed, g.Failed, g.Ends)
	return rep
}

// Seed 002's incident, reproduced under both auto-commits: with swallowed
// processing failures and consumers crashing mid-batch, auto-commit commits
// past records nobody processed (committed-skip, the records named) whether
// it is the Java consumer's (commit at the next poll what the previous
// polls returned) or greedy (everything polled): the failed record was
// polled past either way. Over the same seed, committing after processing
// with retries skips nothing, and the crashes make the next owner process
// records again (redelivered: at-least-once).
func TestGroupAutoCommitSkipsCommitAfterRedelivers(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	if testing.Short() {
		t.Skip("three 8 s cluster runs")
	}
	const seed = 21
	for _, mode := range []string{group.CommitAuto, group.CommitAutoGreedy} {
		auto := runGroup(t, groupTest(t, mode, seed, nemesis.ClientCrash, group.Config{CommitMode: mode,
			AutoCommitInterval: 300 * time.Millisecond, FailureRate: 0.03, FailureHandling: group.Swallow}))
		res := auto.Result
		if res.Counts[checker.CommittedSkip] == 0 {
			t.Fatalf("%s with swallowed failures: no committed-skip: %v", mode, res.Counts)
		}
		ex := res.Anomalies[checker.CommittedSkip][0]
		if len(ex.Offsets) == 0 || len(ex.Values) != len(ex.Offsets) || ex.Key == "" {
			t.Errorf("%s: committed-skip example does not name the skipped records: %+v", mode, ex)
		}
		if _, ok := res.Allowed[checker.CommittedSkip]; !ok || res.Valid == checker.ValidFalse {
			t.Errorf("%s: committed-skip must be an unsafe configuration demonstrated: valid %v forbidden %v", mode, res.Valid, res.Forbidden)
		}
		if g := res.Groups[0]; g.Failed == 0 || len(g.Ends) == 0 {
			t.Errorf("%s: no failed record or no crash: %+v", mode, g)
		}
	}

	after := runGroup(t, groupTest(t, "after", seed, nemesis.ClientCrash, group.Config{CommitMode: group.CommitAfter,
		FailureRate: 0.03, FailureHandling: group.Retry}))
	res := after.Result
	if n := res.Counts[checker.CommittedSkip]; n != 0 {
		t.Fatalf("commit after processing with retries: %d committed-skip: %v", n, res.Anomalies[checker.CommittedSkip])
	}
	if res.Counts[checker.Redelivered] == 0 {
		t.Fatalf("commit after processing under crashes: nothing redelivered: %v", res.Counts)
	}
	if res.Valid == checker.ValidFalse {
		t.Fatalf("forbidden: %v", res.Forbidden)
	}
	perCrash := 0
	for _, e := range res.Groups[0].Ends {
		perCrash += e.Redelivered
	}
	if perCrash == 0 {
		t.Errorf("no redelivery attributed to a crash: %+v", res.Groups[0].Ends)
	}
}

// Seed 000's experiment B, steps 1-3: two consumers, a third joins; the
// rebalance it triggers moves partitions to it, with its pause and lag
// measured and shown in the report.
func TestGroupExperimentBJoin(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	if testing.Short() {
		t.Skip("an 8 s cluster run")
	}
	tc := groupTest(t, "join", 5, nemesis.ConsumerJoin, group.Config{CommitMode: group.CommitAfter, ProcessingTime: 5 * time.Millisecond})
	tc.Interval = 4 * time.Second // one join within the 6 s
	rep := runGroup(t, tc)
	g := rep.Result.Groups[0]
	var join *checker.RebalanceFigure
	for i, r := range g.Rebalances {
		if !r.Initial && !r.Shutdown && r.Members == 3 {
			join = &g.Rebalances[i]
		}
	}
	if join == nil {
		t.Fatalf("no rebalance to 3 members after the join: %+v", g.Rebalances)
	}
	if join.Moved == 0 || join.End < join.Start || join.LagPeak < join.LagBefore || join.UnownedTime <= 0 {
		t.Errorf("join rebalance: %+v", *join)
	}
	html, err := os.ReadFile(filepath.Join(rep.Dir, history.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="group-gregor-group"`, `class="lag-chart"`, "rebalance"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// Seed 000's experiment B, step 4: under rolling restarts,
// cooperative-sticky with static membership rebalances less and pauses the
// group for less in total than eager range without static ids.
func TestGroupRollingRestartCooperativeStatic(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	if testing.Short() {
		t.Skip("two 8 s cluster runs")
	}
	mk := func(name, assignor string, static bool) Test {
		tc := groupTest(t, name, 9, nemesis.ConsumerRestart, group.Config{CommitMode: group.CommitAfter,
			Assignor: assignor, Static: static, Consumers: 3, SessionTimeout: 3 * time.Second})
		tc.Interval = 3 * time.Second
		return tc
	}
	eager := runGroup(t, mk("eager", group.Range, false)).Result.Groups[0]
	coop := runGroup(t, mk("coop", group.CooperativeSticky, true)).Result.Groups[0]
	if eager.RebalanceCount == 0 || eager.TotalPause <= 0 {
		t.Fatalf("eager range rolling restart: %d rebalances, pause %v", eager.RebalanceCount, time.Duration(eager.TotalPause))
	}
	if coop.RebalanceCount >= eager.RebalanceCount || coop.TotalPause >= eager.TotalPause {
		t.Fatalf("cooperative-sticky+static: %d rebalances, pause %v; eager range: %d, %v",
			coop.RebalanceCount, time.Duration(coop.TotalPause), eager.RebalanceCount, time.Duration(eager.TotalPause))
	}
	if coop.StaticRejoins == 0 {
		t.Errorf("no static member replaced without a rebalance")
	}
}

// KIP-848 consumer groups (--group-protocol consumer) and the planted bug
// assign-before-revoke: commit before processing (at-most-once, so a
// redelivery is forbidden) while a third consumer joins. On a correct
// broker the joiner gets partitions only once their owner revoked them
// (having committed everything it polled): nothing is processed twice.
// With the bug the joiner starts at the old owner's last commit while the
// old owner still consumes: both process the same records, and the group
// checker reports them (redelivered, forbidden).
func TestGroupConsumerProtocolAssignBeforeRevoke(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	if testing.Short() {
		t.Skip("two 8 s cluster runs")
	}
	mk := func(name string, bugs ...string) Test {
		tc := groupTest(t, name, 7, nemesis.ConsumerJoin, group.Config{CommitMode: group.CommitBefore,
			GroupProtocol: group.ProtocolConsumer, ProcessingTime: 5 * time.Millisecond})
		tc.Cluster.Bugs = bugs
		// The broker's KIP-848 heartbeat interval, shortened so that the
		// joiner's partitions move within the run.
		tc.Cluster.BrokerArgs = append(tc.Cluster.BrokerArgs, "--consumer-heartbeat-interval=500ms", "--consumer-session-timeout=10s")
		tc.Interval = 3 * time.Second
		return tc
	}
	correct := runGroup(t, mk("consumer-correct")).Result
	if correct.Valid != checker.ValidTrue || correct.Counts[checker.Redelivered] != 0 {
		t.Fatalf("correct broker, consumer protocol: valid %v, counts %v, forbidden %v", correct.Valid, correct.Counts, correct.Forbidden)
	}
	if g := correct.Groups[0]; g.Processed == 0 || g.RebalanceCount == 0 {
		t.Fatalf("correct broker: nothing processed or no rebalance: %+v", g)
	}
	bugged := runGroup(t, mk("consumer-bug", "assign-before-revoke")).Result
	if bugged.Counts[checker.Redelivered] == 0 || bugged.Valid != checker.ValidFalse {
		t.Fatalf("assign-before-revoke: valid %v, counts %v: want redelivered, forbidden", bugged.Valid, bugged.Counts)
	}
	if _, ok := bugged.Forbidden[checker.Redelivered]; !ok {
		t.Fatalf("assign-before-revoke: redelivered not forbidden: %v", bugged.Forbidden)
	}
}
