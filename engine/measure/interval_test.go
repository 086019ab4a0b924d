package measure

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
)

func TestIntervalFor(t *testing.T) {
	for _, c := range []struct {
		phase, want time.Duration
	}{
		{0, time.Second},                                     // unknown length: start at 1 s
		{-time.Second, time.Second},                          // nonsense length: 1 s too
		{time.Second, time.Second},                           // a short phase
		{10 * time.Minute, time.Second},                      // exactly 600 intervals of 1 s
		{10*time.Minute + time.Millisecond, 2 * time.Second}, // one more would be 601
		{20 * time.Minute, 2 * time.Second},                  // 600 of 2 s
		{21 * time.Minute, 5 * time.Second},                  // 630 of 2 s: too many
		{time.Hour, 10 * time.Second},                        // 360 of 10 s (5 s: 720)
		{150 * time.Minute, 15 * time.Second},                // 600 of 15 s
		{5 * time.Hour, 30 * time.Second},                    // 600 of 30 s
		{10 * time.Hour, time.Minute},                        // 600 of 1 min
		{10*time.Hour + time.Second, 2 * time.Minute},        // whole minutes beyond
		{100 * time.Hour, 10 * time.Minute},                  // 600 of 10 min
	} {
		if got := IntervalFor(c.phase); got != c.want {
			t.Errorf("IntervalFor(%s) = %s, want %s", c.phase, got, c.want)
		}
	}
}

// TestCoarserIsAMultiple: whatever length a recorder starts with, the
// length it coarsens to holds a whole number of its intervals and keeps
// the span within MaxIntervals.
func TestCoarserIsAMultiple(t *testing.T) {
	for _, cur := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 15 * time.Second, 7 * time.Second, 1500 * time.Millisecond, 3 * time.Minute} {
		for _, span := range []time.Duration{time.Second, 11 * time.Minute, 3 * time.Hour, 1000 * time.Hour} {
			l := coarser(cur, span)
			if l < cur || l%cur != 0 || intervalsIn(span, l) > MaxIntervals {
				t.Errorf("coarser(%s, %s) = %s", cur, span, l)
			}
		}
	}
}

// sample is one ok response for the interval tests.
type sample struct {
	shard          int
	done, response time.Duration
}

// wantIntervals sorts samples into intervals of length l by completion
// time, from the definition: completions before the start count in the
// first interval.
func wantIntervals(samples []sample, l time.Duration) map[time.Duration]*Dist {
	want := map[time.Duration]*Dist{}
	for _, s := range samples {
		start := max(s.done, 0) / l * l
		if want[start] == nil {
			want[start] = &Dist{}
		}
		want[start].record(s.response)
	}
	for _, d := range want {
		d.seal()
	}
	return want
}

func record(r *Recorder, samples []sample) {
	for i, s := range samples {
		r.AddArrivals(1)
		r.Record(s.shard, &Result{Seq: uint64(i + 1), Intended: s.done - s.response, Sent: s.done - s.response, Done: s.done, Outcome: okOutcome})
	}
}

// assertIntervals checks that got holds exactly the want intervals of
// length l, each with the same samples.
func assertIntervals(t *testing.T, got []Interval, want map[time.Duration]*Dist, l time.Duration) {
	t.Helper()
	starts := slices.Sorted(func(yield func(time.Duration) bool) {
		for s := range want {
			if !yield(s) {
				return
			}
		}
	})
	if len(got) != len(starts) {
		t.Fatalf("%d intervals, want %d (starts %v)", len(got), len(starts), starts)
	}
	for i := range got {
		iv := &got[i]
		if iv.Start != starts[i] || iv.Length != l {
			t.Errorf("interval %d: [%s +%s), want [%s +%s)", i, iv.Start, iv.Length, starts[i], l)
			continue
		}
		d, err := iv.Response()
		if err != nil {
			t.Fatal(err)
		}
		if iv.Count() != want[iv.Start].Count() {
			t.Errorf("interval at %s: Count %d, want %d", iv.Start, iv.Count(), want[iv.Start].Count())
		}
		w := want[iv.Start]
		if len(got) <= 50 || i%25 == 0 {
			assertSameDist(t, "interval at "+iv.Start.String(), d, w)
		} else if d.sum != w.sum || d.sumSq != w.sumSq || d.min != w.min || d.max != w.max || !d.h.Equals(w.h) {
			// The rest of assertSameDist's percentiles follow from the
			// histogram; too slow under -race for hundreds of intervals.
			t.Errorf("interval at %s: statistics differ", iv.Start)
		}
	}
}

