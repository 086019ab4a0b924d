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
//
// This is the arithmetic of scale-out; segments are not wired into the
// run loop yet.
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
