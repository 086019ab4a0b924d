package compare

import (
	"math"
	"slices"

	"golang.org/x/perf/benchmath"
)

// Alpha is the significance level of the Mann–Whitney U test: a change
// is called significant when p < Alpha.
const Alpha = 0.05

// MinRepeats is the fewest repeats per side for which a comparison is
// statistically summarized (a p-value and a significance call); below it
// the values are shown and nothing is claimed.
const MinRepeats = 3

// Spread is one metric on one side: its per-repeat values (sorted), their
// median and their range. Nothing is averaged: a mean of percentiles is
// not a percentile of anything.
type Spread struct {
	Values           []float64
	Median, Min, Max float64
}

// N is the number of repeats that had the metric.
func (s Spread) N() int { return len(s.Values) }

// spreadOf sorts vs and takes its median. The median of an even count is
// the worse of the two middle values (the higher for a metric where higher
// is worse), as in the run's own across-repeats summary (engine.Across):
// always a value that was measured, never the flattering one.
func spreadOf(vs []float64, higherIsWorse bool) Spread {
	vs = slices.Clone(vs)
	slices.Sort(vs)
	if len(vs) == 0 {
		return Spread{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	med := vs[(len(vs)-1)/2]
	if higherIsWorse {
		med = vs[len(vs)/2]
	}
	return Spread{Values: vs, Median: med, Min: vs[0], Max: vs[len(vs)-1]}
}

// Test is the outcome of the Mann–Whitney U test of two samples.
type Test struct {
	// P is the two-sided p-value of the hypothesis that both samples come
	// from the same distribution.
	P float64
	// MinP is the smallest two-sided p-value the test can give at these
	// sample sizes, 2/C(n1+n2, n1) (complete separation, no ties): when it
	// is not below Alpha, no change can be significant, however large.
	MinP float64
	// Significant is P < Alpha.
	Significant bool
	// Warnings are benchmath's (e.g. too few samples).
	Warnings []string
}

// MannWhitney tests a against b with benchmath.AssumeNothing (the
// Mann–Whitney U test, exact for small samples) at level Alpha.
func MannWhitney(a, b []float64) Test {
	th := benchmath.DefaultThresholds
	th.CompareAlpha = Alpha
	// NewSample sorts in place: give it copies.
	c := benchmath.AssumeNothing.Compare(
		benchmath.NewSample(slices.Clone(a), &th),
		benchmath.NewSample(slices.Clone(b), &th))
	t := Test{P: c.P, MinP: MinP(len(a), len(b)), Significant: c.P < c.Alpha}
	for _, w := range c.Warnings {
		t.Warnings = append(t.Warnings, w.Error())
	}
	return t
}

// MinP is the smallest two-sided p-value of the exact Mann–Whitney U test
// with samples of n1 and n2 values: 2/C(n1+n2, n1), capped at 1. For 3
// and 3 it is 0.1, so three repeats a side can never show a change at
// α = 0.05; 4 and 4 give 0.029, 5 and 5 give 0.0079.
func MinP(n1, n2 int) float64 {
	if n1 == 0 || n2 == 0 {
		return 1
	}
	// C(n1+n2, n1) computed in floating point, exact enough here.
	c := 1.0
	for i := 1; i <= n1; i++ {
		c = c * float64(n2+i) / float64(i)
	}
	return math.Min(1, 2/c)
}
