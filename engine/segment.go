package engine

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Segment is part K of N of a plan (0 ≤ K < N), for N load generators
// that together offer the load of one: the open model's arrival i belongs
// to segment i mod N and keeps its global intended time, so that the
// union of the segments' schedules is exactly the one-generator schedule;
// a closed model's connections and a phase's `requests` bound split
// exactly, the first C mod N segments taking one more. The zero Segment
// (N 0) is the whole plan.
// Runner.Segment runs one; Phase gives a phase's share.
type Segment struct {
	K, N int
}

// MaxSegments bounds N: far more generators than any test needs, and
// small enough that N × any count stays inside an int64.
const MaxSegments = 10_000

// ParseSegment reads "K/N" (0-based K, 0 ≤ K < N ≤ MaxSegments).
// Errors name the text and what is wrong with it.
func ParseSegment(text string) (Segment, error) {
	k, n, ok := strings.Cut(text, "/")
	ki, errK := strconv.Atoi(k)
	ni, errN := strconv.Atoi(n)
	switch {
	case !ok || errK != nil || errN != nil:
		return Segment{}, fmt.Errorf("segment %q: want K/N, e.g. 0/4 (K counts from 0)", text)
	case ni < 1 || ni > MaxSegments:
		return Segment{}, fmt.Errorf("segment %q: N must be 1 to %d", text, MaxSegments)
	case ki < 0 || ki >= ni:
		return Segment{}, fmt.Errorf("segment %q: K must be 0 to %d (K counts from 0)", text, ni-1)
	}
	return Segment{K: ki, N: ni}, nil
}

// Check reports whether pl can be split into s.N segments: every open
// phase needs a connection in each segment to carry its arrivals, so at
// least N connections, and a phase bounded by count at least N requests;
// and no phase whose length depends on the target (closed, bounded by
// count alone) may come before another, which the timetable could then
// not start at one instant in every segment.
// (A closed phase may leave a segment without a connection: that segment
// then sends nothing in it.)
func (s Segment) Check(pl *Plan) error {
	if s.Whole() {
		return nil
	}
	for i, p := range pl.Phases {
		if p.ExpectedDuration < 0 && (i < len(pl.Phases)-1 || pl.Repeats > 1) {
			// The phases after it could not start together on a timetable.
			return fmt.Errorf("phase %q is bounded by its request count alone, so its length depends on the target: segments could not start the phases after it together; give it a duration too, or make it the run's only bounded-by-count phase at the end (and one repeat)", p.Name)
		}
		if p.Model == Open && p.Connections < s.N {
			return fmt.Errorf("phase %q has %d connection(s): an open phase cannot be split into %d segments, each needs one to carry its arrivals", p.Name, p.Connections, s.N)
		}
		if p.Requests > 0 && p.Requests < int64(s.N) {
			// A share of 0 would read as no bound at all.
			return fmt.Errorf("phase %q is bounded by %d requests: it cannot be split into %d segments, each needs one", p.Name, p.Requests, s.N)
		}
		if p.Model == Closed && p.Requests > 0 && p.Connections%s.N != 0 {
			// One generator's connections share the count as they go;
			// segments split it evenly, so their connections must be too.
			return fmt.Errorf("phase %q is closed and bounded by %d requests over %d connections: split into %d segments, the count goes evenly to each, so the connections must split evenly too (a multiple of %d)", p.Name, p.Requests, p.Connections, s.N, s.N)
		}
	}
	return nil
}

// Whole reports whether s is the whole plan (no segment, or 0/1).
func (s Segment) Whole() bool { return s.N <= 1 }

// String is "K/N", or "whole".
func (s Segment) String() string {
	if s.Whole() {
		return "whole"
	}
	return fmt.Sprintf("%d/%d", s.K, s.N)
}

// Connections is this segment's share of c connections:
// ⌊c/N⌋, plus one for the first c mod N segments.
func (s Segment) Connections(c int) int {
	if s.Whole() {
		return c
	}
	share := c / s.N
	if s.K < c%s.N {
		share++
	}
	return share
}

// Requests is this segment's share of a bound of r requests: how many of
// the global arrivals 0 … r−1 are congruent to K mod N, ⌈(r−K)/N⌉ (0 when
// r ≤ K), so that the shares sum to r.
func (s Segment) Requests(r int64) int64 {
	if s.Whole() {
		return r
	}
	k, n := int64(s.K), int64(s.N)
	if r <= k {
		return 0
	}
	return (r - k + n - 1) / n
}

// Global is the global index of this segment's arrival i (both from 0):
// i·N + K. A sequence number ({{seq}}, a correlation id) made from it is
// unique across the segments.
func (s Segment) Global(i int64) int64 {
	if s.Whole() {
		return i
	}
	return i*int64(s.N) + int64(s.K)
}

