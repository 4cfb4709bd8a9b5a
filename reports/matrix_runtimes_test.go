package reports

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gregor/internal/stats"
)

// A cell run on two runtimes (a matrix's runtimes:) is one cell: the
// runtime with the most runs gives its rate and colour, the other is shown
// beside it (its runs that lost, of its runs, and each run's count), and
// results.json summarises each runtime apart.
func TestMatrixRuntimesBeside(t *testing.T) {
	dir := t.TempDir()
	cfg := "acks=1 minisr=1 rf=3 unclean=false idem=false"
	var cells []Cell
	for i, lost := range []int{12, 0, 7, 3} {
		cells = append(cells, Cell{Config: cfg, Nemesis: "kill-leader", Seed: int64(i + 1), Runtime: "sim", Valid: "true", LostAcks: lost, Counts: map[string]int{}})
	}
	cells = append(cells, Cell{Config: cfg, Nemesis: "kill-leader", Seed: 1, Runtime: "process", Valid: "true", LostAcks: 23, Counts: map[string]int{}},
		Cell{Config: cfg, Nemesis: "kill-leader", Seed: 2, Runtime: "process", Valid: "crashed"})
	if err := WriteMatrix(dir, "matrix", cells); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, want := range []string{"<b>3/4</b> runs lost acks", "beside, on process: <b>1/1</b> (23, crashed)",
		"lost acks min / median / max: <b>0 / 3 / 12</b> (n=4)", `class="run beside"`, "process seed 1", "sim seed 4", "A blue ring"} {
		if !strings.Contains(html, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	var res MatrixResultsFile
	if err := json.Unmarshal(mustReadFile(t, filepath.Join(dir, "results.json")), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 2 {
		t.Fatalf("results.json: %d cell summaries, want one per runtime", len(res.Cells))
	}
	for _, c := range res.Cells {
		switch c.Runtime {
		case "sim":
			if c.LostAny != (stats.Rate{K: 3, N: 4}) {
				t.Errorf("sim summary %+v", c)
			}
		case "process":
			if c.LostAny != (stats.Rate{K: 1, N: 1}) || c.Crashed != 1 {
				t.Errorf("process summary %+v", c)
			}
		default:
			t.Errorf("summary of runtime %q", c.Runtime)
		}
	}
}
