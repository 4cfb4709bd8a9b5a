package cluster

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/cluster/meta"
	"gregor/cluster/replica"
)

// TestScenarios runs the cluster scenarios written as data in
// testdata/scenarios (etcd raft's style: each file is one story told as
// commands, each command followed by the output it must print). Every wait
// is a condition polled to a bounded deadline; no command sleeps. Run with
// -rewrite to regenerate the expected outputs after a deliberate change.
//
// The commands (node arguments take a name bound by bind, or a node id):
//
//	start brokers=N controllers=M [session=D] [heartbeat=D] [lag=D] [bugs=(name,...)] [metrics]
//	create-topic name=T rf=R [min-isr=N]
//	bind topic=T [leader=A] [followers=(X,Y)] [follower=F]
//	    names the current leader, the followers in replica order, or one
//	    follower that is not the active controller (cutting it off from the
//	    leader must not also cut the leader off from the controller)
//	produce topic=T acks=all|1 (values=(v,...) | prefix=P n=N) [timeout=D]
//	    through franz-go; acks=all successes are the "acknowledged" records
//	produce-raw topic=T acks=all|1 value=V [timeout=D]
//	    one Produce request to the leader; prints the partition's error
//	kill node=A | stop node=A | restart node=A    (SIGKILL, SIGTERM, start)
//	block node=A from=(X,Y)    drop traffic both ways; heal    undo all
//	mark name=M    check elapsed since=M [min=D] [max=D]
//	wait isr topic=T (size=N | with=A | without=A) [within=D]
//	wait leader topic=T (is=A | not=A) [within=D]
//	wait following node=Y leader=X topic=T [within=D]
//	wait caught-up topic=T nodes=(X,Y) leo=N [within=D]
//	wait metrics node=A [under-replicated=N] [under-min-isr=N] [leader-count=N] [isr-shrinks-min=N] [within=D]
//	catch-stale-hw topic=T follower=Y cut-from=(A,X) [attempts=N]
//	offsets node=A topic=T    prints start, HW and LEO
//	read topic=T [save=S]    prints every record of partition 0, in order (or saves them)
//	check acked topic=T [set=S]    every acknowledged (or saved) record reads back
//	check absent topic=T values=(v,...)
//	check logs-identical topic=T [within=D]
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		s := newScenario(t)
		datadriven.RunTest(t, path, s.run)
	})
}

// scenario is one file's state: the cluster and what the story remembers.
type scenario struct {
	// t is the file's test, which owns the cluster (nil in the
	// interpreter's own test, which never starts one).
	t     *testing.T
	tc    *testCluster
	names map[string]int
	marks map[string]time.Time
	// acked holds, per topic, the values an acks=all produce acknowledged.
	acked map[string][]string
	saved map[string][]string
}

func newScenario(t *testing.T) *scenario {
	return &scenario{t: t, names: map[string]int{}, marks: map[string]time.Time{}, saved: map[string][]string{}, acked: map[string][]string{}}
}

func (s *scenario) run(t *testing.T, d *datadriven.TestData) string { return s.runTB(t, d) }

