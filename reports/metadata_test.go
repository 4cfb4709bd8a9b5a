package reports

import (
	"bytes"
	"encoding/json"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gregor/checker"
	"gregor/history"
)

// failoverHistory is 7 s of sends by one process with broker 1 killed from
// 2 s to 5 s, the times of testdata/metadata-hostile/metadata.jsonl.
func failoverHistory() []history.Op {
	var ops []history.Op
	const ms = int64(1e6)
	for i := int64(1); i <= 70; i++ {
		t := i * 100 * ms
		if t == 2000*ms {
			ops = append(ops, history.Op{Time: t, Process: history.Nemesis, Type: history.Info, F: "kill", Raw: json.RawMessage(`[1]`)})
		}
		if t == 5000*ms {
			ops = append(ops, history.Op{Time: t, Process: history.Nemesis, Type: history.Info, F: "start", Raw: json.RawMessage(`[1]`)})
		}
		m := history.Send("k", i)
		ops = append(ops, history.Op{Time: t, Process: 0, Type: history.Invoke, F: history.FSend, Mops: []history.Mop{m}})
		m.Offset = i - 1
		ops = append(ops, history.Op{Time: t + 5*ms, Process: 0, Type: history.OK, F: history.FSend, Mops: []history.Mop{m}})
	}
	for i := range ops {
		ops[i].Index = int64(i)
	}
	return ops
}