// Schedule is sch seen from this segment: its arrival i is the global
// arrival Global(i), at that arrival's global intended offset. A seeded
// Poisson schedule draws the same points in every segment, so the
// segments' arrivals interleave exactly as one generator's would.
func (s Segment) Schedule(sch Schedule) Schedule {
	if s.Whole() {
		return sch
	}
	return segmentSchedule{s: s, sch: sch}
}

type segmentSchedule struct {
	s   Segment
	sch Schedule
}

// At implements Schedule.
func (ss segmentSchedule) At(i int64) time.Duration { return ss.sch.At(ss.s.Global(i)) }

// Phase is p as segment s runs it (p itself for the whole plan): its
// share of the connections (and of each stair of a ramp) and of the
// `requests` bound, and of the expected arrivals; the open model's
// schedule is the segment's view of p's (Segment.Schedule), and the
// window (the denominator of its rates) stays the whole phase's, so that
// every segment of a phase covers the same span of time.
func (s Segment) Phase(p *PhasePlan) *PhasePlan {
	if s.Whole() {
		return p
	}
	v := *p
	v.whole, v.segment = p, s
	v.Connections = s.Connections(p.Connections)
	v.Steps = nil
	for _, st := range p.Steps {
		v.Steps = append(v.Steps, Step{At: st.At, Connections: s.Connections(st.Connections)})
	}
	if p.Requests > 0 {
		v.Requests = s.Requests(p.Requests)
	}
	if p.ExpectedRequests > 0 && p.Model == Open {
		// The whole phase's first E arrivals; this segment's are those
		// congruent to K mod N.
		v.ExpectedRequests = s.Requests(p.ExpectedRequests)
	} else if p.ExpectedRequests > 0 && p.Requests > 0 {
		v.ExpectedRequests = v.Requests
	}
	return &v
}

// Whole is the phase of the whole plan a segment's phase is part of
// (p itself when it is not a segment's).
func (p *PhasePlan) Whole() *PhasePlan {
	if p.whole != nil {
		return p.whole
	}
	return p
}

// MaxFingerprinted bounds the arrivals ArrivalFingerprint walks: a phase
// with more has no fingerprint (walking 20 million arrivals takes about
// a second).
const MaxFingerprinted = 20_000_000

// Fingerprint identifies the arrivals an open phase's schedule assigns
// in a repeat: how many, and the sum modulo 2⁶⁴ of a hash of each one's
// global index and global intended offset. The fingerprints of the
// segments of a phase add up (count and sum alike) to the whole phase's
// exactly when their arrivals together are the whole schedule's, each
// once and at its own instant (up to a hash collision).
type Fingerprint struct {
	Repeat int    `json:"repeat"`
	Phase  string `json:"phase"`
	Count  int64  `json:"count"`
	// Sum is the hashes' sum, in hex.
	Sum string `json:"sum"`
}

// ArrivalFingerprint walks the arrivals p's schedule assigns in a repeat
// (1-based), bounded as the pacer bounds them (the `requests` count and
// the duration). ok is false for a closed phase, and for an open one of
// more than MaxFingerprinted arrivals.
func ArrivalFingerprint(p *PhasePlan, repeat int) (fp Fingerprint, ok bool) {
	if p.Model != Open {
		return fp, false
	}
	sched := p.Schedule(repeat)
	var sum uint64
	var i int64
	for ; ; i++ {
		if (p.Requests > 0 && i >= p.Requests) || i > MaxFingerprinted {
			break
		}
		at := sched.At(i)
		if p.Duration > 0 && at >= p.Duration {
			break
		}
		sum += mix64(uint64(p.segment.Global(i)) ^ mix64(uint64(at)))
	}
	if i > MaxFingerprinted {
		return fp, false
	}
	return Fingerprint{Repeat: repeat, Phase: p.Name, Count: i, Sum: strconv.FormatUint(sum, 16)}, true
}

// AddFingerprints adds b's count and sum to a's (same repeat and phase).
func AddFingerprints(a, b Fingerprint) (Fingerprint, error) {
	x, err1 := strconv.ParseUint(a.Sum, 16, 64)
	y, err2 := strconv.ParseUint(b.Sum, 16, 64)
	if err1 != nil || err2 != nil {
		return a, fmt.Errorf("fingerprint sum %q or %q is not hexadecimal", a.Sum, b.Sum)
	}
	a.Count += b.Count
	a.Sum = strconv.FormatUint(x+y, 16)
	return a, nil
}

// mix64 is SplitMix64's finalizer (Steele, Lea and Flood, "Fast
// splittable pseudorandom number generators", 2014).
func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
