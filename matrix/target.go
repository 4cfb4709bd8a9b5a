package matrix

import (
	"path/filepath"
	"strings"
)

// TargetSettings are what a cell runs against: `gregor run`'s --runtime,
// --image-spec (runtime image), --bootstrap and --faults (runtime
// external). A relative file is relative to the matrix file, so a matrix and
// its spec or fault file move together. The matrix command's own --runtime,
// given after them, wins.
type TargetSettings struct {
	Runtime   string   `yaml:"runtime,omitempty"`
	ImageSpec string   `yaml:"image_spec,omitempty"`
	Bootstrap []string `yaml:"bootstrap,omitempty"`
	Faults    string   `yaml:"faults,omitempty"`
}

func mergeTarget(s, o TargetSettings) TargetSettings {
	if o.Runtime != "" {
		s.Runtime = o.Runtime
	}
	if o.ImageSpec != "" {
		s.ImageSpec = o.ImageSpec
	}
	if len(o.Bootstrap) > 0 {
		s.Bootstrap = o.Bootstrap
	}
	if o.Faults != "" {
		s.Faults = o.Faults
	}
	return s
}

// resolve makes the files absolute against base, the matrix file's folder.
func (t *TargetSettings) resolve(base string) {
	for _, p := range []*string{&t.ImageSpec, &t.Faults} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(base, *p)
		}
	}
}

func (t TargetSettings) args() []string {
	var a []string
	if t.Runtime != "" {
		a = append(a, "--runtime", t.Runtime)
	}
	if t.ImageSpec != "" {
		a = append(a, "--image-spec", t.ImageSpec)
	}
	if len(t.Bootstrap) > 0 {
		a = append(a, "--bootstrap", strings.Join(t.Bootstrap, ","))
	}
	if t.Faults != "" {
		a = append(a, "--faults", t.Faults)
	}
	return a
}
