// Package matrix expands a configuration matrix (matrix/*.yaml) into cells
// — a configuration x a nemesis set x a seed — and runs each through
// `gregor run` in its own process, so a cell that crashes is recorded as
// crashed with its log and the matrix goes on.
package matrix

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"gregor/internal/strictyaml"
)

// Spec is a matrix file.
type Spec struct {
	Name string `yaml:"name"`
	// Defaults apply to every cell; configurations and nemesis sets
	// override them.
	Defaults Settings `yaml:"defaults"`
	// Configs is an explicit list of configurations. Dimensions, if set,
	// adds their cross product.
	Configs    []Settings `yaml:"configs"`
	Dimensions Dimensions `yaml:"dimensions"`
	Nemeses    []Nemesis  `yaml:"nemeses"`
	// Seeds: a list of seeds, or a count N (seeds 1..N). Every cell runs
	// once per seed; the report shows a cell's spread over them.
	Seeds Seeds `yaml:"seeds"`
	// Runtimes, instead of Seeds, runs every cell on each runtime named
	// with that runtime's own seeds (runtimes.go): cheap simulated runs
	// for the rates, a process-runtime seed beside them as the check.
	Runtimes RuntimeSeeds `yaml:"runtimes"`
}

// Seeds are a matrix's seeds; YAML gives a list or a count.
type Seeds []int64

// UnmarshalYAML takes `seeds: 3` (seeds 1, 2, 3) or `seeds: [1, 7]`.
func (s *Seeds) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var k int
		if err := n.Decode(&k); err != nil || k < 1 || k > 1000 {
			return fmt.Errorf("line %d: seeds: %q: give a count 1..1000 or a list of seeds", n.Line, n.Value)
		}
		*s = make(Seeds, k)
		for i := range k {
			(*s)[i] = int64(i + 1)
		}
		return nil
	}
	var list []int64
	if err := n.Decode(&list); err != nil {
		return fmt.Errorf("line %d: seeds: give a count or a list of integer seeds: %w", n.Line, err)
	}
	seen := map[int64]bool{}
	for _, v := range list {
		if seen[v] {
			return fmt.Errorf("line %d: seeds: %d twice (each seed runs once per cell)", n.Line, v)
		}
		seen[v] = true
	}
	*s = list
	return nil
}

// Settings are the `gregor run` flags of a configuration. Pointers tell
// "not set here" from a zero value.
type Settings struct {
	Acks        string   `yaml:"acks,omitempty"`
	MinISR      *int     `yaml:"min_isr,omitempty"`
	RF          *int     `yaml:"rf,omitempty"`
	Unclean     *bool    `yaml:"unclean,omitempty"`
	Idempotence *bool    `yaml:"idempotence,omitempty"`
	Fsync       string   `yaml:"fsync,omitempty"`
	LazyFS      *bool    `yaml:"lazyfs,omitempty"`
	Nodes       *int     `yaml:"nodes,omitempty"`
	Controllers *int     `yaml:"controllers,omitempty"`
	Partitions  *int     `yaml:"partitions,omitempty"`
	TimeLimit   string   `yaml:"time_limit,omitempty"`
	Rate        *float64 `yaml:"rate,omitempty"`
	Bugs        []string `yaml:"bugs,omitempty"`
	// TargetSettings: what the cells run against (a runtime, an image
	// spec, an external cluster and its fault file).
	TargetSettings `yaml:",inline"`
	// Args are extra `gregor run` flags.
	Args []string `yaml:"args,omitempty"`
	// GroupSettings: the group workload (group.go).
	GroupSettings `yaml:",inline"`
}

// Dimensions are lists whose cross product gives configurations.
type Dimensions struct {
	Acks        []string `yaml:"acks"`
	MinISR      []int    `yaml:"min_isr"`
	RF          []int    `yaml:"rf"`
	Unclean     []bool   `yaml:"unclean"`
	Idempotence []bool   `yaml:"idempotence"`
	Fsync       []string `yaml:"fsync"`
	// GroupDimensions: commit mode, auto-commit interval, assignor, static.
	GroupDimensions `yaml:",inline"`
}

// Nemesis is a named nemesis set.
type Nemesis struct {
	Name     string   `yaml:"name"`
	Kinds    []string `yaml:"kinds"`
	Target   string   `yaml:"target"`
	Interval string   `yaml:"interval"`
	Duration string   `yaml:"duration"`
	// Shapes restricts the partition shapes drawn (default: all).
	Shapes []string `yaml:"shapes"`
	// Settings override the configuration for this nemesis (e.g. lazyfs
	// for power loss).
	Settings Settings `yaml:"settings"`
}

