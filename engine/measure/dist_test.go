package measure

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// exactRank is ⌈m/10⁸ · n⌉ in exact rational arithmetic, m in micro-percent.
func exactRank(m int64, n int64) int64 {
	r := new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(m), big.NewInt(n)), big.NewInt(100_000_000))
	q, rem := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if rem.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return max(q.Int64(), 1)
}

func TestNearestRank(t *testing.T) {
	for _, c := range []struct {
		p    float64
		n    int64
		want int64
	}{
		{90, 1006, 906},    // 905.4 rounds up, not to 905 (B19: rank rounded, not ceiled)
		{99, 100, 99},      // 0.99·100 is 99.00000000000001 in float64: still rank 99
		{50, 1006, 503},    // exact product
		{95, 1006, 956},    // 955.7
		{99, 1006, 996},    // 995.94
		{99.9, 1006, 1005}, // 1004.994
		{99.9, 10000, 9990},
		{99.99, 10000, 9999},
		{100, 1006, 1006},
		{0, 1006, 1},       // p = 0 is rank 1 by convention
		{1e-9, 1006, 1},    // below one micro-percent: still at least rank 1
		{50, 1, 1},         // one sample is every percentile
		{10, 10, 1},        // exactly on a rank
		{10.000001, 10, 2}, // just above it
		{99.9, math.MaxInt64, 9214148664817921032}, // 128-bit product does not overflow
	} {
		if got := NearestRank(c.p, c.n); got != c.want {
			t.Errorf("NearestRank(%v, %d) = %d, want %d", c.p, c.n, got, c.want)
		}
	}
	// Against exact rational arithmetic for many (p, n).
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		m := rng.Int64N(100_000_000) + 1
		n := rng.Int64N(1_000_000) + 1
		p := float64(m) / 1e6
		if got, want := NearestRank(p, n), exactRank(m, n); got != want {
			t.Fatalf("NearestRank(%v, %d) = %d, want %d", p, n, got, want)
		}
	}
}

func distOf(vs []time.Duration) *Dist {
	d := &Dist{}
	for _, v := range vs {
		d.record(v)
	}
	d.seal()
	return d
}

// samples returns n samples of a named distribution.
func samples(rng *rand.Rand, kind string, n int) []time.Duration {
	vs := make([]time.Duration, n)
	for i := range vs {
		var f float64 // ns
		switch kind {
		case "uniform":
			f = rng.Float64() * 5e9
		case "exponential":
			f = rng.ExpFloat64() * 20e6
		case "lognormal":
			f = math.Exp(rng.NormFloat64()*1.5 + 15)
		case "bimodal":
			f = 2e6 + rng.NormFloat64()*1e5
			if rng.IntN(100) < 3 {
				f = 800e6 + rng.NormFloat64()*50e6
			}
		case "sub-ms":
			f = rng.Float64() * 3e6
		case "ties":
			f = float64(rng.IntN(5)) * 1e6
		case "constant":
			f = 7_654_321
		}
		vs[i] = time.Duration(max(f, 0))
	}
	return vs
}

