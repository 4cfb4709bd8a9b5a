package reports

import (
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"gregor/checker"
)

// realisticCells is a matrix shaped like matrix/default.yaml (5
// configurations x 7 nemeses x 3 seeds) for the README's screenshot. The
// lost acknowledged records are make check's of 2026-12-01
// (docs/MEASUREMENTS.md section 2: min / median / max per cell, here one
// seed each); the acks=0 row's never-seen counts, one forbidden run and one
// crashed run are made up, to show how they are drawn.
func realisticCells() []Cell {
	nemeses := []string{"client-links", "isolate-leader", "kill-leader", "kip101", "pause-leader", "power-loss", "strand-leader"}
	rows := []struct {
		config, acks string
		lost         map[string][3]int
	}{
		{"acks=0 minisr=1 unclean=false idem=false", "0", nil},
		{"acks=1 minisr=1 unclean=false idem=false", "1", map[string][3]int{"isolate-leader": {287, 328, 348},
			"kill-leader": {16, 19, 24}, "kip101": {179, 191, 239}, "pause-leader": {11, 30, 74}}},
		{"acks=all minisr=1 unclean=true idem=true", "all", map[string][3]int{"strand-leader": {204, 221, 257}}},
		{"acks=all minisr=1 unclean=false idem=true", "all", nil},
		{"acks=all minisr=2 unclean=false idem=true", "all", nil},
	}
	// Illustrative never-seen records at acks=0: sends to a leader that
	// died or was cut off, none under the faults that keep the leader.
	unseen := map[string][3]int{"isolate-leader": {96, 140, 171}, "kill-leader": {12, 0, 31}, "kip101": {44, 61, 20},
		"power-loss": {0, 3, 0}, "strand-leader": {58, 77, 90}}
	var cells []Cell
	for _, r := range rows {
		for _, n := range nemeses {
			for s := 0; s < 3; s++ {
				c := Cell{Config: r.config, Nemesis: n, Seed: int64(s + 1), Acks: r.acks, Valid: "true",
					Counts: map[string]int{}, WriteAvailability: 0.97, Report: fmt.Sprintf("runs/%s-%s-s%d/report.html", r.acks, n, s+1)}
				c.LostAcks = r.lost[n][s]
				if r.acks == "0" {
					c.Counts[checker.Unseen] = unseen[n][s]
				}
				switch {
				case c.LostAcks > 0:
					c.Allowed = []string{checker.LostWrite}
				case c.Counts[checker.Unseen] > 0:
					c.Allowed = []string{checker.Unseen}
				}
				cells = append(cells, c)
			}
		}
	}
	for i := range cells {
		c := &cells[i]
		switch {
		case c.Config == rows[2].config && c.Nemesis == "kill-leader" && c.Seed == 2:
			c.Valid, c.Forbidden, c.Counts[checker.Duplicate] = "false", []string{checker.Duplicate}, 1
		case c.Config == rows[4].config && c.Nemesis == "power-loss" && c.Seed == 3:
			*c = Cell{Config: c.Config, Nemesis: c.Nemesis, Seed: c.Seed, Acks: c.Acks, Valid: "crashed", Log: "exit 2"}
		}
	}
	return cells
}

// writeScreenshot renders realisticCells' index in chromium and writes it,
// cropped to the page's content, to docs/matrix-index.png.
func writeScreenshot(t *testing.T) {
	dir := t.TempDir()
	if err := WriteMatrix(dir, "gregor matrix: default.yaml's shape", realisticCells()); err != nil {
		t.Fatal(err)
	}
	_, shot := render(t, filepath.Join(dir, "index.html"))
	cropped := image.NewRGBA(contentBounds(shot))
	draw.Draw(cropped, cropped.Bounds(), shot, cropped.Bounds().Min, draw.Src)
	f, err := os.Create(screenshotPath)
	if err != nil {
		t.Fatal(err)
	}
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(f, cropped); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// contentBounds is img's full width down to its last non-white row and a
// margin.
func contentBounds(img image.Image) image.Rectangle {
	b := img.Bounds()
	last := b.Min.Y
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, g, bl, _ := img.At(x, y).RGBA(); r>>8 < 0xf0 || g>>8 < 0xf0 || bl>>8 < 0xf0 {
				last = y
				break
			}
		}
	}
	return image.Rect(b.Min.X, b.Min.Y, b.Max.X, min(b.Max.Y, last+24))
}
