package measure

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestLive_AgreesWithSummary: the live p99 is the nearest-rank p99 the
// summary reports, for sample counts where the rank sits on every kind of
// boundary, and the counts agree.
func TestLive_AgreesWithSummary(t *testing.T) {
	for _, n := range []int{1, 2, 99, 100, 101, 1000, 1001, 12345} {
		r := NewRecorder(4, Options{})
		rng := rand.New(rand.NewPCG(uint64(n), 7))
		for i := range n {
			done := time.Duration(rng.ExpFloat64() * float64(5*time.Millisecond))
			r.Record(i, &Result{Seq: uint64(i + 1), Done: done, Outcome: okOutcome})
		}
		l := r.Live()
		s := r.Summary(time.Second)
		want, wok := s.Response.Percentile(99)
		if l.P99 != want || l.P99OK != wok || l.Requests != s.Requests || l.OK != s.OK {
			t.Errorf("n %d: live p99 %v (%v) requests %d ok %d; summary p99 %v (%v) requests %d ok %d",
				n, l.P99, l.P99OK, l.Requests, l.OK, want, wok, s.Requests, s.OK)
		}
	}
	if l := NewRecorder(2, Options{}).Live(); l.P99OK {
		t.Errorf("empty recorder: live p99 %v reported", l.P99)
	}
}

// TestLive_AllocatesNothing: the progress line's once-a-second Live
// reuses its histogram (it allocated 184 KiB and an index every second,
// garbage that piled up over a long run of idle connections).
func TestLive_AllocatesNothing(t *testing.T) {
	r := NewRecorder(16, Options{})
	for i := range 1000 {
		r.Record(i, &Result{Done: time.Duration(i) * time.Microsecond, Outcome: okOutcome})
	}
	r.Live()
	if a := testing.AllocsPerRun(20, func() { r.Live() }); a > 1 {
		t.Errorf("Live allocates %.1f times a call, want at most 1", a)
	}
}

// TestRecord_OKPathAllocatesNothing: booking an ok result allocates
// nothing once each histogram holds a sample, whatever its latency and
// whichever second of a 10-minute timeline it lands in, within one
// interval (here the whole phase; TestIntervals_AllocationsPerInterval
// bounds what moving on to the next interval costs): the heap of a
// long open-model run stays flat (bench/soak.sh at 2000/s: 14,771 KiB at
// the first progress line, 14,802 at the last, no GC in 11 minutes).
// Latencies reaching new
// histogram buckets touch pages of memory already allocated; that is RSS
// growth bounded by the histograms' size, not heap growth.
func TestRecord_OKPathAllocatesNothing(t *testing.T) {
	r := NewRecorder(4, Options{Duration: 10 * time.Minute, Interval: 10 * time.Minute})
	ok := okOutcome
	ok.FirstByte, ok.Connect = time.Millisecond, time.Millisecond
	for i := range 4 {
		r.Record(i, &Result{Done: time.Millisecond, Outcome: ok})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var i int
	res := &Result{}
	if a := testing.AllocsPerRun(20000, func() {
		i++
		// Completions spread over the whole timeline, latencies from
		// microseconds to seconds.
		lat := time.Duration(rng.ExpFloat64() * float64(time.Duration(1)<<rng.IntN(32)))
		done := time.Duration(i) * 30 * time.Millisecond
		*res = Result{Seq: uint64(i), Intended: done - lat, Sent: done - lat/2, Done: done, Outcome: ok}
		r.Record(i, res)
	}); a != 0 {
		t.Errorf("Record allocated %.2f times per ok result; want 0", a)
	}
}
