package matrix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runtime, image_spec, bootstrap and faults become the cells' gregor run
// flags; files are relative to the matrix file; a nemesis set's settings
// override the defaults'.
func TestTargetSettings(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.yaml")
	os.WriteFile(p, []byte(`name: t
defaults: {runtime: external, bootstrap: [h1:9092, h2:9092], faults: f.yaml}
configs: [{acks: all}]
nemeses:
  - {name: kill, kinds: [kill]}
  - {name: other, kinds: [kill], settings: {faults: /abs/g.yaml}}
`), 0o644)
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	cells, err := s.Cells()
	if err != nil || len(cells) != 2 {
		t.Fatalf("%d cells, %v", len(cells), err)
	}
	args := map[string]string{}
	for _, c := range cells {
		args[c.Nemesis.Name] = strings.Join(c.Args, " ")
	}
	if !strings.Contains(args["kill"], "--runtime external --bootstrap h1:9092,h2:9092 --faults "+filepath.Join(dir, "f.yaml")) {
		t.Fatalf("kill cell args: %s", args["kill"])
	}
	if !strings.Contains(args["other"], "--faults /abs/g.yaml") || strings.Contains(args["other"], "f.yaml") {
		t.Fatalf("other cell args: %s", args["other"])
	}

	q := filepath.Join(dir, "i.yaml")
	os.WriteFile(q, []byte("name: i\ndefaults: {runtime: image, image_spec: specs/k.yaml}\nconfigs: [{acks: all}]\nnemeses: [{name: none, kinds: [none]}]\n"), 0o644)
	if s, err = Load(q); err != nil {
		t.Fatal(err)
	}
	cells, _ = s.Cells()
	if a := strings.Join(cells[0].Args, " "); !strings.Contains(a, "--runtime image --image-spec "+filepath.Join(dir, "specs", "k.yaml")) {
		t.Fatalf("image cell args: %s", a)
	}
}
