// Package stats is the one place rates are computed and printed: every
// rate gregor reports (validate's detection and false-alarm rates, the
// matrix's share of runs that lost acks) is k of n runs with its 95% Wilson
// score interval, never a bare percentage.
package stats

import (
	"fmt"
	"math"
	"slices"
)

// z95 is the standard normal quantile for a two-sided 95% interval.
const z95 = 1.959963984540054

// Rate is k successes (detections, false alarms, runs that lost acks) in n
// runs.
type Rate struct {
	K int `json:"k"`
	N int `json:"n"`
}

// P is K/N (0 when N is 0).
func (r Rate) P() float64 {
	if r.N == 0 {
		return 0
	}
	return float64(r.K) / float64(r.N)
}

// Wilson is the 95% Wilson score interval of the rate (Wilson 1927): unlike
// the normal approximation it stays inside [0, 1] and is not degenerate at
// 0 of n or n of n (0 of 20 bounds the rate only to [0, 16.1%]). With no
// runs it is [0, 1]: nothing is known.
func (r Rate) Wilson() (lo, hi float64) {
	if r.N <= 0 {
		return 0, 1
	}
	n, p, z2 := float64(r.N), r.P(), z95*z95
	den := 1 + z2/n
	center := (p + z2/(2*n)) / den
	half := z95 / den * math.Sqrt(p*(1-p)/n+z2/(4*n*n))
	return max(0, center-half), min(1, center+half)
}

// String renders "9/10 = 90% (95% CI 60%-98%)".
func (r Rate) String() string {
	lo, hi := r.Wilson()
	return fmt.Sprintf("%d/%d = %s (95%% CI %s-%s)", r.K, r.N, pct(r.P()), pct(lo), pct(hi))
}

// Interval renders just "[60%, 98%]".
func (r Rate) Interval() string {
	lo, hi := r.Wilson()
	return fmt.Sprintf("[%s, %s]", pct(lo), pct(hi))
}

func pct(f float64) string {
	v := 100 * f
	if v >= 0.05 && v < 9.95 && math.Abs(v-math.Round(v)) >= 0.05 {
		return fmt.Sprintf("%.1f%%", v)
	}
	return fmt.Sprintf("%.0f%%", v)
}

// Spread is the min / median / max of a sample (lost acks per seed).
type Spread struct {
	Min    int `json:"min"`
	Median int `json:"median"`
	Max    int `json:"max"`
	N      int `json:"n"`
}

// SpreadOf summarises xs (the median of an even sample is the lower middle
// value, a count that occurred); the zero Spread for none.
func SpreadOf(xs []int) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return Spread{Min: s[0], Median: s[(len(s)-1)/2], Max: s[len(s)-1], N: len(s)}
}

// String renders "3 / 7 / 12".
func (s Spread) String() string { return fmt.Sprintf("%d / %d / %d", s.Min, s.Median, s.Max) }
