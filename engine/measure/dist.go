package measure

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"sort"
	"strings"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram geometry shared by every Dist: values in microseconds from
// 1 µs to 1 hour with 3 significant digits (docs/design.md, "Execution
// semantics").
const (
	histLowest  = 1                                   // µs
	histHighest = int64(time.Hour / time.Microsecond) // µs
	histDigits  = 3
)

// MaxValue is the largest value a Dist's histogram holds. Larger values are
// recorded as MaxValue in the histogram and counted by Clamped; the exact
// count, min, max, mean and stddev still see the real value.
const MaxValue = time.Hour

// Dist is one latency distribution: an HdrHistogram of the samples in
// microseconds (3 significant digits, 1 µs .. 1 h) plus the exact count,
// min, max, Σx and Σx² in nanoseconds, which HdrHistogram only knows
// rounded to its buckets.
//
// The zero value is an empty Dist. A Dist is not safe for concurrent
// mutation; its read methods are safe for concurrent use once it is no
// longer merged into. Do not copy a non-empty Dist by value and then merge
// into either copy: they share the histogram. Use Clone.
type Dist struct {
	n        int64
	min, max time.Duration
	sum      sum128 // Σx, ns
	sumSq    sum128 // Σx², ns²
	clamped  int64
	h        *hdr.Histogram // µs
	// idx is the cumulative bucket index Percentile searches: one entry
	// per non-empty bucket in ascending order. nil means not built yet;
	// Percentile then builds a temporary one, so reads never mutate.
	idx []bucket
}

// bucket is one non-empty histogram bucket: its highest equivalent value
// in µs and the number of samples at or below it.
type bucket struct {
	highest int64
	cum     int64
}

func newHist() *hdr.Histogram { return hdr.New(histLowest, histHighest, histDigits) }

// record adds one sample. Negative values read as 0. It leaves the
// percentile index stale; callers that expose the Dist seal it.
func (d *Dist) record(v time.Duration) {
	if v < 0 {
		v = 0
	}
	if d.n == 0 || v < d.min {
		d.min = v
	}
	if v > d.max {
		d.max = v
	}
	d.n++
	d.sum.add(uint64(v))
	d.sumSq.addSquare(uint64(v))
	us := int64(v / time.Microsecond)
	if us > histHighest {
		us = histHighest
		d.clamped++
	}
	if d.h == nil {
		d.h = newHist()
	}
	// Cannot fail: 0 ≤ us ≤ histHighest, the count cannot reach MaxInt64.
	_ = d.h.RecordValue(us)
	d.idx = nil
}

// recordN adds n samples of value v at once (n ≥ 1; see record).
func (d *Dist) recordN(v time.Duration, n int64) {
	if n <= 0 {
		return
	}
	if v < 0 {
		v = 0
	}
	if d.n == 0 || v < d.min {
		d.min = v
	}
	d.max = max(d.max, v)
	d.n += n
	d.sum.addProduct(sum128{lo: uint64(v)}, uint64(n))
	hi, lo := bits.Mul64(uint64(v), uint64(v))
	d.sumSq.addProduct(sum128{hi: hi, lo: lo}, uint64(n))
	us := int64(v / time.Microsecond)
	if us > histHighest {
		us = histHighest
		d.clamped += n
	}
	if d.h == nil {
		d.h = newHist()
	}
	_ = d.h.RecordValues(us, n)
	d.idx = nil
}

// recordCorrected adds v and, as HdrHistogram's RecordCorrectedValue does,
// the samples a stalled closed-model client failed to send: v − k·interval
// for k = 1, 2, … while the value is ≥ interval (Gil Tene's coordinated
// omission correction). interval is used at microsecond resolution, so the
// synthetic samples land in the same buckets RecordCorrectedValue would
// fill, and the exact statistics include them too.
func (d *Dist) recordCorrected(v, interval time.Duration) {
	d.record(v)
	interval = interval.Truncate(time.Microsecond)
	if interval <= 0 {
		return
	}
	for missing := v - interval; missing >= interval; missing -= interval {
		d.record(missing)
	}
}

