package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
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
		// Ramp 0→100/s over 10 s: Λ(t) = 5t². Nothing comes at 0/s: arrival
		// i comes at Λ⁻¹(i+1), the first at √(2/slope) = √(1/5) s, and
		// arrival 124 at 5 s.
		{"ramp from zero, first", RateCurve{From: 0, To: 100, Over: 10 * time.Second}, 0, 447213595 * time.Nanosecond},
		{"ramp from zero, 125th", RateCurve{From: 0, To: 100, Over: 10 * time.Second}, 124, 5 * time.Second},
		// Λ(10) = 500: arrival 499 is at the ramp's end, then 100/s.
		{"ramp from zero, at the top", RateCurve{From: 0, To: 100, Over: 10 * time.Second}, 499, 10 * time.Second},
		{"ramp from zero, past the top", RateCurve{From: 0, To: 100, Over: 10 * time.Second}, 599, 11 * time.Second},
		// Ramp 100→0/s over 10 s: Λ(t) = 100t − 5t², Λ(10) = 500. Arrival 0
		// at the start; arrival i at (100 − √(10000 − 20i))/10.
		{"ramp to zero, first", RateCurve{From: 100, To: 0, Over: 10 * time.Second}, 0, 0},
		{"ramp to zero, 375th", RateCurve{From: 100, To: 0, Over: 10 * time.Second}, 375, 5 * time.Second},
		// The last arrival before the end: (100 − √20)/10 s.
		{"ramp to zero, last", RateCurve{From: 100, To: 0, Over: 10 * time.Second}, 499, 9552786405 * time.Nanosecond},
		// Λ(T) itself is T: at the phase's end, so never sent.
		{"ramp to zero, at the end", RateCurve{From: 100, To: 0, Over: 10 * time.Second}, 500, 10 * time.Second},
		// After the ramp the rate is 0/s: nothing more ever comes.
		{"ramp to zero, past the end", RateCurve{From: 100, To: 0, Over: 10 * time.Second}, 501, Never},
		// 50→0/s over 4 s: Λ(t) = 50t − 6.25t², Λ(4) = 100; arrival 99 at
		// (50 − √(2500 − 25·99))/12.5 = 3.6 s.
		{"short ramp to zero, last", RateCurve{From: 50, To: 0, Over: 4 * time.Second}, 99, 3600 * time.Millisecond},
		// 0/s is a pause: no arrival ever comes, not even the first.
		{"pause, first", RateCurve{From: 0, To: 0}, 0, Never},
		{"pause, later", RateCurve{From: 0, To: 0, Over: 5 * time.Second}, 1000, Never},
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

// Before counts the arrivals At puts before t, and agrees with At.
func TestUniformBefore(t *testing.T) {
	tests := []struct {
		name  string
		curve RateCurve
		t     time.Duration
		want  int64
	}{
		// 10/s for 30 s: ⌈300⌉.
		{"constant", RateCurve{From: 10, To: 10}, 30 * time.Second, 300},
		// A pause offers nothing, however long.
		{"pause", RateCurve{From: 0, To: 0, Over: 5 * time.Second}, 5 * time.Second, 0},
		// 0→100/s over 10 s: Λ = 500, the first unit of area has no
		// arrival at its start: ⌈500 − 1⌉.
		{"ramp from zero", RateCurve{From: 0, To: 100, Over: 10 * time.Second}, 10 * time.Second, 499},
		// Before the first arrival at √(1/5) s ≈ 447 ms: none.
		{"ramp from zero, early", RateCurve{From: 0, To: 100, Over: 10 * time.Second}, 447 * time.Millisecond, 0},
		{"ramp from zero, nothing yet", RateCurve{From: 0, To: 100, Over: 10 * time.Second}, 0, 0},
		// 100→0/s over 10 s: Λ = 500, arrivals 0…499.
		{"ramp to zero", RateCurve{From: 100, To: 0, Over: 10 * time.Second}, 10 * time.Second, 500},
		// 0→7/s over 3 s: Λ = 10.5, ⌈9.5⌉ = 10.
		{"ramp from zero, fractional", RateCurve{From: 0, To: 7, Over: 3 * time.Second}, 3 * time.Second, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := Uniform{Curve: tt.curve}
			got := u.Before(tt.t)
			if got != tt.want {
				t.Fatalf("Before(%s) = %d, want %d", tt.t, got, tt.want)
			}
			// The definition: arrivals got−1 and got straddle t.
			if got > 0 && u.At(got-1) >= tt.t {
				t.Fatalf("At(%d) = %s, not before %s", got-1, u.At(got-1), tt.t)
			}
			if u.At(got) < tt.t {
				t.Fatalf("At(%d) = %s, before %s, but Before says %d", got, u.At(got), tt.t, got)
			}
		})
	}
}

