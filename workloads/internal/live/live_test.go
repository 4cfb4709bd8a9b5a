package live

import (
	"math/rand/v2"
	"testing"
)

// The same seed and the same registrations draw the same processes,
// whatever order the map iterates in; ineligible and removed clients are
// never drawn; an empty or all-ineligible set says so.
func TestDraw(t *testing.T) {
	draws := func() []int {
		s := New[string](rand.New(rand.NewPCG(7, 1)))
		for p := range 20 {
			s.Add(p, map[bool]string{true: "even", false: "odd"}[p%2 == 0])
		}
		s.Remove(4)
		var out []int
		for range 50 {
			p, c, ok := s.Draw(func(c string) bool { return c == "even" })
			if !ok || c != "even" || p%2 != 0 || p == 4 {
				t.Fatalf("drew %d %q %v", p, c, ok)
			}
			out = append(out, p)
		}
		return out
	}
	a, b := draws(), draws()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("draw %d: %d then %d with the same seed", i, a[i], b[i])
		}
	}
	s := New[int](rand.New(rand.NewPCG(1, 1)))
	if _, _, ok := s.Draw(nil); ok {
		t.Fatal("drew from an empty set")
	}
	s.Add(3, 3)
	if _, _, ok := s.Draw(func(int) bool { return false }); ok {
		t.Fatal("drew an ineligible client")
	}
	if p, c, ok := s.Draw(nil); !ok || p != 3 || c != 3 {
		t.Fatalf("drew %d %d %v", p, c, ok)
	}
}

func TestAddTwicePanics(t *testing.T) {
	s := New[int](rand.New(rand.NewPCG(1, 1)))
	s.Add(1, 1)
	defer func() {
		if recover() == nil {
			t.Fatal("a second client for process 1 was taken")
		}
	}()
	s.Add(1, 2)
}