func (s *scenario) runTB(t testing.TB, d *datadriven.TestData) string {
	t.Helper()
	if s.tc == nil && d.Cmd != "start" && d.Cmd != "mark" && !(d.Cmd == "check" && d.HasArg("elapsed")) {
		d.Fatalf(t, "%s before start", d.Cmd)
	}
	switch d.Cmd {
	case "start":
		return s.start(t, d)
	case "create-topic":
		var name string
		var rf int
		d.ScanArgs(t, "name", &name)
		d.ScanArgs(t, "rf", &rf)
		var configs map[string]*string
		if a, ok := d.Arg("min-isr"); ok {
			v := a.SingleVal(t)
			configs = map[string]*string{meta.ConfigMinISR: &v}
		}
		s.tc.createTopic(name, 1, int16(rf), configs)
		return ""
	case "bind":
		return s.bind(t, d)
	case "produce":
		return s.produce(t, d)
	case "produce-raw":
		topic, acks := s.str(t, d, "topic"), s.acks(t, d)
		value := s.str(t, d, "value")
		code := s.tc.rawProduceWith(topic, acks, value, int32(s.dur(t, d, "timeout", 5*time.Second)/time.Millisecond))
		if code == 0 {
			if acks == -1 {
				s.acked[topic] = append(s.acked[topic], value)
			}
			return "ok"
		}
		return kerr.ErrorForCode(code).(*kerr.Error).Message
	case "kill":
		s.tc.kill(s.node(t, d, "node"))
		return ""
	case "stop":
		s.tc.stop(s.node(t, d, "node"))
		return ""
	case "restart":
		s.tc.start(s.node(t, d, "node"))
		return ""
	case "block":
		s.tc.block(s.node(t, d, "node"), s.nodes(t, d, "from")...)
		return ""
	case "heal":
		s.tc.heal()
		return ""
	case "mark":
		s.marks[s.str(t, d, "name")] = time.Now()
		return ""
	case "wait":
		return s.wait(t, d)
	case "catch-stale-hw":
		return s.catchStaleHW(t, d)
	case "offsets":
		start, hw, leo := s.partition(t, s.node(t, d, "node"), s.str(t, d, "topic")).Offsets()
		return fmt.Sprintf("start=%d hw=%d leo=%d", start, hw, leo)
	case "read":
		got := s.tc.readAll(s.str(t, d, "topic"))
		if a, ok := d.Arg("save"); ok {
			// Saved, not printed: what a scenario saves may vary from
			// run to run (a retried record, say).
			s.saved[a.SingleVal(t)] = got
			return "saved as " + a.SingleVal(t)
		}
		return strings.Join(got, " ")
	case "check":
		return s.check(t, d)
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

func (s *scenario) start(t testing.TB, d *datadriven.TestData) string {
	if s.t == nil {
		d.Fatalf(t, "start needs the file's own test")
	}
	var brokers, controllers int
	d.ScanArgs(t, "brokers", &brokers)
	d.MaybeScanArgs(t, "controllers", &controllers)
	var bugNames []string
	if a, ok := d.Arg("bugs"); ok {
		bugNames = a.Vals
	}
	bugs, err := ParseBugs(bugNames)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	session := s.dur(t, d, "session", testSession)
	heartbeat := s.dur(t, d, "heartbeat", 250*time.Millisecond)
	lag := s.dur(t, d, "lag", testLagMax)
	metrics := d.HasArg("metrics")
	s.tc = startClusterWith(s.t, brokers, controllers, func(c *Config) {
		c.SessionTimeout, c.HeartbeatInterval, c.ReplicaLagMax, c.Bugs = session, heartbeat, lag, bugs
		if metrics {
			c.MetricsListen = hostOf(c.Listen) + ":0"
		}
	})
	return ""
}

func (s *scenario) bind(t testing.TB, d *datadriven.TestData) string {
	topic := s.str(t, d, "topic")
	st := s.state(t, topic)
	var out []string
	if a, ok := d.Arg("leader"); ok {
		s.names[a.SingleVal(t)] = int(st.Leader)
		out = append(out, a.SingleVal(t)+" leads")
	}
	if a, ok := d.Arg("followers"); ok {
		var fs []int
		for _, r := range st.Replicas {
			if r != st.Leader {
				fs = append(fs, int(r))
			}
		}
		if len(fs) != len(a.Vals) {
			d.Fatalf(t, "%d followers, %d names", len(fs), len(a.Vals))
		}
		for i, n := range a.Vals {
			s.names[n] = fs[i]
		}
		out = append(out, strings.Join(a.Vals, ", ")+" follow")
	}
	if a, ok := d.Arg("follower"); ok {
		f := s.tc.follower(topic)
		if f < 0 {
			d.Fatalf(t, "every follower is the active controller")
		}
		s.names[a.SingleVal(t)] = f
		out = append(out, a.SingleVal(t)+" follows, not the active controller")
	}
	return strings.Join(out, "\n")
}

func (s *scenario) produce(t testing.TB, d *datadriven.TestData) string {
	topic, acks := s.str(t, d, "topic"), s.acks(t, d)
	var values []string
	if a, ok := d.Arg("values"); ok {
		values = a.Vals
	} else {
		var n int
		d.ScanArgs(t, "n", &n)
		p := s.str(t, d, "prefix")
		for i := range n {
			values = append(values, p+strconv.Itoa(i))
		}
	}
	opts := []kgo.Opt{kgo.RecordDeliveryTimeout(s.dur(t, d, "timeout", 10*time.Second))}
	if acks == -1 {
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	} else {
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	}
	cl := s.tc.client(opts...)
	var out []string
	ok := 0
	for _, v := range values {
		if _, err := produce(cl, topic, v); err != nil {
			out = append(out, v+": not acknowledged")
			continue
		}
		ok++
		if acks == -1 {
			s.acked[topic] = append(s.acked[topic], v)
		}
	}
	return strings.Join(append([]string{fmt.Sprintf("%d acknowledged", ok)}, out...), "\n")
}

func (s *scenario) wait(t testing.TB, d *datadriven.TestData) string {
	if len(d.CmdArgs) == 0 {
		d.Fatalf(t, "wait what?")
	}
	what := d.CmdArgs[0].Key
	within := s.dur(t, d, "within", 10*time.Second)
	switch what {
	case "isr":
		topic := s.str(t, d, "topic")
		var cond func([]int32) bool
		var desc string
		switch {
		case d.HasArg("size"):
			var n int
			d.ScanArgs(t, "size", &n)
			cond, desc = func(isr []int32) bool { return len(isr) == n }, fmt.Sprintf("ISR size %d", n)
		case d.HasArg("with"):
			id := s.node(t, d, "with")
			cond, desc = func(isr []int32) bool { return slices.Contains(isr, int32(id)) }, s.str(t, d, "with")+" in the ISR"
		case d.HasArg("without"):
			id := s.node(t, d, "without")
			cond, desc = func(isr []int32) bool { return !slices.Contains(isr, int32(id)) }, s.str(t, d, "without")+" out of the ISR"
		default:
			d.Fatalf(t, "wait isr needs size, with or without")
		}
		s.tc.waitFor(desc, within, func() error {
			if isr := s.tc.isr(topic, 0); !cond(isr) {
				return fmt.Errorf("isr %v", isr)
			}
			return nil
		})
		return desc
	case "leader":
		topic := s.str(t, d, "topic")
		var cond func(int32) bool
		var desc string
		switch {
		case d.HasArg("is"):
			id := int32(s.node(t, d, "is"))
			cond, desc = func(l int32) bool { return l == id }, s.str(t, d, "is")+" leads"
		case d.HasArg("not"):
			id := int32(s.node(t, d, "not"))
			cond, desc = func(l int32) bool { return l != id && l != meta.NoLeader }, "a leader other than "+s.str(t, d, "not")
		default:
			d.Fatalf(t, "wait leader needs is or not")
		}
		s.tc.waitFor(desc, within, func() error {
			if l := s.tc.leader(topic, 0); !cond(l) {
				return fmt.Errorf("leader %d (isr %v)", l, s.tc.isr(topic, 0))
			}
			return nil
		})
		return desc
	case "following":
		topic, y, x := s.str(t, d, "topic"), s.node(t, d, "node"), s.node(t, d, "leader")
		// The broker starts the fetcher for a new leader and epoch in the
		// same metadata apply that updates the replica: once the replica
		// follows x, the fetcher's first step (reconciling its log) is
		// under way.
		s.tc.waitFor("following", within, func() error {
			pos := s.partition(t, y, topic).Position()
			if pos.Leader != int32(x) {
				return fmt.Errorf("node %d follows %d", y, pos.Leader)
			}
			return nil
		})
		return s.str(t, d, "node") + " follows " + s.str(t, d, "leader")
	case "caught-up":
		topic := s.str(t, d, "topic")
		var n int
		d.ScanArgs(t, "leo", &n)
		leo := int64(n)
		ids := s.nodes(t, d, "nodes")
		s.tc.waitFor("LEOs", within, func() error {
			for _, id := range ids {
				if _, _, got := s.partition(t, id, topic).Offsets(); got != leo {
					return fmt.Errorf("node %d LEO %d", id, got)
				}
			}
			return nil
		})
		a, _ := d.Arg("nodes")
		return fmt.Sprintf("%s at LEO %d", strings.Join(a.Vals, ", "), leo)
	case "metrics":
		return s.waitMetrics(t, d, within)
	}
	d.Fatalf(t, "unknown wait %q", what)
	return ""
}

func (s *scenario) waitMetrics(t testing.TB, d *datadriven.TestData, within time.Duration) string {
	b := s.tc.brokers[s.node(t, d, "node")-1]
	type want struct {
		metric string
		min    bool
		v      int64
	}
	var wants []want
	var desc []string
	for _, a := range []struct{ arg, metric string }{
		{"under-replicated", "kafka_server_replicamanager_underreplicatedpartitions"},
		{"under-min-isr", "kafka_server_replicamanager_underminisrpartitioncount"},
		{"leader-count", "kafka_server_replicamanager_leadercount"},
		{"isr-shrinks-min", "kafka_server_replicamanager_isrshrinks_total"},
	} {
		if !d.HasArg(a.arg) {
			continue
		}
		var n int
		d.ScanArgs(t, a.arg, &n)
		v := int64(n)
		wants = append(wants, want{a.metric, strings.HasSuffix(a.arg, "-min"), v})
		desc = append(desc, fmt.Sprintf("%s=%d", a.arg, v))
	}
	s.tc.waitFor("metrics", within, func() error {
		m := scrape(s.tc.t, b)
		for _, w := range wants {
			if got := m[w.metric]; got != w.v && !(w.min && got >= w.v) {
				return fmt.Errorf("%s = %d, want %d", w.metric, got, w.v)
			}
		}
		return nil
	})
	return "metrics " + strings.Join(desc, " ")
}

// catchStaleHW produces record m until follower y has m at its LEO but its
// HW still below m (the fetch response carrying the new HW is
// long-polling), then cuts y off from the brokers cutFrom. Between
// attempts it heals and waits for y's HW to catch the leader's, so the
// next attempt starts from a replica in step.
func (s *scenario) catchStaleHW(t testing.TB, d *datadriven.TestData) string {
	topic, y := s.str(t, d, "topic"), s.node(t, d, "follower")
	from := s.nodes(t, d, "cut-from")
	attempts := 5
	d.MaybeScanArgs(t, "attempts", &attempts)
	cl := s.tc.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(10*time.Second))
	for attempt := range attempts {
		v := fmt.Sprint("m", attempt)
		r, err := produce(cl, topic, v)
		if err != nil {
			d.Fatalf(t, "produce %s: %v", v, err)
		}
		s.acked[topic] = append(s.acked[topic], v)
		s.tc.block(y, from...)
		_, hwY, leoY := s.partition(t, y, topic).Offsets()
		if leoY == r.Offset+1 && hwY <= r.Offset {
			return fmt.Sprintf("%s holds m at its LEO with its HW behind it", s.str(t, d, "follower"))
		}
		s.tc.heal()
		leader := s.partition(t, int(s.tc.leader(topic, 0)), topic)
		s.tc.waitFor("follower HW caught up", 10*time.Second, func() error {
			_, hwL, _ := leader.Offsets()
			if _, hw, _ := s.partition(t, y, topic).Offsets(); hw != hwL {
				return fmt.Errorf("follower HW %d, leader HW %d", hw, hwL)
			}
			return nil
		})
	}
	d.Fatalf(t, "could not catch the follower's HW behind the leader's in %d attempts", attempts)
	return ""
}

func (s *scenario) check(t testing.TB, d *datadriven.TestData) string {
	if len(d.CmdArgs) == 0 {
		d.Fatalf(t, "check what?")
	}
	switch d.CmdArgs[0].Key {
	case "acked":
		topic := s.str(t, d, "topic")
		want, what := s.acked[topic], "acknowledged"
		if a, ok := d.Arg("set"); ok {
			want, what = s.saved[a.SingleVal(t)], a.SingleVal(t)
		}
		if len(want) == 0 {
			d.Fatalf(t, "no %s records to check", what)
		}
		got := s.tc.readAll(topic)
		var lost []string
		for _, v := range want {
			if !slices.Contains(got, v) {
				lost = append(lost, v)
			}
		}
		if len(lost) > 0 {
			// The count, not the values: which attempt's record is lost
			// varies from run to run.
			return fmt.Sprintf("%d of the %s records lost", len(lost), what)
		}
		return fmt.Sprintf("every %s record reads back", what)
	case "absent":
		topic := s.str(t, d, "topic")
		got := s.tc.readAll(topic)
		var found []string
		a, ok := d.Arg("values")
		if !ok {
			d.Fatalf(t, "check absent needs values")
		}
		for _, v := range a.Vals {
			if slices.Contains(got, v) {
				found = append(found, v)
			}
		}
		if len(found) > 0 {
			return "stored: " + strings.Join(found, " ")
		}
		return "none stored"
	case "logs-identical":
		topic := s.str(t, d, "topic")
		var ids []int
		for id := 1; id <= s.tc.n; id++ {
			ids = append(ids, id)
		}
		s.tc.waitFor("replica logs identical", s.dur(t, d, "within", 10*time.Second), func() error {
			ref := logBytes(s.tc.t, s.tc.brokers[ids[0]-1], topic)
			for _, id := range ids[1:] {
				if b := logBytes(s.tc.t, s.tc.brokers[id-1], topic); !bytes.Equal(b, ref) {
					return fmt.Errorf("node %d's log (%d bytes) differs from node %d's (%d bytes)", id, len(b), ids[0], len(ref))
				}
			}
			return nil
		})
		return fmt.Sprintf("%d replica logs identical", len(ids))
	case "elapsed":
		since, ok := s.marks[s.str(t, d, "since")]
		if !ok {
			d.Fatalf(t, "no mark %q", s.str(t, d, "since"))
		}
		took := time.Since(since)
		lo, hi := s.dur(t, d, "min", 0), s.dur(t, d, "max", time.Hour)
		if took < lo || took > hi {
			return fmt.Sprintf("took %v, outside [%v, %v]", took, lo, hi)
		}
		return fmt.Sprintf("within [%v, %v]", lo, hi)
	}
	d.Fatalf(t, "unknown check %q", d.CmdArgs[0].Key)
	return ""
}

// Argument helpers: a missing or malformed argument fails the file at the
// command, naming it.

func (s *scenario) str(t testing.TB, d *datadriven.TestData, key string) string {
	a, ok := d.Arg(key)
	if !ok {
		d.Fatalf(t, "missing argument %s", key)
	}
	return a.SingleVal(t)
}

func (s *scenario) dur(t testing.TB, d *datadriven.TestData, key string, def time.Duration) time.Duration {
	a, ok := d.Arg(key)
	if !ok {
		return def
	}
	v, err := time.ParseDuration(a.SingleVal(t))
	if err != nil {
		d.Fatalf(t, "%s: %v", key, err)
	}
	return v
}

func (s *scenario) acks(t testing.TB, d *datadriven.TestData) int16 {
	switch v := s.str(t, d, "acks"); v {
	case "all":
		return -1
	case "1":
		return 1
	default:
		d.Fatalf(t, "acks=%s: use all or 1", v)
	}
	return 0
}

func (s *scenario) nodeID(t testing.TB, d *datadriven.TestData, v string) int {
	if id, ok := s.names[v]; ok {
		return id
	}
	id, err := strconv.Atoi(v)
	if err != nil || id < 1 || id > len(s.tc.cfgs) {
		d.Fatalf(t, "node %q: not a bound name or a node id", v)
	}
	return id
}

func (s *scenario) node(t testing.TB, d *datadriven.TestData, key string) int {
	return s.nodeID(t, d, s.str(t, d, key))
}

func (s *scenario) nodes(t testing.TB, d *datadriven.TestData, key string) []int {
	a, ok := d.Arg(key)
	if !ok {
		d.Fatalf(t, "missing argument %s", key)
	}
	var out []int
	for _, v := range a.Vals {
		out = append(out, s.nodeID(t, d, v))
	}
	return out
}

func (s *scenario) state(t testing.TB, topic string) meta.Partition {
	tp := s.tc.any().Image().Topics[topic]
	if tp == nil {
		t.Fatalf("topic %s unknown", topic)
	}
	return tp.Partitions[0]
}

func (s *scenario) partition(t testing.TB, id int, topic string) *replica.Partition {
	b := s.tc.brokers[id-1]
	if b == nil {
		t.Fatalf("node %d is down", id)
	}
	p := b.Partition(topic, 0)
	if p == nil {
		t.Fatalf("node %d has no replica of %s", id, topic)
	}
	return p
}

// recordingTB records the failure a scenario reports instead of failing
// the test: Fatal ends the scenario's goroutine, as testing's does.
type recordingTB struct {
	testing.TB
	failed chan string
}

func (r *recordingTB) Helper()             {}
func (r *recordingTB) Logf(string, ...any) {}
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.failed <- fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recordingTB) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