// Cell is one run of the matrix.
type Cell struct {
	Config  Settings
	Nemesis Nemesis
	Seed    int64
	Label   string // the configuration's row label
	// Runtime is the runtime the matrix's runtimes: put the cell on (""
	// when the cell's own settings pick it).
	Runtime  string
	ID       string // stable, filesystem-safe
	Args     []string
	Duration time.Duration // the fault phase, for the estimate
}

// Load reads and validates a matrix file.
func Load(path string) (*Spec, error) {
	var s Spec
	if err := strictyaml.Load(path, &s); err != nil {
		return nil, err
	}
	if len(s.Runtimes) > 0 && len(s.Seeds) > 0 {
		return nil, fmt.Errorf("%s: seeds and runtimes both given: give seeds per runtime under runtimes (e.g. {sim: 30, process: 1}), or seeds alone", path)
	}
	if len(s.Seeds) == 0 && len(s.Runtimes) == 0 {
		s.Seeds = []int64{1}
	}
	base := filepath.Dir(path)
	s.Defaults.TargetSettings.resolve(base)
	for i := range s.Configs {
		s.Configs[i].TargetSettings.resolve(base)
	}
	for i := range s.Nemeses {
		s.Nemeses[i].Settings.TargetSettings.resolve(base)
	}
	if len(s.Nemeses) == 0 {
		return nil, fmt.Errorf("%s: no nemeses: list at least one nemesis set (kinds: [none] for a fault-free run)", path)
	}
	if err := s.checkRuntimes(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// UseRuntimes replaces the spec's seeds with a per-runtime plan (gregor
// matrix --seeds), checked as one in the file is.
func (s *Spec) UseRuntimes(r RuntimeSeeds) error {
	if err := r.check(); err != nil {
		return err
	}
	s.Seeds, s.Runtimes = nil, r
	return s.checkRuntimes()
}

// checkRuntimes refuses a per-runtime plan beside settings that pick a
// runtime of their own: which would a cell run on?
func (s *Spec) checkRuntimes() error {
	if len(s.Runtimes) == 0 {
		return nil
	}
	where := map[string]Settings{"defaults": s.Defaults}
	for i, c := range s.Configs {
		where[fmt.Sprintf("configs[%d]", i)] = c
	}
	for _, n := range s.Nemeses {
		where["nemesis "+n.Name] = n.Settings
	}
	for _, k := range slices.Sorted(maps.Keys(where)) {
		if namesRuntime(where[k]) {
			return fmt.Errorf("%s picks a runtime (runtime: or --runtime) and runtimes: puts every cell on %s: drop one", k, strings.Join(s.Runtimes.Names(), " and "))
		}
	}
	return nil
}

// WithSeedCount gives every cell seeds 1..n: on each runtime of the
// spec's runtimes, or as its seeds.
func (s *Spec) WithSeedCount(n int) { s.WithSeedRange(1, n) }

// WithSeedRange gives every cell seeds first..first+n-1, so that a long
// set of controls can be run in parts (seeds 1-5 one day, 6-10 the next)
// whose counts add up.
func (s *Spec) WithSeedRange(first int64, n int) {
	seeds := make(Seeds, n)
	for i := range n {
		seeds[i] = first + int64(i)
	}
	if len(s.Runtimes) == 0 {
		s.Seeds = seeds
		return
	}
	plan := make(RuntimeSeeds, len(s.Runtimes))
	for i, rs := range s.Runtimes {
		plan[i] = RuntimeSeed{Runtime: rs.Runtime, Seeds: seeds}
	}
	s.Runtimes = plan
}

// SeedsPerCell is how many runs each cell has, over all its runtimes.
func (s *Spec) SeedsPerCell() int {
	n := 0
	for _, rs := range s.plan() {
		n += len(rs.Seeds)
	}
	return n
}

// plan is the seeds per runtime the cells run: the runtimes, or the seeds
// on the runtime each cell's settings pick ("").
func (s *Spec) plan() RuntimeSeeds {
	if len(s.Runtimes) > 0 {
		return s.Runtimes
	}
	return RuntimeSeeds{{Seeds: s.Seeds}}
}

// merge overlays o on s.
func merge(s, o Settings) Settings {
	if o.Acks != "" {
		s.Acks = o.Acks
	}
	for _, p := range []struct {
		dst **int
		src *int
	}{{&s.MinISR, o.MinISR}, {&s.RF, o.RF}, {&s.Nodes, o.Nodes}, {&s.Controllers, o.Controllers}, {&s.Partitions, o.Partitions}} {
		if p.src != nil {
			*p.dst = p.src
		}
	}
	for _, p := range []struct {
		dst **bool
		src *bool
	}{{&s.Unclean, o.Unclean}, {&s.Idempotence, o.Idempotence}, {&s.LazyFS, o.LazyFS}} {
		if p.src != nil {
			*p.dst = p.src
		}
	}
	if o.Fsync != "" {
		s.Fsync = o.Fsync
	}
	if o.TimeLimit != "" {
		s.TimeLimit = o.TimeLimit
	}
	if o.Rate != nil {
		s.Rate = o.Rate
	}
	if len(o.Bugs) > 0 {
		s.Bugs = o.Bugs
	}
	s.Args = append(append([]string(nil), s.Args...), o.Args...)
	s.TargetSettings = mergeTarget(s.TargetSettings, o.TargetSettings)
	s.GroupSettings = mergeGroup(s.GroupSettings, o.GroupSettings)
	return s
}

// crossSettings multiplies out by n values of one dimension (set applies
// value i); n = 0 leaves out as it is (the dimension is not crossed).
func crossSettings(out []Settings, n int, set func(s *Settings, i int)) []Settings {
	if n == 0 {
		return out
	}
	next := make([]Settings, 0, len(out)*n)
	for _, s := range out {
		for i := range n {
			c := s
			set(&c, i)
			next = append(next, c)
		}
	}
	return next
}

// Configs are the configurations the dimensions' cross product names (none
// when no dimension is set).
func (d Dimensions) Configs() []Settings { return d.expand() }

func (d Dimensions) expand() []Settings {
	out := []Settings{{}}
	cross := func(n int, set func(s *Settings, i int)) { out = crossSettings(out, n, set) }
	cross(len(d.Acks), func(s *Settings, i int) { s.Acks = d.Acks[i] })
	cross(len(d.MinISR), func(s *Settings, i int) { v := d.MinISR[i]; s.MinISR = &v })
	cross(len(d.RF), func(s *Settings, i int) { v := d.RF[i]; s.RF = &v })
	cross(len(d.Unclean), func(s *Settings, i int) { v := d.Unclean[i]; s.Unclean = &v })
	cross(len(d.Idempotence), func(s *Settings, i int) { v := d.Idempotence[i]; s.Idempotence = &v })
	cross(len(d.Fsync), func(s *Settings, i int) { s.Fsync = d.Fsync[i] })
	out = d.GroupDimensions.expand(out)
	if len(out) == 1 && len(d.Acks)+len(d.MinISR)+len(d.RF)+len(d.Unclean)+len(d.Idempotence)+len(d.Fsync)+d.GroupDimensions.size() == 0 {
		return nil
	}
	return out
}

// Label is the configuration's row label in reports.
func (s Settings) Label() string {
	var parts []string
	add := func(k, v string) { parts = append(parts, k+"="+v) }
	if s.Acks != "" {
		add("acks", s.Acks)
	}
	if s.MinISR != nil {
		add("minisr", strconv.Itoa(*s.MinISR))
	}
	if s.RF != nil {
		add("rf", strconv.Itoa(*s.RF))
	}
	if s.Unclean != nil {
		add("unclean", strconv.FormatBool(*s.Unclean))
	}
	if s.Idempotence != nil {
		add("idem", strconv.FormatBool(*s.Idempotence))
	}
	if s.Fsync != "" {
		add("fsync", s.Fsync)
	}
	if s.LazyFS != nil && *s.LazyFS {
		parts = append(parts, "lazyfs")
	}
	if len(s.Bugs) > 0 {
		add("bugs", strings.Join(s.Bugs, ","))
	}
	if s.Runtime != "" {
		add("runtime", s.Runtime)
	}
	s.GroupSettings.label(add)
	if len(s.Args) > 0 {
		// Extra flags tell configurations apart (matrix/txn.yaml's
		// transaction versions differ only there).
		parts = append(parts, strings.Join(s.Args, " "))
	}
	if len(parts) == 0 {
		return "defaults" // a row that sets nothing of its own
	}
	return strings.Join(parts, " ")
}

// args renders settings as `gregor run` flags.
func (s Settings) args() []string {
	var a []string
	if s.Acks != "" {
		a = append(a, "--acks", s.Acks)
	}
	ints := []struct {
		flag string
		v    *int
	}{{"--min-isr", s.MinISR}, {"--rf", s.RF}, {"--nodes", s.Nodes}, {"--controllers", s.Controllers}, {"--partitions", s.Partitions}}
	for _, p := range ints {
		if p.v != nil {
			a = append(a, p.flag, strconv.Itoa(*p.v))
		}
	}
	if s.Unclean != nil {
		a = append(a, "--unclean="+strconv.FormatBool(*s.Unclean))
	}
	if s.Idempotence != nil {
		a = append(a, "--idempotence="+strconv.FormatBool(*s.Idempotence))
	}
	if s.LazyFS != nil {
		a = append(a, "--lazyfs="+strconv.FormatBool(*s.LazyFS))
	}
	if s.Fsync != "" {
		a = append(a, "--fsync", s.Fsync)
	}
	if s.TimeLimit != "" {
		a = append(a, "--time-limit", s.TimeLimit)
	}
	if s.Rate != nil {
		a = append(a, "--rate", strconv.FormatFloat(*s.Rate, 'f', -1, 64))
	}
	for _, b := range s.Bugs {
		a = append(a, "--bug", b)
	}
	a = append(a, s.TargetSettings.args()...)
	a = append(a, s.GroupSettings.args()...)
	return append(a, s.Args...)
}

// impossible names why a configuration cannot run ("" if it can): the
// cross product of dimensions skips these; an explicit config is left for
// `gregor run` to refuse loudly.
func impossible(s Settings) string {
	if s.Idempotence != nil && *s.Idempotence && s.Acks != "all" && s.Acks != "" {
		return "idempotence needs acks=all"
	}
	if s.MinISR != nil && s.RF != nil && *s.MinISR > *s.RF {
		return "min ISR > RF"
	}
	return ""
}

// Cells expands the spec in a stable order.
func (s *Spec) Cells() ([]Cell, error) {
	configs := append([]Settings(nil), s.Configs...)
	configs = append(configs, s.Dimensions.expand()...)
	if len(configs) == 0 {
		return nil, fmt.Errorf("matrix %q: no configurations: give configs or dimensions", s.Name)
	}
	var cells []Cell
	for _, c := range configs {
		if c.Workload == "" {
			c.Workload = s.Defaults.Workload // the row label names a group workload set by default
		}
		if impossible(merge(s.Defaults, c)) != "" && len(s.Configs) == 0 {
			continue // a cross product may name impossible combinations
		}
		for _, n := range s.Nemeses {
			for _, rs := range s.plan() {
				for _, seed := range rs.Seeds {
					cell, err := s.cell(c, n, rs.Runtime, seed)
					if err != nil {
						return nil, err
					}
					cells = append(cells, cell)
				}
			}
		}
	}
	sort.SliceStable(cells, func(i, j int) bool { return cells[i].ID < cells[j].ID })
	return cells, nil
}

// cell is configuration c under nemesis n on runtime rt ("": the one its
// settings pick) with one seed.
func (s *Spec) cell(c Settings, n Nemesis, rt string, seed int64) (Cell, error) {
	full := merge(merge(s.Defaults, c), n.Settings)
	if full.Acks == "" {
		full.Acks = "all"
	}
	cell := Cell{Config: full, Nemesis: n, Seed: seed, Label: c.Label(), Runtime: rt} // a nemesis's own settings (lazyfs for power loss) stay in its column
	cell.Args = append(full.args(), "--nemesis", strings.Join(n.Kinds, ","), "--seed", strconv.FormatInt(seed, 10))
	if n.Target != "" {
		cell.Args = append(cell.Args, "--nemesis-target", n.Target)
	}
	if n.Interval != "" {
		cell.Args = append(cell.Args, "--nemesis-interval", n.Interval)
	}
	if n.Duration != "" {
		cell.Args = append(cell.Args, "--nemesis-duration", n.Duration)
	}
	if len(n.Shapes) > 0 {
		cell.Args = append(cell.Args, "--partition-shapes", strings.Join(n.Shapes, ","))
	}
	if rt != "" {
		cell.Args = append(cell.Args, "--runtime", rt)
	}
	if d, err := time.ParseDuration(full.TimeLimit); err == nil {
		cell.Duration = d
	} else if full.TimeLimit != "" {
		return Cell{}, fmt.Errorf("time_limit %q: %v (e.g. 30s)", full.TimeLimit, err)
	}
	h := sha256.Sum256([]byte(strings.Join(cell.Args, " ")))
	on := ""
	if rt != "" {
		on = rt + "-"
	}
	cell.ID = fmt.Sprintf("%s-%s-%ss%d-%s", slug(cell.Label), slug(n.Name), on, seed, hex.EncodeToString(h[:3]))
	return cell, nil
}

func slug(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		case r == '=':
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Shard keeps cells i of n (1-based), dealing them round-robin so shards
// get similar mixes.
func Shard(cells []Cell, i, n int) ([]Cell, error) {
	if n < 1 || i < 1 || i > n {
		return nil, fmt.Errorf("--shard %d/%d: give i/n with 1 <= i <= n", i, n)
	}
	var out []Cell
	for k, c := range cells {
		if k%n == i-1 {
			out = append(out, c)
		}
	}
	return out, nil
}
