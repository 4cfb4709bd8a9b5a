package matrix

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// RuntimeSeeds runs every cell of a matrix on several runtimes, each with
// its own seeds (issue 27): many seeds on the simulation, whose runs are
// cheap, give each cell a rate worth an interval; a seed or two on the
// process runtime beside them is the fidelity cross-check. In a matrix
// file, instead of `seeds:`:
//
//	runtimes:
//	  sim: 30     # seeds 1..30
//	  process: 1  # seed 1 (a list, [1, 7], names seeds)
//
// Order is the file's; a runtime's cells are one lane of the runner.
type RuntimeSeeds []RuntimeSeed

// RuntimeSeed is one runtime and the seeds its cells run.
type RuntimeSeed struct {
	Runtime string
	Seeds   Seeds
}

// SeedRuntimes are the runtimes a per-runtime seed count may name: those
// `gregor run --runtime` takes that boot a cluster from the run's own flags
// or settings (auto is not one runtime: it would be docker on one machine
// and process on the next).
var SeedRuntimes = []string{"sim", "process", "docker", "image", "external"}

// UnmarshalYAML takes a mapping from runtime to a seed count or list.
func (r *RuntimeSeeds) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: runtimes: give a runtime per line with its seeds, e.g. {sim: 30, process: 1}", n.Line)
	}
	var out RuntimeSeeds
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var s Seeds
		if err := s.UnmarshalYAML(v); err != nil {
			return fmt.Errorf("runtimes: %s: %w", k.Value, err)
		}
		out = append(out, RuntimeSeed{Runtime: k.Value, Seeds: s})
	}
	if err := out.check(); err != nil {
		return fmt.Errorf("line %d: runtimes: %w", n.Line, err)
	}
	*r = out
	return nil
}

// check refuses an empty plan, an unknown or repeated runtime.
func (r RuntimeSeeds) check() error {
	if len(r) == 0 {
		return fmt.Errorf("no runtime named: give e.g. {sim: 30, process: 1}")
	}
	seen := map[string]bool{}
	for _, rs := range r {
		if !slices.Contains(SeedRuntimes, rs.Runtime) {
			return fmt.Errorf("%q: not a runtime (give one of %s)", rs.Runtime, strings.Join(SeedRuntimes, ", "))
		}
		if seen[rs.Runtime] {
			return fmt.Errorf("%s twice (give its seeds once)", rs.Runtime)
		}
		seen[rs.Runtime] = true
		if len(rs.Seeds) == 0 {
			return fmt.Errorf("%s: no seeds", rs.Runtime)
		}
	}
	return nil
}

// ParseRuntimeSeeds reads `gregor matrix --seeds`: RUNTIME=N,... (seeds
// 1..N per runtime), checked as a matrix file's runtimes are.
func ParseRuntimeSeeds(s string) (RuntimeSeeds, error) {
	var out RuntimeSeeds
	for part := range strings.SplitSeq(s, ",") {
		name, count, ok := strings.Cut(strings.TrimSpace(part), "=")
		k, err := strconv.Atoi(count)
		if !ok || err != nil || k < 1 || k > 1000 {
			return nil, fmt.Errorf("--seeds %q: give RUNTIME=N,... with N in 1..1000, e.g. sim=30,process=3", s)
		}
		seeds := make(Seeds, k)
		for i := range k {
			seeds[i] = int64(i + 1)
		}
		out = append(out, RuntimeSeed{Runtime: name, Seeds: seeds})
	}
	if err := out.check(); err != nil {
		return nil, fmt.Errorf("--seeds %q: %w", s, err)
	}
	return out, nil
}

// Runtime returns the seeds of runtime name, if the plan has it.
func (r RuntimeSeeds) Runtime(name string) (Seeds, bool) {
	for _, rs := range r {
		if rs.Runtime == name {
			return rs.Seeds, true
		}
	}
	return nil, false
}

// Names are the plan's runtimes, in order.
func (r RuntimeSeeds) Names() []string {
	var out []string
	for _, rs := range r {
		out = append(out, rs.Runtime)
	}
	return out
}

// Only keeps runtime name's seeds (`gregor matrix --runtime NAME` on a
// matrix with runtimes), refusing a runtime the plan does not name.
func (r RuntimeSeeds) Only(name string) (RuntimeSeeds, error) {
	s, ok := r.Runtime(name)
	if !ok {
		return nil, fmt.Errorf("--runtime %s: this matrix runs on %s (its runtimes:); give one of them, or --seeds %s=N", name, strings.Join(r.Names(), ", "), name)
	}
	return RuntimeSeeds{{Runtime: name, Seeds: s}}, nil
}

// namesRuntime reports whether settings pick a runtime themselves (a
// runtime: setting or a --runtime flag), which a per-runtime plan would
// contradict.
func namesRuntime(s Settings) bool {
	if s.Runtime != "" {
		return true
	}
	for _, a := range s.Args {
		if a == "--runtime" || strings.HasPrefix(a, "--runtime=") {
			return true
		}
	}
	return false
}