// add merges o into d without rebuilding the percentile index. It
// returns how many of o's histogram samples d's histogram could not hold
// (none when both have one geometry, which decoding enforces).
func (d *Dist) add(o *Dist) int64 {
	if o == nil || o.n == 0 {
		return 0
	}
	if o == d {
		o = o.Clone()
	}
	if d.n == 0 || o.min < d.min {
		d.min = o.min
	}
	if d.n == 0 || o.max > d.max {
		d.max = o.max
	}
	d.n += o.n
	d.sum.addSum(o.sum)
	d.sumSq.addSum(o.sumSq)
	d.clamped += o.clamped
	if d.h == nil {
		d.h = newHist()
	}
	d.idx = nil
	if o.h != nil {
		return d.h.Merge(o.h)
	}
	return 0
}

// Merge adds every sample of o to d, losslessly: the histograms merge
// bucket by bucket and the exact statistics combine. o is not changed;
// a nil o is a no-op. It returns how many histogram samples of o could
// not be held (0 unless the histograms' ranges differ, which decoding
// refuses): the exact count then still has them, the percentiles not.
func (d *Dist) Merge(o *Dist) int64 {
	dropped := d.add(o)
	d.seal()
	return dropped
}

// Clone returns an independent deep copy of d.
func (d *Dist) Clone() *Dist {
	if d == nil {
		return &Dist{}
	}
	c := *d
	if d.h != nil {
		c.h = d.h.Clone()
	}
	c.idx = append([]bucket(nil), d.idx...)
	return &c
}

// Histogram returns a copy of the distribution's HdrHistogram, values in
// microseconds (3 significant digits, 1 µs to 1 h), for HdrHistogram's own
// formats and tools (interval logs); nil when it has no samples. Its
// ValueAtQuantile rounds the rank: report percentiles with Percentile.
func (d *Dist) Histogram() *hdr.Histogram {
	if d == nil || d.h == nil || d.n == 0 {
		return nil
	}
	return d.h.Clone()
}

// seal builds the percentile index.
func (d *Dist) seal() { d.idx = d.buildIndex() }

func (d *Dist) buildIndex() []bucket {
	if d.h == nil || d.n == 0 {
		return nil
	}
	var idx []bucket
	var cum int64
	for _, b := range d.h.Distribution() {
		if b.Count == 0 {
			continue
		}
		cum += b.Count
		idx = append(idx, bucket{highest: b.To, cum: cum})
	}
	return idx
}

// Count is the number of samples. The read methods of Dist accept a nil
// receiver as an empty Dist.
func (d *Dist) Count() int64 {
	if d == nil {
		return 0
	}
	return d.n
}

// Clamped is the number of samples above MaxValue, held in the histogram
// as MaxValue.
func (d *Dist) Clamped() int64 {
	if d == nil {
		return 0
	}
	return d.clamped
}

// Min is the exact smallest sample; ok is false when there are none.
func (d *Dist) Min() (v time.Duration, ok bool) {
	if d == nil || d.n == 0 {
		return 0, false
	}
	return d.min, true
}

// Max is the exact largest sample; ok is false when there are none.
func (d *Dist) Max() (v time.Duration, ok bool) {
	if d == nil || d.n == 0 {
		return 0, false
	}
	return d.max, true
}

// Sum is the exact sum of the samples, saturated at the largest Duration
// (292 years).
func (d *Dist) Sum() time.Duration {
	if d == nil {
		return 0
	}
	if d.sum.hi != 0 || d.sum.lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(d.sum.lo)
}

// Mean is the exact arithmetic mean Σx/n, rounded to the nanosecond; ok
// is false when there are no samples.
func (d *Dist) Mean() (v time.Duration, ok bool) {
	if d == nil || d.n == 0 {
		return 0, false
	}
	if d.sum.hi < uint64(d.n) { // the quotient fits 64 bits
		q, r := bits.Div64(d.sum.hi, d.sum.lo, uint64(d.n))
		if 2*r >= uint64(d.n) {
			q++
		}
		return time.Duration(min(q, math.MaxInt64)), true
	}
	return math.MaxInt64, true
}

// Stddev is the exact population standard deviation
//
//	σ = √(n·Σx² − (Σx)²) / n,
//
// with the numerator computed in exact integer arithmetic (no cancellation);
// ok is false when there are no samples. One sample gives 0.
func (d *Dist) Stddev() (v time.Duration, ok bool) {
	if d == nil || d.n == 0 {
		return 0, false
	}
	n := big.NewInt(d.n)
	num := new(big.Int).Mul(n, d.sumSq.big())
	s := d.sum.big()
	num.Sub(num, s.Mul(s, s))
	if num.Sign() <= 0 {
		return 0, true
	}
	f, _ := new(big.Float).SetInt(num).Float64()
	sd := math.Sqrt(f) / float64(d.n)
	if sd >= math.MaxInt64 {
		return math.MaxInt64, true
	}
	return time.Duration(math.Round(sd)), true
}

