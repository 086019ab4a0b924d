package rules

import (
	"strings"
	"testing"
	"time"
)

// TestAnyPercentile: p75, p80, p99.99, p(99.9) and their group, view and
// baseline forms read the nearest-rank percentile of the phase's samples,
// with the sample guard n ≥ 10 / (1 − q/100).
func TestAnyPercentile(t *testing.T) {
	// 100000 samples at 1 µs … 100 ms: percentile q is about q ms.
	env := NewEnv(uniformSummary(100000, 100*time.Millisecond, 10*time.Second), Extras{})
	base := NewEnv(uniformSummary(100000, 200*time.Millisecond, 10*time.Second), Extras{})
	env = env.WithBaseline(&base)
	for _, c := range []struct {
		src      string
		want     Status
		observed string
	}{
		{"p75 < 75100us and p75 > 74900us", Pass, "p75=75.008ms"},
		{"p80 > 79ms", Pass, "p80=80.064ms"},
		{"p99.99 > 99ms", Pass, "p99.99=100ms"},
		{"p(99.99) == p99.99", Pass, "p99.99=100ms"},
		{"p(99.9) == p999 and p99.9 == p999", Pass, "p999=99.904ms"},
		{"p(75) == p75 and p( 75 ) == p75", Pass, "p75=75.008ms"},
		{"p12.5 < p75", Pass, "p12.5=12.504ms p75=75.008ms"},
		{"service.p75 > 0s", Pass, "service.p75="},
		{"median(p99.99) > 99ms and worst(p75) < 1s", Pass, "median(p99.99)=100ms worst(p75)=75.008ms"},
		{"baseline.p75 > p75", Pass, "baseline.p75=150.016ms p75=75.008ms"},
		{"p75 < 1ms", Fail, "p75=75.008ms"},
		// The guard scales: p99.999 needs 1000000 samples.
		{"p99.999 < 1s", Inconclusive, "p99.999=100ms (100000 samples, needs ≥ 1000000)"},
		{"failed.p75 < 1s", Inconclusive, "failed.p75=n/a (0 samples)"},
		{"corrected.p99.99 < 1s", Inconclusive, "corrected.p99.99=n/a (0 samples)"},
	} {
		r, err := Compile(c.src)
		if err != nil {
			t.Errorf("Compile(%q): %v", c.src, err)
			continue
		}
		v := Judge(r, []Env{env}).Repeats[0]
		if v.Status != c.want || !strings.Contains(v.Observed, c.observed) {
			t.Errorf("%s: %v observed %q (%s), want %v observed %q", c.src, v.Status, v.Observed, v.Reason, c.want, c.observed)
		}
	}
}

func TestPercentileSpellingErrors(t *testing.T) {
	for _, c := range []struct {
		src  string
		col  int
		want string
	}{
		{"p(100) < 1s", 1, "p(100) is the maximum: write max"},
		{"p100 < 1s", 1, `unknown metric "p100": p100 is the maximum: write max`},
		{"p(0) < 1s", 1, "p(0) would be the minimum: write min"},
		{"p0 < 1s", 1, "p0 would be the minimum: write min"},
		{"p(0.0) < 1s", 1, "would be the minimum"},
		{"p(150) < 1s", 1, "p(150): a percentile is between 0 and 100"},
		{"errors == 0 and p100.5 < 1s", 17, "p100.5: a percentile is between 0 and 100"},
		{"p(99.1234567) < 1s", 1, "at most 6 decimal places"},
		{"p99_99 < 1s", 1, "write p99_99 as p99.99"},
		{"service.p9999 < 1s", 9, "write p99.99"},
		{"p(p99) < 1s", 1, "unknown function p"},
		{"p(99.9 9) < 1s", 1, "is not a percentile"},
	} {
		wantCompileError(t, c.src, c.col, c.want)
	}
}

func TestMinSamplesAnyPercentile(t *testing.T) {
	for q, want := range map[float64]int64{
		75: 40, 80: 50, 99.99: 100000, 99.999: 1000000, 12.5: 12, // 10/0.875 = 11.43 → 12
		33.333333: 15, 99.999999: 1000000000, 1: 11, // 10/0.99 = 10.1 → 11
	} {
		if got := minSamples(q); got != want {
			t.Errorf("minSamples(%v) = %d, want %d", q, got, want)
		}
	}
	// Exact at the threshold: p75 needs 40 samples.
	r, _ := Compile("p75 < 1h")
	for n, want := range map[int]Status{39: Inconclusive, 40: Pass} {
		if v := r.Eval(NewEnv(uniformSummary(n, time.Second, time.Second), Extras{})); v.Status != want {
			t.Errorf("p75 of %d samples: %v, want %v", n, v.Status, want)
		}
	}
}

func TestPercentiles(t *testing.T) {
	var rs []*Rule
	for _, src := range []string{"p75 < 1s and p99 < 1s", "median(service.p99.99) < 1s", "baseline.p(80) > 0s or p75 > 0s", "errors == 0"} {
		r, err := Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	got := ExtraPercentiles(rs)
	if want := []float64{75, 80, 99.99}; len(got) != len(want) || got[0] != 75 || got[1] != 80 || got[2] != 99.99 {
		t.Errorf("ExtraPercentiles = %v, want %v", got, want)
	}
	for q, want := range map[float64]string{75: "p75", 99.9: "p99.9", 99.99: "p99.99", 50: "p50", 12.5: "p12.5"} {
		if got := PercentileName(q); got != want {
			t.Errorf("PercentileName(%v) = %q, want %q", q, got, want)
		}
	}
}
