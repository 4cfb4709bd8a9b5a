package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The DESIGN.md section 4 example, verbatim (TestDesignExampleIsDESIGNs
// holds it to the file): it must decode and re-encode byte for byte.
const designExample = `{"index":0,"time":1200345,"process":0,"type":"invoke","f":"send","value":[["send","t/0",17]]}
{"index":1,"time":1900120,"process":0,"type":"ok","f":"send","value":[["send","t/0",[42,17]]]}
{"index":2,"time":2000000,"process":1,"type":"invoke","f":"assign","value":["t/0","t/1"]}
{"index":3,"time":2000100,"process":1,"type":"ok","f":"assign","value":["t/0","t/1"]}
{"index":4,"time":2100000,"process":1,"type":"invoke","f":"poll","value":[["poll"]]}
{"index":5,"time":2300000,"process":1,"type":"ok","f":"poll","value":[["poll",{"t/0":[[41,16],[42,17]]}]]}
{"index":6,"time":2400000,"process":"nemesis","type":"info","f":"kill","value":{"nodes":[2]}}
{"index":7,"time":2500000,"process":2,"type":"ok","f":"commit","value":{"t/0":43},"group":"g"}
{"index":8,"time":2600000,"process":2,"type":"ok","f":"process","value":{"t/0":[[42,17]]},"group":"g"}
{"index":9,"time":2700000,"process":0,"type":"fail","f":"send","value":[["send","t\"/1",18]],"error":"NOT_ENOUGH_REPLICAS"}
`

// The example above is the one DESIGN.md section 4 shows: the contract's
// example is the one the codec is tested with.
func TestDesignExampleIsDESIGNs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "DESIGN.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	sec := strings.Index(doc, "## 4. History format")
	if sec < 0 {
		t.Fatal("DESIGN.md has no section 4, History format")
	}
	start := strings.Index(doc[sec:], "```\n")
	if start < 0 {
		t.Fatal("DESIGN.md section 4 has no example block")
	}
	block := doc[sec+start+4:]
	block = block[:strings.Index(block, "```")]
	if block != designExample {
		t.Fatalf("DESIGN.md section 4's example differs from the one the codec is tested with:\n%s\nwant\n%s", block, designExample)
	}
}

func TestRoundTripDesignExample(t *testing.T) {
	ops, lines, warns, err := ReadAll(strings.NewReader(designExample))
	if err != nil || len(warns) != 0 {
		t.Fatalf("read: %v %v", err, warns)
	}
	if len(ops) != 10 || lines[9] != 10 {
		t.Fatalf("got %d ops, lines %v", len(ops), lines)
	}
	if m := ops[1].Mops[0]; m.Kind != MopSend || m.Key != "t/0" || m.Offset != 42 || m.Value != 17 {
		t.Fatalf("send mop: %+v", m)
	}
	if m := ops[0].Mops[0]; m.Offset != NoOffset {
		t.Fatalf("invoked send has offset %d", m.Offset)
	}
	if p := ops[5].Mops[0].Polls; len(p) != 1 || p[0].Key != "t/0" || p[0].Records[1] != (Record{42, 17}) {
		t.Fatalf("poll: %+v", p)
	}
	if ops[4].Mops[0].Polls != nil {
		t.Fatal("invoked poll has records")
	}
	if ops[6].Process != Nemesis || string(ops[6].Raw) != `{"nodes":[2]}` {
		t.Fatalf("nemesis op: %+v", ops[6])
	}
	if ops[7].Offsets[0] != (KeyOffset{"t/0", 43}) || ops[7].Group != "g" {
		t.Fatalf("commit: %+v", ops[7])
	}
	if ops[9].Error != "NOT_ENOUGH_REPLICAS" || ops[9].Mops[0].Key != `t"/1` {
		t.Fatalf("fail: %+v", ops[9])
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, 0)
	for _, op := range ops {
		if _, err := w.Write(op); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.String() != designExample {
		t.Fatalf("re-encoded differs:\n%s", buf.String())
	}
	// The hand-written encoder must produce what encoding/json accepts.
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("not JSON: %s: %v", l, err)
		}
	}
}

func TestReaderReportsLineAndProblem(t *testing.T) {
	good := `{"index":0,"time":1,"process":0,"type":"invoke","f":"poll","value":[["poll"]]}` + "\n"
	cases := []struct {
		name, input, want string
		line              int
	}{
		{"bad type", good + `{"index":1,"time":2,"process":0,"type":"okay","f":"poll","value":[["poll"]]}` + "\n", `"type"`, 2},
		{"float offset", good + `{"index":1,"time":2,"process":0,"type":"ok","f":"send","value":[["send","k",[1.5,2]]]}` + "\n", "integer", 2},
		{"missing f", good + `{"index":1,"time":2,"process":0,"type":"ok"}` + "\n", `"f"`, 2},
		{"index backwards", good + `{"index":0,"time":2,"process":0,"type":"ok","f":"poll","value":[["poll",{}]]}` + "\n", "index", 2},
		{"broken middle line", good + `{"index":1,"time` + "\n" + good, "", 2},
		{"bad process", `{"index":0,"time":1,"process":"bob","type":"invoke","f":"poll"}` + "\n", "nemesis", 1},
		{"unknown mop", `{"index":0,"time":1,"process":0,"type":"invoke","f":"send","value":[["put","k",1]]}` + "\n", "micro-op", 1},
	}
	for _, c := range cases {
		_, _, _, err := ReadAll(strings.NewReader(c.input))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("%s: want ParseError, got %v", c.name, err)
		}
		if pe.Line != c.line || !strings.Contains(pe.Msg, c.want) {
			t.Errorf("%s: got line %d %q, want line %d containing %q", c.name, pe.Line, pe.Msg, c.line, c.want)
		}
	}
}

