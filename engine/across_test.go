package engine

import (
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine/measure"
)

// summaryOf records 1000 ok samples: 990 at base and 10 at tail, so the
// nearest-rank p99 (rank 990) is base and p99.9 (rank 999) is tail.
func summaryOf(base, tail time.Duration) *measure.Summary {
	rec := measure.NewRecorder(1, measure.Options{})
	for k := 0; k < 1000; k++ {
		v := base
		if k >= 990 {
			v = tail
		}
		rec.AddArrivals(1)
		rec.Record(0, &measure.Result{Intended: 0, Sent: 0, Done: v, Outcome: drivers.Outcome{Class: drivers.OK, Responded: true}})
	}
	return rec.Summary(10 * time.Second)
}

// Three repeats with known histograms: the summary is median, min and max
// of the per-repeat values, never their average. The p99.9s are 100, 200
// and 900 ms: the median is 200 ms, where an average would say 400 ms.
func TestAcrossRepeatsMedianNotMean(t *testing.T) {
	p := &PhasePlan{Name: "steady", Model: Closed}
	res := &Result{}
	for i, tail := range []time.Duration{900 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond} {
		res.Phases = append(res.Phases, &PhaseResult{Repeat: i + 1, Phase: p, Summary: summaryOf(10*time.Millisecond, tail)})
	}
	// An interrupted repeat is never part of the summary.
	res.Phases = append(res.Phases, &PhaseResult{Repeat: 4, Phase: p, Interrupted: true, Summary: summaryOf(time.Second, time.Hour)})
	got := Across(res)
	if len(got) != 1 || len(got[0].Repeats) != 3 {
		t.Fatalf("across %+v", got)
	}
	within := func(name string, v, want float64) {
		t.Helper()
		// Reported values are bucket tops: within 0.1 % above the sample.
		if v < want || v > want*1.001 {
			t.Errorf("%s = %.3f, want %.3f", name, v, want)
		}
	}
	s := got[0].Metrics["p999_ms"]
	within("median p99.9", s.Median, 200)
	within("min p99.9", s.Min, 100)
	within("max p99.9", s.Max, 900)
	if s.N != 3 {
		t.Errorf("n %d", s.N)
	}
	within("median p99", got[0].Metrics["p99_ms"].Median, 10)

	// With an even count the median is the worse middle value: the higher
	// latency, the lower throughput.
	res.Phases = res.Phases[:2] // p99.9s 900 and 100 ms
	got = Across(res)
	within("even median p99.9", got[0].Metrics["p999_ms"].Median, 900)
	if m := got[0].Metrics["throughput"]; m.Median != m.Min {
		t.Errorf("even median throughput %v is not the lower middle", m)
	}
}

// TestAcross_PhasesReadBackFromJSON: a result read back from JSON holds
// one PhasePlan value per phase result; its repeats of one phase are
// still one phase across repeats (by index and name), and two phases of
// one name at different indexes stay two.
func TestAcross_PhasesReadBackFromJSON(t *testing.T) {
	res := &Result{}
	for rep := 1; rep <= 3; rep++ {
		for i, name := range []string{"steady", "steady"} {
			res.Phases = append(res.Phases, &PhaseResult{Repeat: rep, Phase: &PhasePlan{Index: i, Name: name, Model: Closed}, Summary: summaryOf(10*time.Millisecond, time.Duration(rep)*time.Second)})
		}
	}
	got := Across(res)
	if len(got) != 2 || len(got[0].Repeats) != 3 || len(got[1].Repeats) != 3 {
		t.Fatalf("across %+v, want 2 phases of 3 repeats each", got)
	}
	if s := got[0].Metrics["p999_ms"]; s.Median != 2000 || s.Min != 1000 || s.Max != 3000 {
		t.Errorf("p99.9 across %+v, want 2000 [1000 – 3000] ms", s)
	}
}
