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
