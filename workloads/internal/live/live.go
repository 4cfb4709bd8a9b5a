// Package live keeps a workload's running clients by process, for the
// nemeses that act on one of them (client-crash, pause-producer: DESIGN.md
// section 3). A draw comes from the workload's seeded RNG over the sorted
// processes, so a seed replays which client a fault hits.
package live

import (
	"math/rand/v2"
	"slices"
	"sync"
)

// Set is the running clients, by process.
type Set[C any] struct {
	mu  sync.Mutex
	m   map[int]C  // process -> its client; a process is in it while its client runs
	rng *rand.Rand // guarded by mu: draws must keep the seed's order
}

// New is an empty set drawing from rng, which the set then owns.
func New[C any](rng *rand.Rand) *Set[C] {
	return &Set[C]{m: map[int]C{}, rng: rng}
}

// Add registers proc's client. A process has one client at a time: a
// client that replaces another is a new process.
func (s *Set[C]) Add(proc int, c C) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.m[proc]; dup {
		panic("live: process registered twice")
	}
	s.m[proc] = c
}

// Remove forgets proc's client (nothing if it was not registered).
func (s *Set[C]) Remove(proc int) {
	s.mu.Lock()
	delete(s.m, proc)
	s.mu.Unlock()
}

// Draw picks one registered client that eligible accepts (called with the
// set locked; nil accepts every one). ok is false when none does.
func (s *Set[C]) Draw(eligible func(C) bool) (proc int, c C, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	procs := make([]int, 0, len(s.m))
	for p, c := range s.m {
		if eligible == nil || eligible(c) {
			procs = append(procs, p)
		}
	}
	if len(procs) == 0 {
		return -1, c, false
	}
	slices.Sort(procs)
	p := procs[s.rng.IntN(len(procs))]
	return p, s.m[p], true
}
