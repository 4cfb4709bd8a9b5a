package kit

import (
	"fmt"
	"slices"
	"strings"
)

// Registry is the workloads a binary knows, in the order registered; the
// first is the default (--workload's default, a matrix row that names
// none).
type Registry struct {
	ds []Descriptor
}

// NewRegistry registers ds; a name given twice is a programming error.
func NewRegistry(ds ...Descriptor) *Registry {
	r := &Registry{}
	for _, d := range ds {
		if _, dup := r.Lookup(d.Name()); dup {
			panic("kit: workload " + d.Name() + " registered twice")
		}
		r.ds = append(r.ds, d)
	}
	return r
}

// All are the descriptors in registration order.
func (r *Registry) All() []Descriptor { return slices.Clone(r.ds) }

// Default is the first registered workload.
func (r *Registry) Default() Descriptor { return r.ds[0] }

// IsDefault: name is the default workload's, or "" (which means it).
func (r *Registry) IsDefault(name string) bool { return name == "" || name == r.Default().Name() }

// Lookup finds a workload by name.
func (r *Registry) Lookup(name string) (Descriptor, bool) {
	for _, d := range r.ds {
		if d.Name() == name {
			return d, true
		}
	}
	return nil, false
}

// Get finds a workload by name, or refuses it naming the ones there are.
func (r *Registry) Get(name string) (Descriptor, error) {
	if d, ok := r.Lookup(name); ok {
		return d, nil
	}
	return nil, fmt.Errorf("--workload %q: give %s", name, OrList(r.Names(func(Descriptor) bool { return true })))
}

// Names are the names of the workloads keep accepts, in registration order.
func (r *Registry) Names(keep func(Descriptor) bool) []string {
	var out []string
	for _, d := range r.ds {
		if keep(d) {
			out = append(out, d.Name())
		}
	}
	return out
}

// FlagOwner is the workload whose own flag fl is (OwnFlags), "" for a
// flag every workload reads.
func (r *Registry) FlagOwner(fl string) string {
	for _, d := range r.ds {
		if slices.Contains(d.OwnFlags(), fl) {
			return d.Name()
		}
	}
	return ""
}

// OrList joins names as a sentence does: "a", "a or b", "a, b or c".
func OrList(names []string) string { return joinLast(names, " or ") }

// AndList joins names as "a", "a and b", "a, b and c".
func AndList(names []string) string { return joinLast(names, " and ") }

func joinLast(names []string, last string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + last + names[len(names)-1]
}