// Percentile returns the nearest-rank p-th percentile (docs/design.md,
// "Percentiles"):
//
//	rank = ⌈p/100 · n⌉ (at least 1), value = the rank-th smallest sample.
//
// p is in [0, 100]; p = 0 is read as rank 1 (the min). p is taken to six
// decimal places and the rank is computed in integer arithmetic, so
// 90 of 1006 is rank 906 (905.4 rounded up) and 99 of 100 is rank 99.
//
// The value is read off the histogram's buckets: the highest value
// equivalent to the rank-th sample's bucket (an upper bound, above the true
// sample by less than one bucket width, 1/1024 of the value), clamped into
// [Min, Max]. Rank 1 is the exact Min and rank n the exact Max. So
// Min ≤ p50 ≤ p90 ≤ … ≤ p100 = Max always holds. ok is false when there are
// no samples or p is outside [0, 100] or NaN.
func (d *Dist) Percentile(p float64) (v time.Duration, ok bool) {
	if d == nil || d.n == 0 || math.IsNaN(p) || p < 0 || p > 100 {
		return 0, false
	}
	rank := NearestRank(p, d.n)
	switch {
	case rank <= 1:
		return d.min, true
	case rank >= d.n:
		return d.max, true
	}
	idx := d.idx
	if idx == nil {
		idx = d.buildIndex()
	}
	i := sort.Search(len(idx), func(i int) bool { return idx[i].cum >= rank })
	if i == len(idx) { // histogram and count disagree: cannot happen for a valid Dist
		return d.max, true
	}
	// The bucket covers [lo, highest] µs; samples were truncated to µs, so
	// the largest nanosecond value it can hold is highest µs + 999 ns.
	v = time.Duration(idx[i].highest)*time.Microsecond + time.Microsecond - 1
	return min(max(v, d.min), d.max), true
}

// NearestRank returns ⌈p/100 · n⌉ clamped into [1, n], for n ≥ 1 and p in
// [0, 100]. p is read to six decimal places (an integer number of
// micro-percent m) and the rank is ⌈m·n / 10⁸⌉ in 128-bit integer
// arithmetic, so no floating-point product can push 905.4 to 905 or 99.0
// to 100.
func NearestRank(p float64, n int64) int64 {
	if n <= 0 {
		return 0
	}
	if !(p > 0) { // also NaN
		return 1
	}
	if p >= 100 {
		return n
	}
	const scale = 100 * 1_000_000 // 100 % in micro-percent
	m := uint64(math.Round(p * 1_000_000))
	hi, lo := bits.Mul64(m, uint64(n))
	var c uint64
	lo, c = bits.Add64(lo, scale-1, 0)
	hi += c
	q, _ := bits.Div64(hi, lo, scale) // hi < scale since m ≤ scale and n < 2^63
	rank := int64(q)
	return min(max(rank, 1), n)
}

// bigString is a big integer written in JSON as a decimal string, so that
// readers that decode numbers as float64 (JavaScript, jq) keep it exact:
// a sum of squared nanoseconds passes 2^53 after a few seconds' worth.
// It reads either a string or a bare number.
type bigString struct{ *big.Int }

// MarshalJSON writes the decimal string.
func (b bigString) MarshalJSON() ([]byte, error) {
	if b.Int == nil {
		return []byte(`"0"`), nil
	}
	return json.Marshal(b.Int.String())
}

// UnmarshalJSON reads a decimal string or a number.
func (b *bigString) UnmarshalJSON(data []byte) error {
	s := strings.Trim(string(data), `"`)
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return fmt.Errorf("not an integer: %s", data)
	}
	b.Int = v
	return nil
}

// distJSON is a Dist's JSON form: exact statistics in nanoseconds and the
// histogram in HdrHistogram's V2 compressed encoding (base64), values in µs.
type distJSON struct {
	Count   int64     `json:"count"`
	Min     int64     `json:"min_ns"`
	Max     int64     `json:"max_ns"`
	Sum     *big.Int  `json:"sum_ns"`
	SumSq   bigString `json:"sum_sq_ns2"`
	Clamped int64     `json:"clamped"`
	Hist    string    `json:"hdr_us"`
}

