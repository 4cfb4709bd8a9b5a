package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gregor/history"
	"gregor/runtime"
)

// readSamples reads the sampler's file as it stands: it is streamed, so a
// reader mid-run sees whole lines (and at most a torn last one, dropped).
func readSamples(t *testing.T, path string) []history.MetadataSample {
	t.Helper()
	s, _, err := history.ReadMetadataFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// partitionOf is partition p in sample s, if the sample has it.
func partitionOf(s history.MetadataSample, p int32) (history.PartitionState, bool) {
	for _, ps := range s.Partitions {
		if ps.Partition == p {
			return ps, true
		}
	}
	return history.PartitionState{}, false
}

// waitSamples polls the file every 100 ms, at most limit, until cond holds
// on the samples so far; it returns them.
func waitSamples(t *testing.T, path, what string, limit time.Duration, cond func([]history.MetadataSample) error) []history.MetadataSample {
	t.Helper()
	deadline := time.Now().Add(limit)
	var last error
	for time.Now().Before(deadline) {
		s := readSamples(t, path)
		if last = cond(s); last == nil {
			return s
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v: %v", what, limit, last)
	return nil
}

// TestMetadataSamplerSeesFailover runs the sampler against a real 3-broker
// cluster: the samples show partition 0's leader, its leader is killed and
// the samples show the leader change (a new leader at a higher epoch) and
// the ISR shrinking to the two live brokers, with the dead broker's failed
// requests recorded instead of stalling the sampler. A paused broker (which
// accepts connections and never answers) costs timed-out attempts while
// samples keep coming.
func TestMetadataSamplerSeesFailover(t *testing.T) {
	t.Parallel() // a cluster run: see TestMain
	if testing.Short() {
		t.Skip("boots a cluster")
	}
	c := startCluster(t, testSpec("mdsample", 3, 2))
	topic := TopicSpec{Name: "md", Partitions: 2, RF: 3, MinISR: 2}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := CreateTopic(ctx, c.Bootstrap(), topic); err != nil {
		t.Fatal(err)
	}
	dir := history.RunDir(t.TempDir())
	path := dir.Metadata()
	epoch := time.Now()
	s, err := StartMetadataSampler(ctx, dir, SamplerConfig{Topic: "md", Brokers: c.Nodes(), Epoch: epoch,
		Interval: 150 * time.Millisecond, Timeout: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			s.Stop()
		}
	}()

	// Every broker answers in turn, each with both partitions and a full ISR.
	before := waitSamples(t, path, "a full ISR answered by every broker", 20*time.Second, func(ss []history.MetadataSample) error {
		by := map[int32]bool{}
		for _, x := range ss {
			p0, ok0 := partitionOf(x, 0)
			_, ok1 := partitionOf(x, 1)
			if ok0 && ok1 && len(p0.ISR) == 3 && p0.Leader > 0 {
				by[x.Broker] = true
			}
		}
		if len(by) < 3 {
			return fmt.Errorf("answered with a full ISR by %v of 3 brokers in %d samples", by, len(ss))
		}
		return nil
	})
	p0, _ := partitionOf(before[len(before)-1], 0)
	old, oldEpoch := p0.Leader, p0.LeaderEpoch

	// Kill the leader; from killedAt on it cannot answer.
	if err := c.Kill(ctx, old); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Since(epoch).Nanoseconds()
	after := waitSamples(t, path, fmt.Sprintf("a new leader of md/0 after killing broker %d", old), 30*time.Second, func(ss []history.MetadataSample) error {
		for _, x := range ss {
			p, ok := partitionOf(x, 0)
			if ok && x.Time > killedAt && p.Leader > 0 && p.Leader != old && p.LeaderEpoch > oldEpoch &&
				len(p.ISR) == 2 && !slices.Contains(p.ISR, old) {
				return nil
			}
		}
		last := ss[len(ss)-1]
		return fmt.Errorf("last sample (broker %d): %+v", last.Broker, last.Partitions)
	})
	var sawFailed bool
	for _, x := range after {
		if x.Time <= killedAt {
			continue
		}
		if x.Broker == old {
			t.Fatalf("sample at %d ns answered by broker %d, killed before it", x.Time, old)
		}
		for _, f := range x.Failed {
			if f.Broker == old && f.Error != "" {
				sawFailed = true
			}
		}
	}
	if !sawFailed {
		t.Fatalf("no failed request to the killed broker %d recorded", old)
	}
	// The samples before the kill had the old leader; the report's chart
	// reads exactly these fields.
	if p, _ := partitionOf(before[len(before)-1], 0); p.Leader != old || len(p.ISR) != 3 {
		t.Fatalf("sample before the kill: %+v", p)
	}

	// Pause a live broker: its requests time out, samples go on.
	var paused int32
	for _, n := range c.Nodes() {
		if n.ID != old {
			paused = n.ID
			break
		}
	}
	if err := c.Pause(ctx, paused); err != nil {
		t.Fatal(err)
	}
	pausedAt := time.Since(epoch).Nanoseconds()
	waitSamples(t, path, fmt.Sprintf("samples while broker %d is paused", paused), 30*time.Second, func(ss []history.MetadataSample) error {
		answered, timedOut := 0, 0
		for _, x := range ss {
			if x.Time <= pausedAt {
				continue
			}
			if x.Error == "" {
				answered++
			}
			for _, f := range x.Failed {
				if f.Broker == paused {
					timedOut++
				}
			}
		}
		if answered < 5 || timedOut < 2 {
			return fmt.Errorf("%d answered samples, %d failed requests to broker %d", answered, timedOut, paused)
		}
		return nil
	})
	if err := c.Resume(ctx, paused); err != nil {
		t.Fatal(err)
	}

	stopped = true
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	n, failed := s.Counts()
	final := readSamples(t, path)
	if len(final) != n {
		t.Fatalf("sampler counted %d samples, the file holds %d", n, len(final))
	}
	// Stop is final: nothing is written after it.
	time.Sleep(400 * time.Millisecond)
	if again := readSamples(t, path); len(again) != n {
		t.Fatalf("%d samples after Stop, %d at Stop", len(again), n)
	}
	for i := 1; i < len(final); i++ {
		if final[i].Time < final[i-1].Time {
			t.Fatalf("sample %d at %d ns before sample %d at %d ns", i, final[i].Time, i-1, final[i-1].Time)
		}
	}
	t.Logf("%d samples, %d with no broker answering; broker %d killed, broker %d paused", n, failed, old, paused)
}

// TestMetadataSamplerRefusesBadConfig: bounds are checked before anything
// is asked, each message naming the fix.
func TestMetadataSamplerRefusesBadConfig(t *testing.T) {
	good := SamplerConfig{Topic: "t", Brokers: []runtime.NodeInfo{{ID: 1, KafkaAddr: "127.0.0.1:1"}}}
	for _, tc := range []struct {
		name string
		mod  func(*SamplerConfig)
		want string
	}{
		{"fast", func(c *SamplerConfig) { c.Interval = time.Millisecond }, "give 100ms to 5s"},
		{"slow", func(c *SamplerConfig) { c.Interval = time.Minute }, "give 100ms to 5s"},
		{"timeout", func(c *SamplerConfig) { c.Timeout = time.Hour }, "up to 5s"},
		{"topic", func(c *SamplerConfig) { c.Topic = "" }, "no topic"},
		{"brokers", func(c *SamplerConfig) { c.Brokers = nil }, "no broker"},
	} {
		cfg := good
		tc.mod(&cfg)
		_, err := StartMetadataSampler(context.Background(), history.RunDir(t.TempDir()), cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	bad := leaderKillTest(t, "md", "all", 1).Config
	bad.MetadataInterval = 10 * time.Millisecond
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "--metadata-interval") {
		t.Fatalf("Test with a 10ms interval: %v", err)
	}
}

// TestMetadataSamplerNoBroker: with nothing listening, every sample is
// written as failed, naming each broker asked.
func TestMetadataSamplerNoBroker(t *testing.T) {
	var buf syncBuffer
	cfg := SamplerConfig{Topic: "t", Brokers: []runtime.NodeInfo{{ID: 1, KafkaAddr: "127.0.0.1:1"}, {ID: 2, KafkaAddr: "127.0.0.1:2"}},
		Interval: 100 * time.Millisecond, Timeout: 200 * time.Millisecond}
	if err := cfg.normalize(); err != nil {
		t.Fatal(err)
	}
	s, err := startSampler(context.Background(), &buf, cfg)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && bytes.Count(buf.Bytes(), []byte("\n")) < 3 {
		time.Sleep(50 * time.Millisecond)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	samples, warnings, err := history.ReadMetadata(bytes.NewReader(buf.Bytes()))
	if err != nil || len(warnings) > 0 {
		t.Fatalf("%v %v", err, warnings)
	}
	if len(samples) < 3 {
		t.Fatalf("%d samples with no broker up", len(samples))
	}
	for _, x := range samples {
		if x.Error == "" || x.Broker != -1 || len(x.Failed) != 2 {
			t.Fatalf("sample with no broker up: %+v", x)
		}
	}
}

// syncBuffer is a bytes.Buffer the sampler writes while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// checkMetadataStore asserts what a leader-kill run leaves of its metadata
// samples: a file of samples, all taken before the final reads began, that
// show at least one leader elected after the first (epoch > 0), and a
// report that draws them.
func checkMetadataStore(t *testing.T, tc Test, rep *Report, ops []history.Op) {
	t.Helper()
	samples := readSamples(t, history.RunDir(rep.Dir).Metadata())
	if len(samples) == 0 {
		t.Fatal("metadata.jsonl holds no sample")
	}
	finalRead := int64(-1)
	for _, op := range ops {
		if op.F == history.FAssign && op.Type == history.OK && op.Time > int64(tc.WarmUp+tc.TimeLimit) {
			finalRead = op.Time
			break
		}
	}
	moved := false
	for _, s := range samples {
		if finalRead >= 0 && s.Time >= finalRead {
			t.Errorf("sample at %d ns, after the final read began at %d ns", s.Time, finalRead)
			break
		}
		for _, p := range s.Partitions {
			moved = moved || p.LeaderEpoch > 0
		}
	}
	if !moved {
		t.Errorf("%d samples and no leader epoch above 0 under leader kills", len(samples))
	}
	b, err := os.ReadFile(filepath.Join(rep.Dir, history.ReportFile))
	if err != nil || !bytes.Contains(b, []byte(`id="metadata-chart"`)) {
		t.Errorf("report.html has no metadata chart (%v)", err)
	}
}
