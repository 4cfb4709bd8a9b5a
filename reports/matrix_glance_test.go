package reports

import (
	"flag"
	"fmt"
	"image"
	"image/color"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gregor/checker"
	"gregor/internal/stats"
)

// The scale runs from scaleNone (0 of n) to its darkest stop (n of n),
// darker with every run more that lost; a cell of crashed runs only is off
// the scale.
func TestRateColourScale(t *testing.T) {
	prev := 2.0
	for k := 0; k <= 3; k++ {
		l := rateColour(stats.Rate{K: k, N: 3}).luminance()
		if l >= prev {
			t.Fatalf("%d/3 is not darker than %d/3 (luminance %.3f >= %.3f)", k, k-1, l, prev)
		}
		prev = l
	}
	if rateColour(stats.Rate{K: 0, N: 3}) != scaleNone || rateColour(stats.Rate{K: 3, N: 3}) != scaleStops[len(scaleStops)-1] {
		t.Fatal("the scale's ends are not none-lost and every-run-lost")
	}
	if rateColour(stats.Rate{}) != scaleNoRuns {
		t.Fatal("a cell without a finished run is coloured on the scale")
	}
}

// glanceCells: one row losing in 0, 1, 2 and 3 of 3 runs (columns a..d),
// a forbidden run, a crashed and an undecided one, an acks=0 row (one
// cell from a results.json before Cell.Acks), and cluster text to escape.
func glanceCells() []Cell {
	var cells []Cell
	lossy := "acks=1 minisr=1 rf=3 unclean=false idem=false"
	for i, nem := range []string{"a-none", "b-one", "c-two", "d-all"} {
		for seed := int64(1); seed <= 3; seed++ {
			lost := 0
			if int(seed) <= i {
				lost = 10 * int(seed)
			}
			cells = append(cells, Cell{Config: lossy, Nemesis: nem, Seed: seed, Acks: "1", Valid: "true", LostAcks: lost,
				Counts: map[string]int{}, Report: fmt.Sprintf("runs/%s-%d/report.html", nem, seed)})
		}
	}
	safe := "acks=all minisr=2 rf=3 unclean=false idem=true"
	cells = append(cells,
		Cell{Config: safe, Nemesis: "a-none", Seed: 1, Acks: "all", Valid: "false", LostAcks: 1, Counts: map[string]int{checker.LostWrite: 1},
			Forbidden: []string{"lost-write"}, Report: "runs/f/report.html"},
		Cell{Config: safe, Nemesis: "a-none", Seed: 2, Acks: "all", Valid: "true", Counts: map[string]int{}, Report: "runs/g/report.html"},
		Cell{Config: safe, Nemesis: "b-one", Seed: 1, Acks: "all", Valid: "crashed", Log: "boom"},
		Cell{Config: safe, Nemesis: "b-one", Seed: 2, Acks: "all", Valid: "unknown", Counts: map[string]int{}, Report: "runs/u/report.html"},
		Cell{Config: safe, Nemesis: "c-two <img src=x onerror=alert(1)>", Seed: 1, Acks: "all", Valid: "true", Counts: map[string]int{},
			Allowed: []string{"<script>alert(2)</script>"}})
	zero := "acks=0 minisr=1 rf=3 unclean=false idem=false"
	for seed := int64(1); seed <= 3; seed++ {
		cells = append(cells, Cell{Config: zero, Nemesis: "d-all", Seed: seed, Acks: "0", Valid: "true",
			Counts: map[string]int{checker.Unseen: 40 * int(seed)}, Allowed: []string{checker.Unseen}},
			// Acks empty: the label says acks=0.
			Cell{Config: zero, Nemesis: "a-none", Seed: seed, Valid: "true", Counts: map[string]int{}})
	}
	return cells
}

// TestMatrixGlanceInBrowser: each cell is coloured by its rate (0/3 the
// lightest, 3/3 the darkest, measured on the screenshot), draws one dot per
// finished run, marks a forbidden anomaly, a crash and an undecided run on
// top of the colour, says n/a for lost acks at acks=0, and escapes.
func TestMatrixGlanceInBrowser(t *testing.T) {
	dir := t.TempDir()
	if err := WriteMatrix(dir, "glance", glanceCells()); err != nil {
		t.Fatal(err)
	}
	dom, shot := render(t, filepath.Join(dir, "index.html"))
	var want []rgb
	for k := 0; k <= 3; k++ {
		want = append(want, rateColour(stats.Rate{K: k, N: 3}))
	}
	if !rowShows(shot, want) {
		t.Fatalf("no line of the screenshot crosses the lossy row's cells as %v left to right (0/3 lightest .. 3/3 darkest)", want)
	}
	checkGlanceCells(t, dom)
	mustContain(t, dom, `<span class="badge b-forbidden">FORBIDDEN</span>`, `data-marks="forbidden"`,
		`CRASHED 1</span>`, `UNKNOWN 1</span>`, `data-marks="crashed unknown"`)
	if n := colours(shot, color.RGBA{0xd7, 0x00, 0x1f, 0xff}); n < 200 {
		t.Fatalf("the forbidden cell's badge and border: %d pixels of its red", n)
	}
	if got := strings.Count(dom, "lost acks: n/a (acks=0 acknowledges nothing)"); got != 2 {
		t.Fatalf("%d acks=0 cells say lost acks are n/a, want 2 (one from a results.json without acks)", got)
	}
	mustContain(t, dom, "never seen min / median / max: <b>40 / 80 / 120</b> (n=3)", "runs with records never seen: <b>3/3 = 100%",
		`style="background:`+string(rateColour(stats.Rate{K: 3, N: 3}).CSS()))
	mustContain(t, dom, "c-two &lt;img src=x onerror=alert(1)&gt;", "&lt;script&gt;alert(2)&lt;/script&gt;")
	if strings.Contains(dom, "<img") || strings.Contains(dom, "<script") {
		t.Fatal("cluster text rendered as markup")
	}
}