// TestIntervals_ExactResponseTimes: every interval holds exactly the
// response times of the ok requests that completed in it, whatever the
// order the shards see them in (late samples reach back past the book's
// open intervals), with an idle shard, completions before the start and
// long after the planned end.
func TestIntervals_ExactResponseTimes(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	var samples []sample
	for i := range 20000 {
		// Four busy shards of five (shard 4 stays idle), completions over
		// 12 s, jittered so that each shard sees some out of order.
		done := time.Duration(i)*600*time.Microsecond + time.Duration(rng.IntN(40))*time.Millisecond
		samples = append(samples, sample{shard: i % 4, done: done, response: time.Duration(rng.ExpFloat64() * float64(3*time.Millisecond))})
	}
	samples = append(samples,
		sample{0, -2 * time.Second, time.Millisecond},     // before the start
		sample{1, 500 * time.Millisecond, time.Second},    // far back: its interval is long packed
		sample{2, 3 * time.Millisecond, 2 * time.Hour},    // clamped in the histogram
		sample{3, 40 * time.Second, 5 * time.Millisecond}, // long after the phase's planned 10 s
		sample{0, 2 * time.Second, 7 * time.Millisecond},  // back again
	)
	r := NewRecorder(5, Options{Duration: 10 * time.Second})
	record(r, samples)
	s := r.Summary(10 * time.Second)
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	assertIntervals(t, s.Intervals, wantIntervals(samples, time.Second), time.Second)
	// The whole phase's distribution is the merge of its intervals.
	all := &Dist{}
	for i := range s.Intervals {
		d, err := s.Intervals[i].Response()
		if err != nil {
			t.Fatal(err)
		}
		all.Merge(d)
	}
	assertSameDist(t, "Σ intervals", all, &s.Response)
}

