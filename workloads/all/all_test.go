package all

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gregor/workloads/group"
	"gregor/workloads/queue"
)

// The layers above the workloads ask this registry and never spell a
// workload's name: a string literal equal to a registered name in the
// harness, the matrix, validate or the command is a branch on a workload
// that belongs in its descriptor.
func TestNoWorkloadNamedAbove(t *testing.T) {
	names := map[string]bool{}
	for _, d := range Workloads.All() {
		names[d.Name()] = true
	}
	files := 0
	for _, dir := range []string{"harness", "matrix", "validate", "cmd"} {
		root := filepath.Join("..", "..", dir)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			files++
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				if s, err := strconv.Unquote(lit.Value); err == nil && names[s] {
					t.Errorf("%s names the workload %q: ask workloads/all (kit.Descriptor) instead", path, s)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 30 {
		t.Fatalf("read only %d Go files: the walk missed the tree", files)
	}
}

// The registry answers for the workloads: the default is the first
// registered, a workload's own flag names its owner, and an unknown name is
// refused with the names there are.
func TestRegistry(t *testing.T) {
	if d := Workloads.Default(); d.Name() != queue.Name || !Workloads.IsDefault("") {
		t.Fatalf("default %s", d.Name())
	}
	if o := Workloads.FlagOwner("commit-mode"); o != group.Name {
		t.Fatalf("--commit-mode owned by %q", o)
	}
	if o := Workloads.FlagOwner("rate"); o != "" {
		t.Fatalf("--rate owned by %q", o)
	}
	_, err := Workloads.Get("nope")
	if err == nil || err.Error() != `--workload "nope": give queue, group, txn, eos, share or authz` {
		t.Fatalf("unknown workload: %v", err)
	}
}