// MarshalJSON encodes d as an object with count, min_ns, max_ns, sum_ns,
// sum_sq_ns2 (exact), clamped, and hdr_us: the histogram (µs) in
// HdrHistogram's V2 compressed base64 encoding, readable by standard HDR
// tools.
func (d Dist) MarshalJSON() ([]byte, error) {
	if d.h == nil {
		enc, err := emptyEncoding()
		if err != nil {
			return nil, err
		}
		return json.Marshal(d.toJSON(enc))
	}
	enc, err := d.h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("encode histogram: %w", err)
	}
	return json.Marshal(d.toJSON(string(enc)))
}

// emptyEncoding is the encoding of an empty histogram of this package's
// geometry, made once: a report of many flow steps holds many empty
// distributions, and each encoding allocates the whole counts array.
var emptyEncoding = sync.OnceValues(func() (string, error) {
	enc, err := newHist().Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("encode histogram: %w", err)
	}
	return string(enc), nil
})

// toJSON is d's JSON form with hist, the encoded histogram.
func (d *Dist) toJSON(hist string) distJSON {
	return distJSON{
		Count: d.n, Min: int64(d.min), Max: int64(d.max),
		Sum: d.sum.big(), SumSq: bigString{d.sumSq.big()},
		Clamped: d.clamped, Hist: hist,
	}
}

// UnmarshalJSON decodes what MarshalJSON wrote and checks it: the
// histogram must have this package's geometry and hold exactly count
// samples, and the exact statistics must be consistent.
func (d *Dist) UnmarshalJSON(b []byte) error {
	var j distJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	nd, err := j.dist()
	if err != nil {
		return err
	}
	*d = *nd
	return nil
}

// dist decodes and checks j (see UnmarshalJSON) into a sealed Dist.
func (j *distJSON) dist() (*Dist, error) {
	var nd Dist
	var err error
	if nd.sum, err = sumFromBig(j.Sum); err != nil {
		return nil, fmt.Errorf("sum_ns: %w", err)
	}
	if nd.sumSq, err = sumFromBig(j.SumSq.Int); err != nil {
		return nil, fmt.Errorf("sum_sq_ns2: %w", err)
	}
	nd.n, nd.min, nd.max, nd.clamped = j.Count, time.Duration(j.Min), time.Duration(j.Max), j.Clamped
	if j.Hist != "" {
		if nd.h, err = decodeHist([]byte(j.Hist)); err != nil {
			return nil, err
		}
	}
	if err := nd.validate(); err != nil {
		return nil, err
	}
	nd.seal()
	return &nd, nil
}

// decodeHist decodes a histogram in HdrHistogram's V2 compressed base64
// encoding and checks that it has this package's geometry.
func decodeHist(enc []byte) (*hdr.Histogram, error) {
	h, err := hdr.Decode(enc)
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	if h.LowestTrackableValue() != histLowest || h.HighestTrackableValue() != histHighest || h.SignificantFigures() != histDigits {
		return nil, fmt.Errorf("histogram geometry %d..%d µs with %d digits, want %d..%d µs with %d",
			h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures(), histLowest, histHighest, histDigits)
	}
	return h, nil
}

// reset empties d, keeping its histogram's memory for reuse.
func (d *Dist) reset() {
	h := d.h
	if h != nil {
		h.Reset()
	}
	*d = Dist{h: h}
}

func (d *Dist) validate() error {
	var errs []error
	if d.n < 0 || d.clamped < 0 || d.min < 0 || d.max < 0 {
		errs = append(errs, errors.New("negative count or value"))
	}
	var total int64
	if d.h != nil {
		total = d.h.TotalCount()
	}
	if total != d.n {
		errs = append(errs, fmt.Errorf("histogram holds %d samples, count says %d", total, d.n))
	}
	if d.n > 0 && d.min > d.max {
		errs = append(errs, fmt.Errorf("min %d ns above max %d ns", d.min, d.max))
	}
	if d.clamped > d.n {
		errs = append(errs, fmt.Errorf("clamped %d above count %d", d.clamped, d.n))
	}
	if d.n == 0 && (d.min != 0 || d.max != 0 || d.sum != (sum128{}) || d.sumSq != (sum128{}) || d.clamped != 0) {
		errs = append(errs, errors.New("empty distribution with non-zero statistics"))
	}
	return errors.Join(errs...)
}
