package engine

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Schedule gives the intended start of every arrival of an open-model
// phase as an offset from the phase start. Arrivals are numbered from 0.
type Schedule interface {
	// At returns the intended offset of arrival i, non-decreasing in i,
	// or Never for an arrival that never comes (a zero rate).
	// Callers must ask for arrivals in increasing order (Poisson schedules
	// draw their gaps sequentially).
	At(i int64) time.Duration
}

// Never is the offset of an arrival that never comes: At returns it for
// the arrivals of a zero rate (a pause, or past the end of a ramp down to
// 0/s). It is at or past every phase's duration, so a pacer that stops at
// its duration stops there.
const Never = time.Duration(math.MaxInt64)

// RateCurve is an arrival rate that moves linearly from From to To
// (arrivals per second, ≥ 0) over Over. From == To is a constant rate;
// 0/s is a pause, in which nothing arrives. Either end of a ramp may be
// 0/s.
type RateCurve struct {
	From float64       `json:"from"`
	To   float64       `json:"to"`
	Over time.Duration `json:"over"`
}

// Count is the expected number of arrivals in [0, t): the area under the
// rate curve, Λ(t) = r0·t + (r1−r0)·t²/(2T), clamped to the ramp.
func (c RateCurve) Count(t time.Duration) float64 {
	s := t.Seconds()
	if c.From == c.To || c.Over <= 0 {
		return c.From * s
	}
	T := c.Over.Seconds()
	if s > T {
		s = T
	}
	return c.From*s + (c.To-c.From)*s*s/(2*T)
}

// Inverse returns the time t at which Λ(t) = u, solving the quadratic
// a·t² + b·t − u = 0 with a = (r1−r0)/(2T), b = r0 in the cancellation-free
// form t = 2u / (b + √(b² + 4au)); from 0/s (b = 0) that is √(u/a), and
// down to 0/s the root at u = Λ(T) is T itself. Past the end of a ramp the
// rate stays To. Where the curve never reaches u (a zero rate, or past
// the end of a ramp down to 0/s) it returns Never. The result is never
// negative, NaN or infinite.
func (c RateCurve) Inverse(u float64) time.Duration {
	if c.From == c.To || c.Over <= 0 {
		if c.From <= 0 {
			return Never // 0/s: the area never grows
		}
		return secs(u / c.From)
	}
	T := c.Over.Seconds()
	if total := c.Count(c.Over); u > total {
		if c.To <= 0 {
			return Never
		}
		return secs(T + (u-total)/c.To)
	}
	a := (c.To - c.From) / (2 * T)
	b := c.From
	d := b*b + 4*a*u
	if d < 0 {
		d = 0 // rounding at u = Λ(T) of a ramp down to 0/s
	}
	den := b + math.Sqrt(d)
	if den <= 0 {
		return 0 // u = 0 on a ramp from 0/s
	}
	return min(secs(2*u/den), c.Over)
}

// lead is the area under the curve at which a uniform schedule's arrival
// 0 comes: 0 when the curve starts at a positive rate (arrival 0 at the
// phase start, then one per unit of area), 1 when it starts at 0/s. A
// rate of zero asks for nothing, so a ramp from 0/s sends nothing at its
// first instant: its first arrival comes once one arrival's worth of area
// has passed, Λ(t) = 1, which is t = √(2/slope) (slope = r1/T).
func (c RateCurve) lead() float64 {
	if c.From <= 0 {
		return 1
	}
	return 0
}

// secs converts seconds to a Duration, rounding to the nanosecond; a
// value beyond time.Duration (or NaN) is Never, a negative one 0.
func secs(s float64) time.Duration {
	switch {
	case !(s < float64(math.MaxInt64)/1e9):
		return Never
	case s <= 0:
		return 0
	}
	return time.Duration(math.Round(s * 1e9))
}

// Uniform spaces arrivals evenly in the rate curve's own time:
// At(i) = Λ⁻¹(i + ℓ), with ℓ = 0 when the curve starts at a positive
// rate and ℓ = 1 when it starts at 0/s (see lead). For a constant rate r
// this is i/r, computed from the arrival count, never by adding gaps, so
// it cannot drift. For a ramp from 0/s to r1 over T it is √(2(i+1)T/r1);
// for a ramp from r0 down to 0/s the last arrival comes before T. At a
// constant 0/s every arrival is Never.
type Uniform struct{ Curve RateCurve }

// At implements Schedule.
func (u Uniform) At(i int64) time.Duration { return u.Curve.Inverse(float64(i) + u.Curve.lead()) }

// Before returns how many arrivals of the schedule come before t:
// ⌈Λ(t) − ℓ⌉, and never fewer than 0 (ℓ as in At).
func (u Uniform) Before(t time.Duration) int64 {
	return max(0, int64(math.Ceil(u.Curve.Count(t)-u.Curve.lead()-1e-9)))
}

// Poisson draws exponential gaps with mean 1 (a unit-rate Poisson process)
// from a seeded generator and maps each point through Λ⁻¹, which gives a
// Poisson process with the curve's (possibly ramping) rate: At(i) =
// Λ⁻¹(E₁ + … + E_i), E ~ Exp(1). The same seed gives the same arrivals.
// At is safe for concurrent use.
type Poisson struct {
	Curve RateCurve

	mu   sync.Mutex
	rng  *rand.Rand
	next int64   // next arrival index whose point is not drawn yet
	sum  float64 // unit-rate point of arrival next-1
}

// NewPoisson returns a Poisson schedule seeded with seed.
func NewPoisson(c RateCurve, seed int64) *Poisson {
	return &Poisson{Curve: c, rng: rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))}
}

// At implements Schedule. Arrival 0 comes at the first drawn point, so a
// phase does not start with a burst at offset 0.
func (p *Poisson) At(i int64) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i < p.next-1 {
		// Rewinding would need the history; schedules are read in order.
		i = p.next - 1
	}
	for p.next <= i {
		p.sum += p.rng.ExpFloat64()
		p.next++
	}
	return p.Curve.Inverse(p.sum)
}

// maxDueWalk bounds how many Poisson arrivals Due draws one by one.
const maxDueWalk = 10_000_000

// Due returns how many arrivals of the schedule come before t: the index
// of the first arrival at or after t, searching from index from (whose
// predecessors are all before t). For a Uniform schedule, and a segment's
// view of one (Segment.Schedule), it is closed form (Uniform.Before); a Poisson schedule is walked arrival by arrival, and past
// maxDueWalk draws the rest is its expectation Λ(t) − Λ(At(last)), so
// that even an absurd backlog is counted at once.
func Due(s Schedule, t time.Duration, from int64) int64 {
	if u, ok := s.(Uniform); ok {
		return max(from, u.Before(t))
	}
	if ss, ok := s.(segmentSchedule); ok {
		if u, ok := ss.sch.(Uniform); ok {
			// The segment's arrivals among the whole schedule's before t.
			return max(from, ss.s.Requests(u.Before(t)))
		}
	}
	j := from
	for ; j < from+maxDueWalk; j++ {
		if s.At(j) >= t {
			return j
		}
	}
	if p, ok := s.(*Poisson); ok {
		rest := p.Curve.Count(t) - p.Curve.Count(s.At(j-1))
		return j + int64(max(0, math.Round(rest)))
	}
	return j
}
