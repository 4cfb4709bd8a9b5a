package matrix

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func loadBody(t *testing.T, body string) (*Spec, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(path)
}

// runtimes: runs every cell on each runtime with its own seeds, the
// runtime last among a cell's arguments (the cell's id and --resume's
// record are of its arguments), each cell knowing its runtime.
func TestRuntimesSeedsPerRuntime(t *testing.T) {
	s, err := loadBody(t, "name: m\nconfigs: [{acks: all}]\nnemeses: [{name: none, kinds: [none]}]\nruntimes: {sim: 3, process: [1, 7]}\n")
	if err != nil {
		t.Fatal(err)
	}
	cells, err := s.Cells()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	ids := map[string]bool{}
	for _, c := range cells {
		n := len(c.Args)
		if n < 2 || c.Args[n-2] != "--runtime" || c.Args[n-1] != c.Runtime {
			t.Fatalf("cell %s (runtime %q): args %v do not end in its --runtime", c.ID, c.Runtime, c.Args)
		}
		if !strings.Contains(c.ID, c.Runtime+"-s") {
			t.Errorf("cell id %s does not name its runtime", c.ID)
		}
		ids[c.ID] = true
		got = append(got, c.Runtime+":"+c.Args[slices.Index(c.Args, "--seed")+1])
	}
	slices.Sort(got)
	if want := []string{"process:1", "process:7", "sim:1", "sim:2", "sim:3"}; !slices.Equal(got, want) {
		t.Fatalf("cells %v, want %v", got, want)
	}
	if len(ids) != len(cells) {
		t.Fatalf("%d ids for %d cells", len(ids), len(cells))
	}
	if s.SeedsPerCell() != 5 {
		t.Fatalf("SeedsPerCell %d, want 5", s.SeedsPerCell())
	}
	only, err := s.Runtimes.Only("process")
	if err != nil || len(only) != 1 || !slices.Equal(only[0].Seeds, Seeds{1, 7}) {
		t.Fatalf("Only(process) = %v, %v", only, err)
	}
	if _, err := s.Runtimes.Only("docker"); err == nil || !strings.Contains(err.Error(), "sim, process") {
		t.Fatalf("Only(docker) on a sim+process plan: %v", err)
	}
}

// A plan is validated once, at load: each refusal names the fix.
func TestRuntimesRefused(t *testing.T) {
	base := "name: m\nconfigs: [{acks: all}]\nnemeses: [{name: none, kinds: [none]}]\n"
	for body, want := range map[string]string{
		base + "seeds: 3\nruntimes: {sim: 3}\n": "seeds and runtimes both given",
		base + "runtimes: {simulation: 3}\n":    "not a runtime",
		base + "runtimes: {sim: 0}\n":           "seeds",
		base + "runtimes: {}\n":                 "no runtime named",
		base + "runtimes: [sim, process]\n":     "give a runtime per line",
		"name: m\ndefaults: {args: [--runtime, process]}\nconfigs: [{acks: all}]\nnemeses: [{name: none, kinds: [none]}]\nruntimes: {sim: 3}\n": "defaults picks a runtime",
		"name: m\nconfigs: [{acks: all}]\nnemeses: [{name: none, kinds: [none], settings: {runtime: docker}}]\nruntimes: {sim: 3}\n":            "nemesis none picks a runtime",
	} {
		if _, err := loadBody(t, body); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %q", body, err, want)
		}
	}
}

// gregor matrix --seeds RUNTIME=N,...: seeds 1..N per runtime, checked as
// a file's plan is; it replaces the file's seeds.
func TestParseRuntimeSeeds(t *testing.T) {
	r, err := ParseRuntimeSeeds("sim=30, process=3")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Names(), []string{"sim", "process"}) || len(r[0].Seeds) != 30 || !slices.Equal(r[1].Seeds, Seeds{1, 2, 3}) {
		t.Fatalf("parsed %+v", r)
	}
	for _, bad := range []string{"sim", "sim=0", "sim=x", "sim=3,sim=4", "auto=3", "sim=1001"} {
		if _, err := ParseRuntimeSeeds(bad); err == nil || !strings.Contains(err.Error(), "--seeds") {
			t.Errorf("--seeds %s: %v", bad, err)
		}
	}
	s, err := loadBody(t, "name: m\nconfigs: [{acks: all}]\nnemeses: [{name: none, kinds: [none]}]\nseeds: 5\n")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UseRuntimes(r); err != nil {
		t.Fatal(err)
	}
	if cells, _ := s.Cells(); len(cells) != 33 {
		t.Fatalf("%d cells after --seeds sim=30,process=3, want 33 (the file's seeds: replaced)", len(cells))
	}
	s.WithSeedCount(2)
	if cells, _ := s.Cells(); len(cells) != 4 {
		t.Fatalf("%d cells after WithSeedCount(2) on two runtimes, want 4", len(cells))
	}
}

// The sim-agree*.yaml files measure the sim against the process runtime on
// default.yaml's cells: their defaults, rows and nemeses must stay
// default.yaml's, or the agreement they show is of another matrix; and
// together they cover every one of its cells, so no cell goes unmeasured.
func TestSimAgreeIsDefaultsRows(t *testing.T) {
	def, err := Load("default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("sim-agree*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no sim-agree*.yaml (%v)", err)
	}
	covered := map[[2]string]bool{}
	for _, f := range files {
		agree, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(def.Defaults, agree.Defaults) {
			t.Errorf("%s's defaults differ from default.yaml's", f)
		}
		for _, n := range agree.Nemeses {
			if !slices.ContainsFunc(def.Nemeses, func(d Nemesis) bool { return reflect.DeepEqual(n, d) }) {
				t.Errorf("%s's nemesis %s is not one of default.yaml's", f, n.Name)
			}
		}
		for _, c := range agree.Configs {
			if !slices.ContainsFunc(def.Configs, func(d Settings) bool { return reflect.DeepEqual(c, d) }) {
				t.Errorf("%s's row %s is not one of default.yaml's", f, c.Label())
			}
			for _, n := range agree.Nemeses {
				covered[[2]string{c.Label(), n.Name}] = true
			}
		}
		if sim, _ := agree.Runtimes.Runtime("sim"); len(sim) < 30 {
			t.Errorf("%s: %d sim seeds, want at least 30", f, len(sim))
		}
		if proc, _ := agree.Runtimes.Runtime("process"); len(proc) < 3 {
			t.Errorf("%s: %d process seeds, want at least 3", f, len(proc))
		}
	}
	for _, c := range def.Configs {
		for _, n := range def.Nemeses {
			if !covered[[2]string{c.Label(), n.Name}] {
				t.Errorf("default.yaml's cell %s x %s is in no sim-agree*.yaml", c.Label(), n.Name)
			}
		}
	}
}
