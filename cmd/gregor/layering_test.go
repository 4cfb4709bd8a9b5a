package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// layers is the house's dependency direction (DESIGN.md section 1): a
// package may import its own top-level folder's packages and any folder on
// a lower floor, never a sibling on its own floor or one above. Data flows
// one way: config -> harness -> (runtime, workloads, nemesis) -> history ->
// checker -> reports, and the cluster under test knows none of it.
var layers = map[string]int{
	"cmd":       7,
	"validate":  6,
	"matrix":    5,
	"harness":   4,
	"reports":   3,
	"checker":   2,
	"workloads": 2,
	"nemesis":   2,
	"runtime":   1,
	"history":   0,
	"cluster":   0,
	"bench":     0,
	// internal holds stdlib-only helpers every floor may use (one
	// context-aware sleep); it imports nothing of gregor.
	"internal": -1,
}

// TestLayering reads every non-test Go file's imports and fails on an import
// that runs up or sideways, or from a folder the table does not place.
func TestLayering(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not at %s: %v", root, err)
	}
	const module = "gregor/"
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "store" || d.Name() == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		top := strings.Split(filepath.ToSlash(rel), "/")[0]
		from, placed := layers[top]
		if !placed {
			t.Errorf("%s: folder %q has no floor in the layering table (cmd/gregor/layering_test.go)", rel, top)
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, module) {
				continue
			}
			if p == module+"checker/checkertest" {
				// Generated histories are test support (DESIGN.md section 1).
				t.Errorf("%s imports %s: only tests may", rel, p)
			}
			to := strings.Split(strings.TrimPrefix(p, module), "/")[0]
			if to == top {
				continue
			}
			if layers[to] >= from {
				t.Errorf("%s imports %s: %s (floor %d) may only import floors below it, %s is on floor %d", rel, p, top, from, to, layers[to])
			}
		}
		// DESIGN.md: the checker reads histories and knows nothing else.
		if top == "checker" {
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(p, module) && p != module+"history" && !strings.HasPrefix(p, module+"checker") {
					t.Errorf("%s imports %s: the checker imports history only", rel, p)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read only %d Go files under %s: the walk missed the tree", files, root)
	}
}

// TestReadmeLayoutMatchesLayers holds the README's layout section to the
// floors table above: every top-level folder on its floor, no other.
func TestReadmeLayoutMatchesLayers(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "## Layout")
	if i < 0 {
		t.Fatal("README.md has no Layout section")
	}
	start := strings.Index(doc[i:], "```\n")
	if start < 0 {
		t.Fatal("README.md's Layout section has no block")
	}
	block := doc[i+start+4:]
	block = block[:strings.Index(block, "```")]
	got := map[string]int{}
	floor := -1
	for _, line := range strings.Split(block, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if n, err := strconv.Atoi(f[0]); err == nil {
			floor, f = n, f[1:]
		}
		if len(f) == 0 || !strings.HasSuffix(f[0], "/") || strings.Contains(strings.TrimSuffix(f[0], "/"), "/") && !strings.HasPrefix(f[0], "cmd/") {
			continue // a continuation line, or a subfolder named in passing
		}
		got[strings.Split(f[0], "/")[0]] = floor
	}
	for dir, want := range layers {
		if fl, ok := got[dir]; !ok || fl != want {
			t.Errorf("README layout: %s/ on floor %d (listed: %v), the layering table has it on floor %d", dir, fl, ok, want)
		}
	}
	for dir := range got {
		if _, ok := layers[dir]; !ok {
			t.Errorf("README layout lists %s/, which the layering table does not place", dir)
		}
	}
}