func writeMetadataReport(t *testing.T, samples []history.MetadataSample, note string) string {
	t.Helper()
	ops := failoverHistory()
	cfg := &history.Config{Acks: "all", MinISR: 2, RF: 3, Partitions: 2, Nemeses: []string{"kill"}}
	res, err := checker.Check(ops, cfg, checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	var buf bytes.Buffer
	if err := WriteRun(&buf, RunInput{Title: "metadata", Config: cfg, Ops: ops, Result: &res, Metadata: samples, MetadataNote: note}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// section is the part of the page from the first match of start to the next
// match of end after it.
func section(t *testing.T, dom, start, end string) string {
	t.Helper()
	i := strings.Index(dom, start)
	if i < 0 {
		t.Fatalf("page lacks %q", start)
	}
	j := strings.Index(dom[i:], end)
	if j < 0 {
		t.Fatalf("page lacks %q after %q", end, start)
	}
	return dom[i : i+j]
}

// TestMetadataChartInBrowser renders the hostile fixture: partition 0's
// leader moves from broker 1 to 2 at a higher epoch while the ISR shrinks
// and grows back; no broker answers one sample; broker 1 answers twice with
// a stale view (an error, and the old leader at the old epoch), which must
// not be drawn as the state. The fixture's numbers are worked out by hand
// in the comments below, and the errors carry markup that must stay text.
func TestMetadataChartInBrowser(t *testing.T) {
	samples, note, err := history.ReadRunMetadata(history.RunDir(filepath.Join("testdata", "metadata-hostile")))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 11 || !strings.Contains(note, "truncated last line") {
		t.Fatalf("fixture: %d samples, note %q; want 11 and the torn last line noted", len(samples), note)
	}
	path := writeMetadataReport(t, samples, note)
	dom, shot := render(t, path)
	chart := section(t, dom, `<svg id="metadata-chart"`, `</svg>`)
	for _, c := range []struct {
		what, re string
		want     int
	}{
		// p0: broker 1 from 0.5 s to the failed sample at 3 s; broker 2
		// (epoch 1) from 4 s to the end, one band although its ISR changed.
		// p1: broker 2 before and after the gap the failed sample leaves.
		{"broker 1 leader bands", `<rect class="ldr ldr-1"`, 1},
		{"broker 2 leader bands", `<rect class="ldr ldr-2"`, 3},
		{"ISR lines, one per partition", `<path class="isr"`, 2},
		{"ISR line pieces (a gap at the failed sample)", `M\d`, 4},
		{"failed samples", `<rect class="mdfail"`, 1},
		// 5 s: broker 1 answered an error, for both partitions; 6 s: broker
		// 1 showed p0 at epoch 0 after epoch 1 was seen.
		{"stale answers", `<rect class="stale"`, 3},
		{"fault bands (kill 2 s .. start 5 s)", `<rect class="band"`, 1},
		{"min ISR lines", `<line class="minisr"`, 2},
	} {
		if got := count(chart, c.re); got != c.want {
			t.Errorf("%s: %d, want %d", c.what, got, c.want)
		}
	}
	changes := section(t, dom, `<table id="metadata-changes"`, `</table>`)
	// p0: leader 1 -> 2 with the ISR shrink at 4 s, ISR back at 5.5 s; p1:
	// ISR shrink at 4 s, back at 5.5 s.
	if got := count(changes, `<tr><td>`); got != 4 {
		t.Errorf("changes table has %d rows, want 4", got)
	}
	mustContain(t, changes, "leader broker 1 → broker 2 (epoch 0 → 1)", "ISR [1 2 3] → [2 3]", "ISR [2 3] → [1 2 3]")
	mustContain(t, dom, "11 samples from 0.50 s to 6.50 s", "1 samples no broker answered", "3 stale or partial answers",
		"answered by broker 1: 3, 2: 4, 3: 3", "truncated last line dropped")
	// The cluster's error strings are in the page as text, never as markup.
	if strings.Contains(dom, "<script") || strings.Contains(dom, "<img") {
		t.Fatal("markup from metadata.jsonl was injected into the page")
	}
	mustContain(t, chart, "UNKNOWN_TOPIC_OR_PARTITION &lt;script&gt;alert(", "no broker answered within 2s &lt;script&gt;")
	// The screenshot shows broker 2's bands (purple) and broker 1's (orange).
	if n := colours(shot, color.RGBA{0x7b, 0x4e, 0xa3, 0xff}); n < 200 {
		t.Fatalf("screenshot has %d purple pixels: broker 2's leader bands did not render", n)
	}
	if n := colours(shot, color.RGBA{0xf2, 0x8e, 0x2b, 0xff}); n < 50 {
		t.Fatalf("screenshot has %d orange pixels: broker 1's leader band did not render", n)
	}
}

// TestMetadataChartWithoutSamples: a run without metadata.jsonl (recorded
// before the sampler existed) says so instead of drawing an empty chart.
func TestMetadataChartWithoutSamples(t *testing.T) {
	samples, note, err := history.ReadRunMetadata(history.RunDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if samples != nil || !strings.Contains(note, "not found") {
		t.Fatalf("empty dir: %d samples, note %q", len(samples), note)
	}
	b, err := os.ReadFile(writeMetadataReport(t, samples, note))
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	mustContain(t, html, `id="metadata-empty"`, "no metadata samples: metadata.jsonl not found")
	if strings.Contains(html, `id="metadata-chart"`) {
		t.Fatal("a chart drawn with no samples")
	}
}

// TestMetadataChartBounded: a flapping ISR over a long run draws at most
// maxMetadataShapes shapes and says the chart stops.
func TestMetadataChartBounded(t *testing.T) {
	var samples []history.MetadataSample
	for i := range 3 * maxMetadataShapes {
		isr := []int32{1, 2, 3}
		if i%2 == 1 {
			isr = []int32{1, 2}
		}
		samples = append(samples, history.MetadataSample{Time: int64(i) * 1e8, Broker: 1,
			Partitions: []history.PartitionState{{Partition: 0, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: isr}}})
	}
	v := metadataChart(samples, nil, 0, 2, "")
	// Each drawn segment is one step of the ISR line (and at most one leader
	// rect); marks are one element each.
	shapes := len(v.Failed) + len(v.Stale) + strings.Count(v.Lanes[0].ISRPath, "H")
	if shapes > maxMetadataShapes || !strings.Contains(v.Note, "the chart stops there") {
		t.Fatalf("%d shapes, note %q", shapes, v.Note)
	}
	if len(v.Changes) != maxMetadataChanges || v.ChangesNote == "" {
		t.Fatalf("%d change rows (note %q), want %d and a note", len(v.Changes), v.ChangesNote, maxMetadataChanges)
	}
}
