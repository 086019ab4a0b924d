package measure

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzDistUnmarshal feeds arbitrary JSON to Dist's decoder: results files
// are inputs of `runner merge` and must never crash it. A Dist that
// decodes keeps min ≤ p50 ≤ p99 ≤ max and merges without loss.
func FuzzDistUnmarshal(f *testing.F) {
	for _, vs := range [][]time.Duration{nil, {time.Millisecond}, {0, 5 * time.Second, 2 * time.Hour}} {
		b, _ := json.Marshal(distOf(vs))
		f.Add(b)
	}
	f.Add([]byte(`{"count":1,"min_ns":1,"max_ns":1,"sum_ns":1,"sum_sq_ns2":1,"hdr_us":"HISTFAAAABx42pNpmSzMwMDAxAABzFCaEUoz2X+AsQA/awPK"}`))
	f.Add([]byte(`{"count":-1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Dist
		if json.Unmarshal(b, &d) != nil {
			return
		}
		if d.Count() == 0 {
			return
		}
		lo, _ := d.Min()
		hi, _ := d.Max()
		prev := lo
		for _, p := range []float64{0, 50, 90, 99, 99.9, 100} {
			v, ok := d.Percentile(p)
			if !ok || v < prev || v > hi {
				t.Fatalf("p%v = %v (ok %v) outside [%v, %v] or below %v", p, v, ok, lo, hi, prev)
			}
			prev = v
		}
		_, _ = d.Mean()
		_, _ = d.Stddev()
		m := &Dist{}
		m.Merge(&d)
		if m.Count() != d.Count() {
			t.Fatalf("merge count %d, want %d", m.Count(), d.Count())
		}
		if _, err := json.Marshal(m); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzIntervalUnmarshal feeds arbitrary JSON to Interval's decoder (an
// input of `runner merge` and `runner report`): an Interval that decodes
// has a positive length and an aligned start, its distribution decodes
// with the count it claims, and it merges with itself into twice that.
func FuzzIntervalUnmarshal(f *testing.F) {
	r := NewRecorder(1, Options{})
	for i := range 5 {
		r.Record(0, &Result{Done: time.Duration(i) * 700 * time.Millisecond, Outcome: okOutcome})
	}
	for _, iv := range r.Summary(4 * time.Second).Intervals {
		b, _ := json.Marshal(iv)
		f.Add(b)
	}
	f.Add([]byte(`{"start_ns":0,"length_ns":1000000000,"response":{"count":0}}`))
	f.Add([]byte(`{"start_ns":5,"length_ns":-1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var iv Interval
		if json.Unmarshal(b, &iv) != nil {
			return
		}
		if iv.Length <= 0 || iv.Start < 0 || iv.Start%iv.Length != 0 {
			t.Fatalf("accepted [%v +%v)", iv.Start, iv.Length)
		}
		d, err := iv.Response()
		if err != nil || d.Count() != iv.Count() {
			t.Fatalf("response %v, count %d, want %d", err, d.Count(), iv.Count())
		}
		m, err := mergeIntervals([]Interval{iv}, []Interval{iv})
		if err != nil || len(m) != 1 || m[0].Count() != 2*iv.Count() {
			t.Fatalf("self-merge: %v", err)
		}
	})
}
