package stats

import (
	"math"
	"testing"
)

// Reference values: Wilson score interval at 95% (e.g. Newcombe 1998,
// table I; R's binom.confint(method="wilson")).
func TestWilson(t *testing.T) {
	for _, c := range []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 20, 0, 0.1611},
		{0, 100, 0, 0.0370},
		{10, 10, 0.7225, 1},
		{9, 10, 0.5958, 0.9821},
		{81, 263, 0.2553, 0.3662}, // Newcombe's example 1
		{15, 148, 0.0624, 0.1605}, // Newcombe's example 2
	} {
		lo, hi := Rate{c.k, c.n}.Wilson()
		if math.Abs(lo-c.lo) > 5e-4 || math.Abs(hi-c.hi) > 5e-4 {
			t.Errorf("%d/%d: [%.4f, %.4f], want [%.4f, %.4f]", c.k, c.n, lo, hi, c.lo, c.hi)
		}
	}
	if lo, hi := (Rate{}).Wilson(); lo != 0 || hi != 1 {
		t.Errorf("no runs: [%v, %v], want [0, 1]", lo, hi)
	}
	if got := (Rate{0, 20}).String(); got != "0/20 = 0% (95% CI 0%-16%)" {
		t.Errorf("String %q", got)
	}
}

func TestSpread(t *testing.T) {
	if s := SpreadOf([]int{12, 0, 7}); s != (Spread{0, 7, 12, 3}) || s.String() != "0 / 7 / 12" {
		t.Errorf("%+v %s", s, s)
	}
	if s := SpreadOf([]int{5, 1, 9, 3}); s.Median != 3 {
		t.Errorf("even sample median %d, want 3 (lower middle)", s.Median)
	}
	if s := SpreadOf(nil); s != (Spread{}) {
		t.Errorf("empty %+v", s)
	}
}
