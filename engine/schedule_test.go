package engine

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func TestUniformAt(t *testing.T) {
	tests := []struct {
		name  string
		curve RateCurve
		i     int64
		want  time.Duration
	}{
		// 10/s: arrival i is at i/10 s.
		{"constant first", RateCurve{From: 10, To: 10}, 0, 0},
		{"constant 300th", RateCurve{From: 10, To: 10}, 299, 29900 * time.Millisecond},
		// 600/m is 10/s: the same schedule.
		{"per minute", RateCurve{From: 600.0 / 60, To: 600.0 / 60}, 150, 15 * time.Second},
		// Ramp 0→100/s over 10 s: Λ(t) = 5t², so arrival 125 is at 5 s.
		{"ramp from zero", RateCurve{From: 0, To: 100, Over: 10 * time.Second}, 125, 5 * time.Second},
		// Ramp 100→300/s over 10 s: Λ(t) = 100t + 10t²; Λ(5) = 750.
		{"ramp up", RateCurve{From: 100, To: 300, Over: 10 * time.Second}, 750, 5 * time.Second},
		// Ramp down 300→100/s over 10 s: Λ(t) = 300t − 10t²; Λ(5) = 1250.
		{"ramp down", RateCurve{From: 300, To: 100, Over: 10 * time.Second}, 1250, 5 * time.Second},
		// Past a ramp's end the rate stays at To: Λ(10) = 2000, then 300/s.
		{"past the ramp", RateCurve{From: 100, To: 300, Over: 10 * time.Second}, 2300, 11 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Uniform{Curve: tt.curve}.At(tt.i)
			if d := got - tt.want; d < -time.Microsecond || d > time.Microsecond {
				t.Fatalf("At(%d) = %s, want %s", tt.i, got, tt.want)
			}
		})
	}
}

func TestSchedulesNonDecreasing(t *testing.T) {
	curves := []RateCurve{
		{From: 1000, To: 1000},
		{From: 0, To: 500, Over: 3 * time.Second},
		{From: 800, To: 10, Over: 2 * time.Second},
	}
	for _, c := range curves {
		for _, s := range []Schedule{Uniform{Curve: c}, NewPoisson(c, 7)} {
			prev := time.Duration(-1)
			for i := int64(0); i < 5000; i++ {
				at := s.At(i)
				if at < prev {
					t.Fatalf("%T %+v: At(%d) = %s < At(%d) = %s", s, c, i, at, i-1, prev)
				}
				prev = at
			}
		}
	}
}

func TestPoissonRateAndSeed(t *testing.T) {
	c := RateCurve{From: 1000, To: 1000}
	a, b := NewPoisson(c, 42), NewPoisson(c, 42)
	n := int64(100000)
	var gaps []float64
	prev := time.Duration(0)
	for i := int64(0); i < n; i++ {
		x, y := a.At(i), b.At(i)
		if x != y {
			t.Fatalf("same seed, different arrival %d: %s vs %s", i, x, y)
		}
		gaps = append(gaps, (x - prev).Seconds())
		prev = x
	}
	// n arrivals at 1000/s take n/1000 s; the standard error of a sum of n
	// Exp gaps is √n/1000 s ≈ 0.32 s, so 2 s is > 6 sigma.
	if got := prev.Seconds(); math.Abs(got-100) > 2 {
		t.Fatalf("100000 Poisson arrivals at 1000/s ended at %.2f s, want 100 ± 2", got)
	}
	// Exponential gaps: the coefficient of variation is 1 (uniform: 0).
	var sum, sq float64
	for _, g := range gaps {
		sum += g
		sq += g * g
	}
	mean := sum / float64(len(gaps))
	cv := math.Sqrt(sq/float64(len(gaps))-mean*mean) / mean
	if cv < 0.95 || cv > 1.05 {
		t.Fatalf("coefficient of variation of gaps = %.3f, want ≈ 1", cv)
	}
	if NewPoisson(c, 43).At(10) == NewPoisson(c, 42).At(10) {
		t.Fatalf("different seeds gave the same arrival")
	}
}

func ExampleUniform_At() {
	s := Uniform{Curve: RateCurve{From: 4, To: 4}}
	for i := int64(0); i < 5; i++ {
		fmt.Println(s.At(i))
	}
	// Output:
	// 0s
	// 250ms
	// 500ms
	// 750ms
	// 1s
}