// TestIntervals_LongPhase: a 15-minute phase gets 2 s intervals; a phase
// of unknown length whose completions run for 30 minutes coarsens its 1 s
// intervals exactly, to 2 s after 10 minutes and then to 10 s after 20
// (not 5 s, which would split intervals of 2 s), and never holds more than
// MaxIntervals.
func TestIntervals_LongPhase(t *testing.T) {
	for _, c := range []struct {
		name     string
		duration time.Duration
		span     time.Duration
		want     time.Duration
		step     time.Duration // between completions: sparse, as -race makes each interval's 190 KiB histogram slow
	}{
		{"15-minute phase", 15 * time.Minute, 15 * time.Minute, 2 * time.Second, 29 * time.Second},
		{"unknown length, 30 minutes", 0, 30 * time.Minute, 10 * time.Second, 4900 * time.Millisecond},
	} {
		rng := rand.New(rand.NewPCG(1, 5))
		var samples []sample
		for done := time.Duration(0); done < c.span; done += c.step {
			samples = append(samples, sample{shard: rng.IntN(3), done: done, response: time.Duration(rng.IntN(50_000)) * time.Microsecond})
		}
		r := NewRecorder(3, Options{Duration: c.duration})
		record(r, samples)
		s := r.Summary(c.span)
		if err := s.Check(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(s.Intervals) > MaxIntervals {
			t.Errorf("%s: %d intervals", c.name, len(s.Intervals))
		}
		assertIntervals(t, s.Intervals, wantIntervals(samples, c.want), c.want)
	}
}

// TestIntervals_MergeEqualsOneRecorder: one stream of results split over
// two recorders (two generators of one phase) merges into the intervals
// one recorder books.
func TestIntervals_MergeEqualsOneRecorder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	var samples []sample
	for i := range 6000 {
		samples = append(samples, sample{shard: i % 3, done: time.Duration(i) * time.Millisecond, response: time.Duration(rng.IntN(9000)) * time.Microsecond})
	}
	one := NewRecorder(2, Options{Duration: 6 * time.Second})
	a := NewRecorder(3, Options{Duration: 6 * time.Second})
	b := NewRecorder(1, Options{Duration: 6 * time.Second})
	record(one, samples)
	var sa, sb []sample
	for i, s := range samples {
		if rng.IntN(3) == 0 || i > 5000 { // b has none in the first and all of the last second
			sb = append(sb, s)
		} else {
			sa = append(sa, s)
		}
	}
	record(a, sa)
	record(b, sb)
	got := a.Summary(6 * time.Second)
	if err := got.Merge(b.Summary(6 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := got.Check(); err != nil {
		t.Fatal(err)
	}
	want := one.Summary(6 * time.Second)
	if len(got.Intervals) != len(want.Intervals) || len(want.Intervals) != 6 {
		t.Fatalf("%d intervals merged, %d in one recorder, want 6", len(got.Intervals), len(want.Intervals))
	}
	for i := range want.Intervals {
		g, _ := got.Intervals[i].Response()
		w, _ := want.Intervals[i].Response()
		if got.Intervals[i].Start != want.Intervals[i].Start {
			t.Errorf("interval %d starts at %s, want %s", i, got.Intervals[i].Start, want.Intervals[i].Start)
		}
		assertSameDist(t, "merged interval "+want.Intervals[i].Start.String(), g, w)
	}

	// A generator whose intervals were coarsened to 2 s: the 1 s
	// intervals merge into its 2 s ones, exactly.
	two := NewRecorder(1, Options{Interval: 2 * time.Second})
	record(two, samples)
	coarse := a.Summary(6 * time.Second)
	if err := coarse.Merge(b.Summary(6 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := coarse.Merge(two.Summary(6 * time.Second)); err != nil {
		t.Fatal(err)
	}
	doubled := append(slices.Clone(samples), samples...)
	assertIntervals(t, coarse.Intervals, wantIntervals(doubled, 2*time.Second), 2*time.Second)

	// Lengths that are not multiples of one another do not merge: s
	// keeps its own.
	c := NewRecorder(1, Options{Interval: 1500 * time.Millisecond})
	record(c, samples[:10])
	before := slices.Clone(got.Intervals)
	if err := got.Merge(c.Summary(time.Second)); err == nil || !strings.Contains(err.Error(), "intervals of 1s and of 1.5s cannot merge") {
		t.Errorf("merge of 1 s and 1.5 s intervals: %v", err)
	}
	if len(got.Intervals) != len(before) || got.Intervals[0].Count() != before[0].Count() {
		t.Error("a failed merge changed the intervals")
	}
	// A result from before intervals existed: the merge holds none, and
	// its identities still hold.
	old := want.Clone()
	old.Intervals = nil
	if err := old.Merge(want); err != nil || old.Intervals != nil || old.Check() != nil {
		t.Errorf("merge with a result without intervals: %v, %d intervals, check %v", err, len(old.Intervals), old.Check())
	}
}

func TestIntervals_JSONRoundTrip(t *testing.T) {
	r := NewRecorder(4, Options{Duration: 5 * time.Second})
	feed(r, rand.New(rand.NewPCG(2, 8)), 4000)
	s := r.Summary(4 * time.Second)
	if len(s.Intervals) < 4 {
		t.Fatalf("%d intervals: the fixture spans 4 s", len(s.Intervals))
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"intervals":[{"start_ns":0,"length_ns":1000000000,"response":{"count":`) {
		t.Errorf("JSON form: %.300s", b[strings.Index(string(b), `"intervals"`):])
	}
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Check(); err != nil {
		t.Fatal(err)
	}
	if len(back.Intervals) != len(s.Intervals) {
		t.Fatalf("%d intervals back, %d written", len(back.Intervals), len(s.Intervals))
	}
	for i := range s.Intervals {
		g, err := back.Intervals[i].Response()
		if err != nil {
			t.Fatal(err)
		}
		w, _ := s.Intervals[i].Response()
		if back.Intervals[i].Start != s.Intervals[i].Start || back.Intervals[i].Length != s.Intervals[i].Length {
			t.Errorf("interval %d moved", i)
		}
		assertSameDist(t, "interval", g, w)
	}
	if b2, _ := json.Marshal(&back); string(b2) != string(b) {
		t.Error("re-encoding differs")
	}
	// No ok response: no intervals key at all.
	if b, _ := json.Marshal(NewRecorder(1, Options{}).Summary(time.Second)); strings.Contains(string(b), "intervals") {
		t.Errorf("empty summary has intervals: %s", b)
	}
}

func TestIntervals_JSONRejects(t *testing.T) {
	rejects(t, []rejectCase{
		{"zero length", `"length_ns":1000000000`, `"length_ns":0`, "length_ns 0, want > 0"},
		{"negative start", `"start_ns":1000000000`, `"start_ns":-1000000000`, "start_ns is negative"},
		{"unaligned start", `"start_ns":1000000000`, `"start_ns":1000000001`, "not a multiple of length_ns"},
		{"count off", `"count":1`, `"count":2`, "histogram holds 1 samples, count says 2"},
		{"no response", `"response":`, `"other":`, "response missing"},
		{"broken histogram", `"hdr_us":"`, `"hdr_us":"x`, "decode histogram"},
	})
}

// A hostile tester's edits, once accepted: `"response": null` read as an
// empty interval (a RawMessage holds a null as "null", not nil), and a
// start near the end of int64 whose end overflowed, so that the HDR log
// printed a negative length.
func TestIntervals_JSONRejectsNullResponseAndOverflowingEnd(t *testing.T) {
	rejects(t, []rejectCase{
		{"null response", `"response":{`, `"response":null,"x":{`, "response is null"},
		{"start near int64's end", `"start_ns":1000000000`, `"start_ns":9223372036000000000`, "ends past 4000h0m0s"},
		{"length near int64's end", `"length_ns":1000000000`, `"length_ns":9223372036854775807`, "ends past 4000h0m0s"},
		{"end past the bound", `"start_ns":1000000000`, `"start_ns":14400000000000000`, "ends past 4000h0m0s"},
	})
}

// rejectCase is an edit of an interval's JSON (from → to) and the error
// text UnmarshalJSON must give.
type rejectCase struct{ name, from, to, want string }

// rejects checks that each edit of a good interval's JSON is refused
// with an error naming the interval and the case's text.
func rejects(t *testing.T, cases []rejectCase) {
	t.Helper()
	r := NewRecorder(1, Options{})
	record(r, []sample{{0, 1500 * time.Millisecond, time.Millisecond}})
	b, err := json.Marshal(r.Summary(2 * time.Second).Intervals[0])
	if err != nil {
		t.Fatal(err)
	}
	good := string(b)
	for _, c := range cases {
		bad := strings.Replace(good, c.from, c.to, 1)
		if bad == good {
			t.Fatalf("%s: %q not in %s", c.name, c.from, good)
		}
		var iv Interval
		err := json.Unmarshal([]byte(bad), &iv)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "interval at start_ns") {
			t.Errorf("%s: %v, want an error naming the interval and %q", c.name, err, c.want)
		}
	}
}

// TestIntervals_CheckCatchesDamage: a dropped, doubled or reordered
// interval fails Check.
func TestIntervals_CheckCatchesDamage(t *testing.T) {
	r := NewRecorder(2, Options{})
	feed(r, rand.New(rand.NewPCG(5, 5)), 3000)
	s := r.Summary(3 * time.Second)
	if err := s.Check(); err != nil || len(s.Intervals) < 3 {
		t.Fatalf("valid summary: %v, %d intervals", err, len(s.Intervals))
	}
	for _, c := range []struct {
		name   string
		break_ func(*Summary)
		want   string
	}{
		{"dropped", func(s *Summary) { s.Intervals = s.Intervals[1:] }, "intervals hold"},
		{"doubled", func(s *Summary) { s.Intervals = append(s.Intervals, s.Intervals[len(s.Intervals)-1]) }, "starts before interval"},
		{"reordered", func(s *Summary) { s.Intervals[0], s.Intervals[1] = s.Intervals[1], s.Intervals[0] }, "starts before interval"},
		{"length", func(s *Summary) { s.Intervals[1].Length = 2 * time.Second }, "length 2s, the first's is 1s"},
	} {
		b := s.Clone()
		c.break_(b)
		if err := b.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Check() = %v, want it to mention %q", c.name, err, c.want)
		}
	}
	if err := s.Check(); err != nil {
		t.Errorf("breaking clones broke the original: %v", err)
	}
}

// TestIntervals_AllocationsPerInterval: moving from one interval to the
// next allocates a bounded number of times (the interval left behind is
// encoded), however many results each interval holds.
func TestIntervals_AllocationsPerInterval(t *testing.T) {
	r := NewRecorder(2, Options{Duration: 10 * time.Minute})
	res := &Result{Outcome: drivers.Outcome{Class: drivers.OK, Responded: true}}
	var sec int
	step := func() {
		sec++
		for i := range 100 {
			res.Done = time.Duration(sec)*time.Second + time.Duration(i)*time.Millisecond
			res.Intended = res.Done - time.Duration(i%17)*time.Millisecond
			r.AddArrivals(1)
			r.Record(i, res)
		}
	}
	for range 5 {
		step() // the book's open intervals and its spare histogram
	}
	a := testing.AllocsPerRun(50, step)
	t.Logf("%.1f allocations per interval", a)
	if a > 100 {
		t.Errorf("%.1f allocations per interval of 100 results, want at most 100", a)
	}
	if s := r.Summary(10 * time.Minute); s.Check() != nil || len(s.Intervals) != 56 {
		t.Errorf("%d intervals, check %v", len(s.Intervals), s.Check())
	}
}

func BenchmarkRecordInOrder(b *testing.B) {
	// Completions in order, 1000 per second of phase time (1 ms apart), so
	// that every 1000th result moves on to the next interval.
	r := NewRecorder(1, Options{Duration: time.Hour})
	res := &Result{Outcome: okOutcome}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		res.Done = time.Duration(i) * time.Millisecond
		res.Intended = res.Done - time.Duration(i%50)*time.Millisecond
		r.Record(0, res)
	}
}

// TestIntervals_AgreeWithTimeline: 1 s intervals book completions in the
// same seconds as the timeline, so each interval's count is its second's
// ok count and its max is the second's largest response time.
func TestIntervals_AgreeWithTimeline(t *testing.T) {
	r := NewRecorder(4, Options{Duration: 10 * time.Second})
	feed(r, rand.New(rand.NewPCG(6, 1)), 8000)
	s := r.Summary(8 * time.Second)
	if len(s.Intervals) < 8 {
		t.Fatalf("%d intervals over 8 s", len(s.Intervals))
	}
	for _, iv := range s.Intervals {
		sec := s.Timeline[iv.Start/time.Second]
		d, err := iv.Response()
		if err != nil {
			t.Fatal(err)
		}
		if mx, _ := d.Max(); iv.Count() != sec.OK || mx != sec.ResponseMax || d.Sum() != sec.ResponseSum {
			t.Errorf("interval at %s: %d ok, max %s, Σ %s; timeline: %d, %s, %s", iv.Start, iv.Count(), mx, d.Sum(), sec.OK, sec.ResponseMax, sec.ResponseSum)
		}
	}
}

// TestIntervals_FarFuture: a completion at the end of time coarsens the
// intervals without overflow and keeps every sample.
func TestIntervals_FarFuture(t *testing.T) {
	r := NewRecorder(1, Options{})
	samples := []sample{{0, time.Second, time.Millisecond}, {0, math.MaxInt64, 2 * time.Millisecond}, {0, 3 * time.Second, 3 * time.Millisecond}}
	record(r, samples)
	s := r.Summary(time.Second)
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if len(s.Intervals) != 2 || s.Intervals[0].Count() != 2 || s.Intervals[1].Count() != 1 {
		t.Errorf("%d intervals of %s", len(s.Intervals), s.Intervals[0].Length)
	}
	if n := int64(math.MaxInt64 / s.Intervals[0].Length); n >= MaxIntervals {
		t.Errorf("length %s: %d intervals to the end of time", s.Intervals[0].Length, n+1)
	}
}
