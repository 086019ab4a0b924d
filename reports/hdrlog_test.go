package reports

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/schema"
)

// The interval log reads back with HdrHistogram's own reader: one
// interval per (repeat, phase, distribution), each with the phase's exact
// count, min and max, so any percentile can be derived again.
func TestHDRLogRoundTrip(t *testing.T) {
	r := fixture(t)
	var b bytes.Buffer
	if err := HDRLog(&b, r); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if !strings.HasPrefix(text, "#[Histogram log format version 1.3]") || !strings.Contains(text, "values in microseconds (HistogramLogProcessor -outputValueUnitRatio 1000 for milliseconds)") {
		t.Fatalf("header:\n%s", text[:min(len(text), 400)])
	}
	rd := hdr.NewHistogramLogReader(strings.NewReader(text))
	var got []*hdr.Histogram
	for _, h := range readHDRLog(t, rd) {
		if !strings.HasSuffix(h.Tag(), "/interval") { // TestHDRLogIntervals reads those
			got = append(got, h)
		}
	}
	var want int
	for _, pr := range r.Result.Phases {
		for _, d := range []struct {
			kind string
			n    int64
			tag  string
		}{{"response", pr.Summary.Response.Count(), ""}, {"service", pr.Summary.Service.Count(), ""}} {
			if d.n == 0 {
				continue
			}
			if want >= len(got) {
				t.Fatalf("%d intervals read, more expected", len(got))
			}
			h := got[want]
			want++
			if h.TotalCount() != d.n || !strings.HasSuffix(h.Tag(), "/"+d.kind) || !strings.HasPrefix(h.Tag(), "r") {
				t.Errorf("interval %d: tag %q count %d, want %s with %d samples", want, h.Tag(), h.TotalCount(), d.kind, d.n)
			}
			dist := &pr.Summary.Response
			if d.kind == "service" {
				dist = &pr.Summary.Service
			}
			// The histogram's max is its top bucket's upper edge: within
			// 0.1 % (3 significant digits) of the exact max.
			if mx, _ := dist.Max(); float64(h.Max()) < float64(mx.Microseconds())*0.999 || float64(h.Max()) > float64(mx.Microseconds())*1.001+1 {
				t.Errorf("%s: max %d µs in the log, %s measured", h.Tag(), h.Max(), mx)
			}
		}
	}
	if want == 0 {
		t.Fatal("the fixture has no samples: nothing was tested")
	}
	if want != len(got) {
		t.Errorf("%d intervals in the log, %d phases' distributions", len(got), want)
	}
}

// readHDRLog reads every histogram of an interval log.
func readHDRLog(t *testing.T, rd *hdr.HistogramLogReader) []*hdr.Histogram {
	t.Helper()
	var out []*hdr.Histogram
	for {
		h, err := rd.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			return out
		}
		out = append(out, h)
	}
}

// The per-interval lines read back with HdrHistogram's own reader: for
// each (repeat, phase), one line per second in which responses completed,
// a second apart from the phase's start, whose histograms add up to the
// phase's response histogram, bucket by bucket.
func TestHDRLogIntervals(t *testing.T) {
	r := fixture(t)
	var b bytes.Buffer
	if err := HDRLog(&b, r); err != nil {
		t.Fatal(err)
	}
	byTag := map[string][]*hdr.Histogram{}
	for _, h := range readHDRLog(t, hdr.NewHistogramLogReader(&b)) {
		byTag[h.Tag()] = append(byTag[h.Tag()], h)
	}
	phases := 0
	for _, pr := range r.Result.Phases {
		tag := fmt.Sprintf("r%d/%s/response/interval", pr.Repeat, pr.Phase.Name)
		ivs := byTag[tag]
		// The fixture's completions: warm-up within its first second,
		// steady over 10 s (its last ok response at 9.99 s).
		want := 10
		if pr.Phase.Warmup {
			want = 1
		}
		if len(ivs) != want {
			t.Errorf("%s: %d intervals, want %d", tag, len(ivs), want)
			continue
		}
		sum := hdr.New(1, int64(time.Hour/time.Microsecond), 3)
		for i, h := range ivs {
			sum.Merge(h)
			start := pr.Start.Add(time.Duration(i) * time.Second).UnixMilli()
			if h.StartTimeMs() != start || h.EndTimeMs() != start+1000 {
				t.Errorf("%s interval %d: %d..%d ms, want %d..%d", tag, i, h.StartTimeMs(), h.EndTimeMs(), start, start+1000)
			}
		}
		whole := pr.Summary.Response.Histogram()
		if sum.TotalCount() != pr.Summary.OK || !sum.Equals(whole) {
			t.Errorf("%s: the intervals hold %d samples (equal histograms: %v), the phase %d", tag, sum.TotalCount(), sum.Equals(whole), pr.Summary.OK)
		}
		phases++
	}
	if phases != 4 {
		t.Errorf("%d phases checked, the fixture has 2 repeats of 2", phases)
	}
}

// A count-bounded phase that lasted 13 ms wrote its one interval as a
// 1 s line (`Tag=r1/fixed/response/interval,4.140000,1.000000`),
// overlapping the next phase, so that count ÷ length read 40/s where the
// phase completed 40 responses in 13 ms. The line now ends with the
// phase's completions.
func TestHDRLogIntervalOfAShortPhaseEndsWithIt(t *testing.T) {
	rec := measure.NewRecorder(1, measure.Options{})
	for k := range 40 {
		// Due every 300 µs, answered 1 ms later: the last at 12.7 ms.
		at := time.Duration(k) * 300 * time.Microsecond
		rec.AddArrivals(1)
		rec.Record(0, &measure.Result{Seq: uint64(k + 1), Intended: at, Sent: at, Done: at + time.Millisecond,
			Outcome: drivers.Outcome{Class: drivers.OK, Responded: true}})
	}
	start := time.Date(2026, 12, 3, 9, 0, 4, 140e6, time.UTC)
	r := &Run{RunID: "short", Scenario: &schema.Scenario{Name: "s"}, Started: start.Add(-4140 * time.Millisecond),
		Result: &engine.Result{Phases: []*engine.PhaseResult{{Repeat: 1, Phase: &engine.PhasePlan{Name: "fixed"}, Start: start,
			Summary: rec.Summary(13 * time.Millisecond), Wall: 13 * time.Millisecond}}}}
	var b bytes.Buffer
	if err := HDRLog(&b, r); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	var ivs []*hdr.Histogram
	for _, h := range readHDRLog(t, hdr.NewHistogramLogReader(&b)) {
		if h.Tag() == "r1/fixed/response/interval" {
			ivs = append(ivs, h)
		}
	}
	if len(ivs) != 1 {
		t.Fatalf("%d interval lines, want 1", len(ivs))
	}
	h := ivs[0]
	if got, want := h.EndTimeMs()-h.StartTimeMs(), int64(13); h.StartTimeMs() != start.UnixMilli() || got != want || h.TotalCount() != 40 {
		t.Errorf("interval from %d, %d ms long, %d samples; want from %d, 13 ms, 40 samples (40 in 13 ms, not in 1 s)",
			h.StartTimeMs(), got, h.TotalCount(), start.UnixMilli())
	}
	if !strings.Contains(text, "Tag=r1/fixed/response/interval,4.140000,0.013000,") {
		t.Errorf("the line does not read start 4.140 s, length 0.013 s:\n%s", text)
	}
}
