package strictyaml

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type doc struct {
	Name  string `yaml:"name"`
	Count int    `yaml:"count"`
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var d doc
	if err := Load(write("ok.yaml", "name: a\ncount: 2\n"), &d); err != nil || d != (doc{"a", 2}) {
		t.Fatalf("%+v %v", d, err)
	}
	for _, c := range []struct{ name, text, want string }{
		{"typo.yaml", "name: a\ncuont: 2\n", "field cuont not found"},
		{"empty.yaml", "", "empty file"},
		{"type.yaml", "count: many\n", "cannot unmarshal"},
	} {
		p := write(c.name, c.text)
		err := Load(p, &doc{})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want an error naming %s and %q", c.name, err, p, c.want)
		}
	}
	if err := Load(filepath.Join(dir, "missing.yaml"), &doc{}); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}