// runScript runs a scenario script and returns the first failure, or "".
func runScript(t *testing.T, script string) string {
	r := &recordingTB{TB: t, failed: make(chan string, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := newScenario(nil)
		datadriven.RunTestFromStringAny(r, script, s.runTB)
	}()
	<-done
	select {
	case f := <-r.failed:
		return f
	default:
		return ""
	}
}

// TestScenarioInterpreter: a scenario whose cluster disagrees with the
// expected output fails, and so does a command the interpreter does not
// know; an agreeing one passes. (The cluster-free commands stand in for
// the rest: every command's output goes through the same comparison.)
func TestScenarioInterpreter(t *testing.T) {
	pass := "mark name=m\n----\n\ncheck elapsed since=m max=1h\n----\nwithin [0s, 1h0m0s]\n"
	if f := runScript(t, pass); f != "" {
		t.Fatalf("agreeing scenario failed: %s", f)
	}
	for name, script := range map[string]string{
		"wrong expectation": "mark name=m\n----\n\ncheck elapsed since=m min=1h\n----\nwithin [1h0m0s, 1h0m0s]\n",
		"unknown command":   "teleport node=1\n----\n",
		"before start":      "kill node=1\n----\n",
		"unknown mark":      "check elapsed since=nowhere\n----\n",
	} {
		if f := runScript(t, script); f == "" {
			t.Errorf("%s: the scenario passed", name)
		}
	}
}