func TestReaderToleratesOnlyTruncatedLastLine(t *testing.T) {
	good := `{"index":0,"time":1,"process":0,"type":"invoke","f":"poll","value":[["poll"]]}` + "\n"
	ops, _, warns, err := ReadAll(strings.NewReader(good + `{"index":1,"time":2,"pro`))
	if err != nil || len(ops) != 1 || len(warns) != 1 || !strings.Contains(warns[0], "line 2") {
		t.Fatalf("truncated tail: ops=%d warns=%v err=%v", len(ops), warns, err)
	}
	// The same broken text followed by a newline was written whole: an error.
	if _, _, _, err := ReadAll(strings.NewReader(good + `{"index":1,"time":2,"pro` + "\n")); err == nil {
		t.Fatal("a broken complete line was accepted")
	}
	// A complete last line without its newline is fine.
	ops, _, warns, err = ReadAll(strings.NewReader(strings.TrimSuffix(good, "\n")))
	if err != nil || len(ops) != 1 || len(warns) != 0 {
		t.Fatalf("unterminated good line: %d %v %v", len(ops), warns, err)
	}
}

func TestWriterConcurrentIndexesAreDense(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, DefaultFlushInterval)
	const procs, each = 8, 200
	var wg sync.WaitGroup
	for p := 0; p < procs; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				op := Op{Time: int64(i), Process: Process(p), Type: Invoke, F: FSend, Mops: []Mop{Send("t/0", int64(p*each+i))}}
				if _, err := w.Write(op); err != nil {
					t.Error(err)
					return
				}
			}
		}(p)
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := NewReader(&buf)
	seen := map[int64]bool{}
	for i := int64(0); ; i++ {
		op, err := r.Next()
		if err == io.EOF {
			if i != procs*each {
				t.Fatalf("read %d ops, want %d", i, procs*each)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if op.Index != i || seen[op.Mops[0].Value] {
			t.Fatalf("op %d: index %d, value %d seen twice=%v", i, op.Index, op.Mops[0].Value, seen[op.Mops[0].Value])
		}
		seen[op.Mops[0].Value] = true
	}
	if _, err := w.Write(Op{F: FPoll, Type: Invoke}); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
}

func TestConfigAcksNormalized(t *testing.T) {
	var c Config
	if err := json.Unmarshal([]byte(`{"acks":"-1","min_isr":2,"rf":3,"time_limit":"90s","nemeses":["kill"]}`), &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Normalize(); err != nil || c.Acks != "all" || c.TimeLimit != Duration(90e9) || !c.HasNemesis("kill") {
		t.Fatalf("%+v %v", c, err)
	}
	c.Acks = "2"
	if c.Normalize() == nil {
		t.Fatal(`acks "2" accepted`)
	}
}

// min_isr above rf is refused where a test.json is read, naming the fix (the
// checker's theory reasons on it as recorded: no clamp); 0 (not recorded)
// and an unknown rf (0) are read as they are.
func TestConfigMinISRAtMostRF(t *testing.T) {
	for _, tc := range []struct {
		minISR, rf int
		ok         bool
	}{{2, 3, true}, {3, 3, true}, {1, 1, true}, {0, 3, true}, {2, 0, true}, {3, 2, false}, {2, 1, false}} {
		c := Config{Acks: "all", MinISR: tc.minISR, RF: tc.rf}
		err := c.Normalize()
		if (err == nil) != tc.ok || err != nil && !strings.Contains(err.Error(), "lower min_isr") {
			t.Errorf("min_isr %d, rf %d: %v", tc.minISR, tc.rf, err)
		}
	}
}

// A group run's test.json names its commit mode: the auto-commits only with
// auto_commit, the manual commits only without, "" either way (a run before
// auto and auto-greedy existed, or no commits). What the group workload
// writes must read back.
func TestConfigCommitModes(t *testing.T) {
	for _, tc := range []struct {
		auto bool
		mode string
		ok   bool
	}{
		{true, CommitAuto, true}, {true, CommitAutoGreedy, true}, {true, "", true},
		{false, "after-processing", true}, {false, "before-processing", true}, {false, "on-revoked", true}, {false, "", true},
		{false, CommitAuto, false}, {false, CommitAutoGreedy, false}, {true, "after-processing", false}, {true, "sometimes", false},
	} {
		c := Config{Acks: "all", AutoCommit: tc.auto, CommitMode: tc.mode}
		if err := c.Normalize(); (err == nil) != tc.ok {
			t.Errorf("auto_commit %v, commit_mode %q: %v", tc.auto, tc.mode, err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	line := []byte(`{"index":5,"time":2300000,"process":1,"type":"ok","f":"poll","value":[["poll",{"t/0":[[41,16],[42,17]],"t/1":[[7,3]]}]]}`)
	var d decoder
	b.SetBytes(int64(len(line)))
	for i := 0; i < b.N; i++ {
		if _, err := d.parseOp(line); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeStdlib is the yardstick the hand-written decoder is measured against.
func BenchmarkDecodeStdlib(b *testing.B) {
	line := []byte(`{"index":5,"time":2300000,"process":1,"type":"ok","f":"poll","value":[["poll",{"t/0":[[41,16],[42,17]],"t/1":[[7,3]]}]]}`)
	b.SetBytes(int64(len(line)))
	for i := 0; i < b.N; i++ {
		var v map[string]any
		if err := json.Unmarshal(line, &v); err != nil {
			b.Fatal(err)
		}
	}
}
