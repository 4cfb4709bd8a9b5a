package reports

import (
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chromium finds Debian's headless browser. .ci/run installs it; a machine
// without it skips browser tests loudly (never a silent pass).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium on PATH in CI: .ci/run must install Debian's chromium package")
	}
	t.Skip("SKIPPED: no chromium on PATH (apt-get install chromium) — browser checks of reports did not run")
	return ""
}

// render opens file in headless chromium and returns the DOM after load and
// a screenshot.
func render(t *testing.T, file string) (dom string, shot image.Image) {
	t.Helper()
	bin := chromium(t)
	dir := t.TempDir()
	png := filepath.Join(dir, "shot.png")
	// The screenshot is one window tall (chromium does not scroll): tall
	// enough for a run report whose sections above the metadata chart grow
	// with the anomaly and theory tables (new workloads' anomalies pushed
	// the chart past 3200 px).
	common := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir=" + filepath.Join(dir, "profile"), "--window-size=1200,6000"}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append(common, "--dump-dom", "file://"+file)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	if err := exec.CommandContext(ctx, bin, append(common, "--screenshot="+png, "file://"+file)...).Run(); err != nil {
		t.Fatalf("chromium --screenshot: %v", err)
	}
	f, err := os.Open(png)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := decodePNG(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(out), img
}

func decodePNG(f *os.File) (image.Image, error) { return png.Decode(f) }

// count counts elements whose opening tag matches re.
func count(dom, re string) int { return len(regexp.MustCompile(re).FindAllStringIndex(dom, -1)) }

// colours counts screenshot pixels close to c.
func colours(img image.Image, c color.RGBA) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if absDiff(r>>8, uint32(c.R)) < 30 && absDiff(g>>8, uint32(c.G)) < 30 && absDiff(bl>>8, uint32(c.B)) < 30 {
				n++
			}
		}
	}
	return n
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}

func mustContain(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Fatalf("rendered page lacks %q", sub)
		}
	}
}