func TestPercentileMatchesExactNearestRank(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 7))
	fixed := []int64{50_000000, 90_000000, 95_000000, 99_000000, 99_900000, 100_000000}
	for _, kind := range []string{"uniform", "exponential", "lognormal", "bimodal", "sub-ms", "ties", "constant"} {
		for _, n := range []int{1, 2, 3, 7, 100, 1006, 10000, 54321} {
			vs := samples(rng, kind, n)
			d := distOf(vs)
			sorted := slices.Clone(vs)
			slices.Sort(sorted)
			ms := slices.Clone(fixed)
			for range 20 {
				ms = append(ms, rng.Int64N(100_000_000)+1)
			}
			prev := time.Duration(-1)
			slices.Sort(ms)
			for _, m := range ms {
				p := float64(m) / 1e6
				want := sorted[exactRank(m, int64(n))-1]
				got, ok := d.Percentile(p)
				if !ok {
					t.Fatalf("%s n=%d p%v: not ok", kind, n, p)
				}
				// Within the histogram's resolution: the reported value is the
				// bucket's upper bound, at most one bucket width (≤ 1/1024 of
				// the value, at least 1 µs) above the exact sample.
				tol := want/1000 + time.Microsecond
				if got < want || got-want > tol {
					t.Errorf("%s n=%d p%v = %v, exact nearest rank %v (tolerance %v)", kind, n, p, got, want, tol)
				}
				if got < prev {
					t.Errorf("%s n=%d p%v = %v below a lower percentile's %v", kind, n, p, got, prev)
				}
				prev = got
			}
			if p100, _ := d.Percentile(100); p100 != sorted[n-1] {
				t.Errorf("%s n=%d p100 = %v, want the exact max %v", kind, n, p100, sorted[n-1])
			}
			if p0, _ := d.Percentile(0); p0 != sorted[0] {
				t.Errorf("%s n=%d p0 = %v, want the exact min %v", kind, n, p0, sorted[0])
			}
		}
	}
}

// B19, the defect pinned: a percentile interpolated, rounded or bucketed
// so that it reports a latency no request had (locust#331 and kin).
// Percentiles must be nearest rank over exact samples, never above the max.
func TestField_B19_PercentileMaths(t *testing.T) {
	r := NewRecorder(4, Options{})
	for n := 1; n <= 1006; n++ {
		rt := time.Duration(4*n) * time.Millisecond
		r.AddArrivals(1)
		r.Record(n, &Result{Seq: uint64(n), Done: rt, Outcome: okOutcome})
	}
	s := r.Summary(10 * time.Second)
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	d := &s.Response
	ms := time.Millisecond
	minV, _ := d.Min()
	maxV, _ := d.Max()
	got := map[string]time.Duration{"min": minV, "max": maxV}
	for _, p := range []float64{50, 90, 95, 99} {
		got[fmt.Sprint("p", p)], _ = d.Percentile(p)
	}
	for _, c := range []struct {
		name string
		want time.Duration
	}{
		{"min", 4 * ms}, {"p50", 2012 * ms}, {"p90", 3624 * ms}, {"p95", 3824 * ms}, {"p99", 3984 * ms}, {"max", 4024 * ms},
	} {
		if g := got[c.name]; g < c.want || g > c.want+3*ms {
			t.Errorf("%s = %v, want within [%v, %v]", c.name, g, c.want, c.want+3*ms)
		}
	}
	order := []string{"min", "p50", "p90", "p95", "p99", "max"}
	for i := 1; i < len(order); i++ {
		if got[order[i]] < got[order[i-1]] {
			t.Errorf("%s %v < %s %v", order[i], got[order[i]], order[i-1], got[order[i-1]])
		}
	}
	// Why we walk the buckets ourselves: rounding the rank (905.4 → 905)
	// gives 3620 ms, the value a rounded rank gives and B19 forbids.
	h := hdr.New(1, 3_600_000_000, 3)
	for n := 1; n <= 1006; n++ {
		_ = h.RecordValue(int64(4*n) * 1000)
	}
	if v := time.Duration(h.ValueAtQuantile(90)) * time.Microsecond; v >= 3624*ms {
		t.Logf("hdrhistogram-go's ValueAtQuantile(90) = %v: rank rounding fixed upstream?", v)
	}
}

func TestDistClampsAboveOneHour(t *testing.T) {
	d := distOf([]time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour})
	if d.Count() != 4 || d.Clamped() != 2 {
		t.Fatalf("count %d clamped %d, want 4 and 2", d.Count(), d.Clamped())
	}
	if mx, _ := d.Max(); mx != 3*time.Hour {
		t.Errorf("max = %v, want the exact 3h", mx)
	}
	if p, _ := d.Percentile(100); p != 3*time.Hour {
		t.Errorf("p100 = %v, want max", p)
	}
	if p, _ := d.Percentile(75); p < time.Hour || p > 3*time.Hour {
		t.Errorf("p75 = %v, want within [1h, max]", p)
	}
	if m, _ := d.Mean(); m != (30*time.Minute+6*time.Hour)/4 {
		t.Errorf("mean = %v, want exact", m)
	}
}