// Property: for random curves, zero ends included, every schedule's At is
// non-negative and non-decreasing, is Never only where the curve can no
// longer reach the arrival (a 0/s end), never lands past the end of a ramp
// down to 0/s, and inverts the area: Λ(At(i)) = i + ℓ for a uniform
// schedule, Λ(Λ⁻¹(u)) = u for any u the curve reaches.
func TestSchedulesWithZeros(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rate := func() float64 {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return rng.Float64() // below one a second
		default:
			return rng.Float64() * 5000
		}
	}
	for k := range 300 {
		c := RateCurve{From: rate(), To: rate(), Over: time.Duration(1 + rng.Int64N(int64(20*time.Second)))}
		if k%10 == 0 {
			c.To = c.From // constant, zero included
		}
		total := c.Count(c.Over)
		// Offsets are rounded to the nanosecond: up to half a nanosecond of
		// the top rate's area, plus floating point.
		tol := func(u float64) float64 { return max(c.From, c.To)*1e-9 + 1e-9*max(1, u) }
		// A constant 0/s reaches nothing; a ramp reaches its area, and
		// beyond it when it ends above 0/s.
		reaches := func(u float64) bool {
			if c.From == c.To {
				return c.From > 0
			}
			return u <= total || c.To > 0
		}
		for j := range 50 {
			u := rng.Float64() * total * 1.5
			if j == 0 {
				u = total // the very end
			}
			at := c.Inverse(u)
			if !reaches(u) {
				if at != Never {
					t.Fatalf("%+v: Inverse(%g) = %s beyond the curve's area %g, want Never", c, u, at, total)
				}
				continue
			}
			if at < 0 || at == Never {
				t.Fatalf("%+v: Inverse(%g) = %s", c, u, at)
			}
			if got := c.Count(min(at, c.Over)); at <= c.Over && math.Abs(got-u) > tol(u) {
				t.Fatalf("%+v: Count(Inverse(%g)) = %g", c, u, got)
			}
		}
		for _, s := range []Schedule{Uniform{Curve: c}, NewPoisson(c, int64(k))} {
			prev := time.Duration(0)
			for i := int64(0); i < 3000; i++ {
				at := s.At(i)
				if at < prev {
					t.Fatalf("%T %+v: At(%d) = %s < At(%d) = %s", s, c, i, at, i-1, prev)
				}
				prev = at
				if at == Never {
					if reaches(math.Inf(1)) {
						t.Fatalf("%T %+v: At(%d) = Never, yet the rate stays %g/s", s, c, i, c.To)
					}
					break
				}
				if c.To == 0 && c.From != 0 && at > c.Over {
					t.Fatalf("%T %+v: At(%d) = %s past the end of a ramp down to 0/s", s, c, i, at)
				}
				if u, ok := s.(Uniform); ok && at <= c.Over {
					want := float64(i) + u.Curve.lead()
					if got := c.Count(at); math.Abs(got-want) > tol(want) {
						t.Fatalf("%+v: Λ(At(%d)) = %g, want %g", c, i, got, want)
					}
				}
			}
		}
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