// checkGlanceCells: every cell draws its rate bar, and one circle per run
// that finished (a crashed run is its badge, not a dot).
func checkGlanceCells(t *testing.T, dom string) {
	t.Helper()
	cells := strings.Split(dom, `<td class="cell `)[1:]
	total := 0
	for _, c := range cells {
		c = c[:strings.Index(c, "</td>")]
		if strings.HasPrefix(c, `none"`) {
			continue
		}
		runs := count(c, `>seed \d+</a>`)
		crashed := 0
		if m := regexp.MustCompile(`CRASHED (\d+)`).FindStringSubmatch(c); m != nil {
			fmt.Sscan(m[1], &crashed)
		}
		if got := count(c, `<circle `); got != runs-crashed {
			t.Fatalf("a cell of %d runs (%d crashed) draws %d dots:\n%s", runs, crashed, got, c)
		}
		if count(c, `<svg class="glance bar"`) != 1 || count(c, `<rect class="band"`) != 1 || count(c, `<rect class="mark"`) != 1 {
			t.Fatalf("a cell without its rate bar (band and mark):\n%s", c)
		}
		total += runs - crashed
	}
	if want := len(glanceCells()) - 1; total != want {
		t.Fatalf("%d dots in the matrix, want %d (every run but the crashed one)", total, want)
	}
	// One scale per measure across the matrix, its maximum labelled: the
	// most lost acks of any run (30) on the seven cells that count them,
	// the most never seen (120) on the two acks=0 cells.
	if lost, unseen := count(dom, `<text [^>]*>30</text>`), count(dom, `<text [^>]*>120</text>`); lost != 7 || unseen != 2 {
		t.Fatalf("strip axes labelled 30 (lost acks): %d, want 7; 120 (never seen): %d, want 2", lost, unseen)
	}
}

// rowShows reports whether some horizontal line of img crosses runs of
// the colours want, in that order, each at least 20 px wide: the cells of
// one row, left to right.
func rowShows(img image.Image, want []rgb) bool {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		var seen []rgb
		run, last := 0, -1
		for x := b.Min.X; x < b.Max.X; x++ {
			i := nearest(img.At(x, y), want)
			if i != last {
				run, last = 0, i
			}
			run++
			if i >= 0 && run == 20 && (len(seen) == 0 || seen[len(seen)-1] != want[i]) {
				seen = append(seen, want[i])
			}
		}
		if fmt.Sprint(seen) == fmt.Sprint(want) {
			return true
		}
	}
	return false
}

// nearest is the index of the colour of cs that c is (within 6 per
// channel: the screenshot is exact but for antialiasing), or -1.
func nearest(c color.Color, cs []rgb) int {
	r, g, b, _ := c.RGBA()
	for i, w := range cs {
		if absDiff(r>>8, uint32(w.R)) <= 6 && absDiff(g>>8, uint32(w.G)) <= 6 && absDiff(b>>8, uint32(w.B)) <= 6 {
			return i
		}
	}
	return -1
}

var updateScreenshot = flag.Bool("update-screenshot", false, "render docs/matrix-index.png from realisticCells (TestMatrixScreenshot)")

// screenshotPath is the README's picture of the matrix index.
const screenshotPath = "../docs/matrix-index.png"

// TestMatrixScreenshot checks the README's screenshot is there and small;
// `go test -run TestMatrixScreenshot ./reports -args -update-screenshot`
// renders it afresh (tests never rewrite it otherwise).
func TestMatrixScreenshot(t *testing.T) {
	if *updateScreenshot {
		writeScreenshot(t)
	}
	st, err := os.Stat(screenshotPath)
	if err != nil {
		t.Fatalf("%v: the README shows it; render it with -args -update-screenshot", err)
	}
	if st.Size() > 300<<10 {
		t.Fatalf("%s is %d KB, keep it under 300 KB", screenshotPath, st.Size()>>10)
	}
	f, err := os.Open(screenshotPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := decodePNG(f)
	if err != nil {
		t.Fatal(err)
	}
	if w := img.Bounds().Dx(); w < 800 || w > 1300 {
		t.Fatalf("%s is %d px wide, want about 1200", screenshotPath, w)
	}
}