func TestDistExactStatistics(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	vs := samples(rng, "lognormal", 5000)
	d := distOf(vs)
	var sum, sumSq float64
	for _, v := range vs {
		sum += float64(v)
	}
	mean := sum / float64(len(vs))
	for _, v := range vs {
		sumSq += (float64(v) - mean) * (float64(v) - mean)
	}
	sd := math.Sqrt(sumSq / float64(len(vs)))
	if m, _ := d.Mean(); math.Abs(float64(m)-mean) > 1 {
		t.Errorf("mean %v, want %v", m, time.Duration(mean))
	}
	if s, _ := d.Stddev(); math.Abs(float64(s)-sd) > 1+sd*1e-9 {
		t.Errorf("stddev %v, want %v", s, time.Duration(sd))
	}
	if mn, _ := d.Min(); mn != slices.Min(vs) {
		t.Errorf("min %v, want %v", mn, slices.Min(vs))
	}
	one := distOf([]time.Duration{time.Second})
	if s, ok := one.Stddev(); !ok || s != 0 {
		t.Errorf("stddev of one sample = %v %v, want 0 true", s, ok)
	}
}

func TestDistEmpty(t *testing.T) {
	var d Dist
	if _, ok := d.Percentile(50); ok {
		t.Error("percentile of an empty Dist is ok")
	}
	for name, f := range map[string]func() (time.Duration, bool){"min": d.Min, "max": d.Max, "mean": d.Mean, "stddev": d.Stddev} {
		if _, ok := f(); ok {
			t.Errorf("%s of an empty Dist is ok", name)
		}
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back Dist
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Count() != 0 {
		t.Errorf("count %d after round trip", back.Count())
	}
	var nilDist *Dist
	if _, ok := nilDist.Percentile(50); ok || nilDist.Count() != 0 {
		t.Error("a nil Dist is not empty")
	}
	d2 := distOf([]time.Duration{time.Millisecond})
	for _, p := range []float64{-1, 100.5, math.NaN(), math.Inf(1)} {
		if _, ok := d2.Percentile(p); ok {
			t.Errorf("Percentile(%v) ok", p)
		}
	}
}

func TestDistMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	vs := samples(rng, "bimodal", 20000)
	whole := distOf(vs)
	parts := make([]*Dist, 5)
	for i := range parts {
		parts[i] = &Dist{}
	}
	for _, v := range vs {
		parts[rng.IntN(len(parts))].record(v)
	}
	merged := &Dist{}
	for _, p := range parts {
		merged.Merge(p)
	}
	assertSameDist(t, "merged", merged, whole)
	// Merging into itself doubles every count.
	twice := whole.Clone()
	twice.Merge(twice)
	if twice.Count() != 2*whole.Count() {
		t.Errorf("self-merge count %d", twice.Count())
	}
	if p, _ := twice.Percentile(50); p != must(whole.Percentile(50)) {
		t.Errorf("self-merge changed p50")
	}
	// A nil or empty Dist merges as a no-op.
	merged.Merge(nil)
	merged.Merge(&Dist{})
	assertSameDist(t, "after no-op merges", merged, whole)
}

func must(v time.Duration, _ bool) time.Duration { return v }

func assertSameDist(t *testing.T, name string, got, want *Dist) {
	t.Helper()
	if got.Count() != want.Count() || got.Clamped() != want.Clamped() || got.sum != want.sum || got.sumSq != want.sumSq {
		t.Errorf("%s: count/sums differ", name)
	}
	for _, f := range []func(*Dist) (time.Duration, bool){(*Dist).Min, (*Dist).Max, (*Dist).Mean, (*Dist).Stddev} {
		g, gok := f(got)
		w, wok := f(want)
		if g != w || gok != wok {
			t.Errorf("%s: statistic %v/%v, want %v/%v", name, g, gok, w, wok)
		}
	}
	for p := 0.0; p <= 100; p += 0.5 {
		g, _ := got.Percentile(p)
		w, _ := want.Percentile(p)
		if g != w {
			t.Errorf("%s: p%v = %v, want %v", name, p, g, w)
		}
	}
	if (got.h == nil) != (want.h == nil) || (got.h != nil && !got.h.Equals(want.h)) {
		t.Errorf("%s: histograms differ", name)
	}
}

func TestDistJSONRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	d := distOf(append(samples(rng, "exponential", 3000), 2*time.Hour))
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back Dist
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	assertSameDist(t, "decoded", &back, d)
	b2, _ := json.Marshal(&back)
	if string(b) != string(b2) {
		t.Error("re-encoding differs")
	}
	// The histogram is readable by standard HDR tools.
	var j distJSON
	_ = json.Unmarshal(b, &j)
	if h, err := hdr.Decode([]byte(j.Hist)); err != nil || h.TotalCount() != d.Count() {
		t.Errorf("hdr_us does not decode with hdrhistogram-go: %v", err)
	}
}

func TestDistJSONRejects(t *testing.T) {
	good, _ := json.Marshal(distOf([]time.Duration{time.Millisecond, time.Second}))
	other := hdr.New(1, 1000, 2)
	_ = other.RecordValue(5)
	enc, _ := other.Encode(hdr.V2CompressedEncodingCookieBase)
	for name, c := range map[string]struct{ in, want string }{
		"count mismatch":   {strings.Replace(string(good), `"count":2`, `"count":3`, 1), "histogram holds 2 samples"},
		"min above max":    {strings.Replace(string(good), `"min_ns":1000000`, `"min_ns":9000000000`, 1), "above max"},
		"negative sum":     {strings.Replace(string(good), `"sum_ns":1001000000`, `"sum_ns":-1`, 1), "sum_ns"},
		"garbage hdr":      {`{"count":0,"hdr_us":"bm90IGEgaGlzdG9ncmFt"}`, "decode histogram"},
		"foreign geometry": {`{"count":1,"min_ns":5000,"max_ns":5000,"sum_ns":5000,"sum_sq_ns2":25000000,"hdr_us":"` + string(enc) + `"}`, "geometry"},
		"not an object":    {`[1]`, "cannot unmarshal"},
	} {
		var d Dist
		err := json.Unmarshal([]byte(c.in), &d)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", name, err, c.want)
		}
	}
}

func TestDistCorrectedMatchesHdr(t *testing.T) {
	interval := 10 * time.Millisecond
	vals := []time.Duration{3 * time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, 1234567 * time.Microsecond}
	d := &Dist{}
	h := hdr.New(1, 3_600_000_000, 3)
	for _, v := range vals {
		d.recordCorrected(v, interval)
		_ = h.RecordCorrectedValue(int64(v/time.Microsecond), int64(interval/time.Microsecond))
	}
	if !d.h.Equals(h) {
		t.Errorf("corrected histogram differs from RecordCorrectedValue's (%d vs %d samples)", d.Count(), h.TotalCount())
	}
	if d.Count() != h.TotalCount() {
		t.Errorf("exact count %d, hdr %d", d.Count(), h.TotalCount())
	}
}

// The sum of squares passes 2^53 quickly; it is written as a string so
// that float64 JSON readers keep it exact, and read back either way.
func TestDistSumSqIsAJSONString(t *testing.T) {
	var d Dist
	for i := 0; i < 100; i++ {
		d.record(3 * time.Second)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"sum_sq_ns2":"900000000000000000000"`) {
		t.Fatalf("sum_sq_ns2 not an exact string: %s", b)
	}
	var back Dist
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if s, _ := back.Stddev(); s != 0 {
		t.Fatalf("stddev %s after round trip, want 0", s)
	}
	num := strings.Replace(string(b), `"sum_sq_ns2":"900000000000000000000"`, `"sum_sq_ns2":900000000000000000000`, 1)
	if err := json.Unmarshal([]byte(num), &back); err != nil {
		t.Fatalf("a bare number no longer decodes: %v", err)
	}
}
