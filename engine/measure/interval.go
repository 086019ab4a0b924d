package measure

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// MaxIntervals is the most intervals a Summary keeps: a phase longer than
// MaxIntervals seconds gets longer intervals (IntervalFor), and a recorder
// whose completions run past MaxIntervals intervals coarsens its intervals
// so that they never exceed it.
const MaxIntervals = 600

// intervalSteps are the interval lengths below a minute that IntervalFor
// chooses from; beyond them it takes whole minutes.
var intervalSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second,
	15 * time.Second, 30 * time.Second, time.Minute,
}

// IntervalFor returns the interval length of a phase that lasts d
// (including its drain): 1 s for a phase of up to MaxIntervals seconds
// (10 minutes), else the smallest of 2, 5, 10, 15, 30 and 60 s or whole
// minutes with ⌈d / length⌉ ≤ MaxIntervals. d ≤ 0 gives 1 s.
func IntervalFor(d time.Duration) time.Duration { return coarser(time.Second, d) }

// coarser returns the shortest interval length l that is a multiple of
// cur (cur > 0), so that intervals of cur re-bin exactly into intervals of
// l, and that covers [0, span) in at most MaxIntervals intervals: the first
// fit among intervalSteps, else whole minutes, else a multiple of cur.
func coarser(cur, span time.Duration) time.Duration {
	fits := func(l time.Duration) bool { return l >= cur && l%cur == 0 && intervalsIn(span, l) <= MaxIntervals }
	for _, l := range intervalSteps {
		if fits(l) {
			return l
		}
	}
	need := time.Duration(intervalsIn(span, MaxIntervals*time.Minute)) // minutes per interval at least
	for k := max(need, 1); k < max(need, 1)+60; k++ {
		if l := k * time.Minute; fits(l) {
			return l
		}
	}
	return cur * time.Duration(max(intervalsIn(span, cur*MaxIntervals), 1))
}

// intervalsIn is ⌈span / l⌉ for l > 0, without overflow; 0 for span ≤ 0.
func intervalsIn(span, l time.Duration) int64 {
	if span <= 0 {
		return 0
	}
	n := int64(span / l)
	if span%l != 0 {
		n++
	}
	return n
}

// Interval is the ok response times of one interval of a phase, by
// completion time (Result.Done, the instant the Timeline books too):
// requests that completed in [Start, Start+Length) from the phase start.
// Completions before the phase start are booked in the first interval.
//
// Its distribution is kept compact, as the histogram in HdrHistogram's V2
// compressed encoding (µs, the geometry of every Dist) beside the exact
// count, min, max, Σx, Σx² and clamped count, so the figures Dist reports
// stay exact. An Interval is immutable and safe for concurrent use; copies
// share its encoded histogram, which is never written again.
type Interval struct {
	// Start is the interval's start as an offset from the phase start; a
	// multiple of Length.
	Start time.Duration
	// Length is the interval's length (> 0); every interval of one
	// Summary has the same length.
	Length time.Duration

	response packed
}

// packed is a Dist in compact form: its exact statistics (a Dist without
// histogram) and its histogram encoded (V2 compressed, base64); hist is
// nil when there are no samples.
type packed struct {
	stats Dist
	hist  []byte
}

// pack encodes d. Encoding into memory does not fail; should it, the error
// says so.
func pack(d *Dist) (packed, error) {
	p := packed{stats: d.stats()}
	if d.n == 0 || d.h == nil {
		return p, nil
	}
	enc, err := d.h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return packed{}, fmt.Errorf("encode histogram: %w", err)
	}
	p.hist = enc
	return p, nil
}

// stats is d's exact statistics without its histogram.
func (d *Dist) stats() Dist {
	return Dist{n: d.n, min: d.min, max: d.max, sum: d.sum, sumSq: d.sumSq, clamped: d.clamped}
}

// histogram decodes p's histogram; nil when p has no samples.
func (p *packed) histogram() (*hdr.Histogram, error) {
	if p.hist == nil {
		return nil, nil
	}
	return decodeHist(p.hist)
}

// unpackInto adds p's samples to d.
func (p *packed) unpackInto(d *Dist) error {
	h, err := p.histogram()
	if err != nil {
		return err
	}
	o := p.stats
	o.h = h
	if dropped := d.add(&o); dropped > 0 {
		return fmt.Errorf("%d histogram samples out of range", dropped)
	}
	return nil
}

// Count is the number of ok responses that completed in the interval.
func (iv *Interval) Count() int64 { return iv.response.stats.n }

// End is Start + Length.
func (iv *Interval) End() time.Duration { return iv.Start + iv.Length }

// Response decodes the interval's response-time distribution, percentiles
// included (Dist.Percentile). The error says the encoded histogram cannot
// be decoded, which cannot happen for an Interval that a Recorder made or
// that UnmarshalJSON accepted.
func (iv *Interval) Response() (*Dist, error) {
	d := &Dist{}
	if err := iv.response.unpackInto(d); err != nil {
		return nil, fmt.Errorf("interval at %s: %w", iv.Start, err)
	}
	d.seal()
	return d, nil
}

// Histogram decodes the interval's HdrHistogram (µs, as Dist.Histogram),
// for HdrHistogram's own formats and tools; nil when the interval holds no
// sample. The error is Response's.
func (iv *Interval) Histogram() (*hdr.Histogram, error) {
	h, err := iv.response.histogram()
	if err != nil {
		return nil, fmt.Errorf("interval at %s: %w", iv.Start, err)
	}
	return h, nil
}

// MaxIntervalEnd bounds the end (Start + Length) of an interval read
// from JSON: 4000 h, room for the longest phase a plan holds (1000 h,
// engine.MaxTime) with its drain and timeouts (at most 1000 h each) and
// its last interval, far inside a time.Duration, so that no sum of a
// start and a length read back overflows.
const MaxIntervalEnd = 4000 * time.Hour

// intervalJSON is an Interval's JSON form.
type intervalJSON struct {
	Start    int64           `json:"start_ns"`
	Length   int64           `json:"length_ns"`
	Response json.RawMessage `json:"response"`
}

// MarshalJSON encodes iv as {"start_ns", "length_ns", "response"}, with
// response in the form of every other distribution of a Summary (see
// Dist.MarshalJSON).
func (iv Interval) MarshalJSON() ([]byte, error) {
	resp, err := json.Marshal(iv.response.stats.toJSON(string(iv.response.hist)))
	if err != nil {
		return nil, err
	}
	return json.Marshal(intervalJSON{Start: int64(iv.Start), Length: int64(iv.Length), Response: resp})
}

// UnmarshalJSON decodes what MarshalJSON wrote and checks it: Length > 0,
// Start ≥ 0 and a multiple of Length, Start + Length ≤ MaxIntervalEnd
// (so that End never overflows), and a response distribution, present
// and not null, that Dist.UnmarshalJSON accepts. Each error names the
// interval's start.
func (iv *Interval) UnmarshalJSON(b []byte) error {
	var j intervalJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	at := fmt.Sprintf("interval at start_ns %d", j.Start)
	switch {
	case j.Length <= 0:
		return fmt.Errorf("%s: length_ns %d, want > 0", at, j.Length)
	case j.Start < 0:
		return fmt.Errorf("%s: start_ns is negative", at)
	case j.Length > int64(MaxIntervalEnd) || j.Start > int64(MaxIntervalEnd)-j.Length:
		return fmt.Errorf("%s: length_ns %d: the interval ends past %s from the phase start, longer than any phase runs", at, j.Length, MaxIntervalEnd)
	case j.Start%j.Length != 0:
		return fmt.Errorf("%s: start_ns is not a multiple of length_ns %d", at, j.Length)
	case j.Response == nil:
		return fmt.Errorf("%s: response missing", at)
	case string(j.Response) == "null":
		// A RawMessage holds a null as the four bytes, not as nil.
		return fmt.Errorf("%s: response is null", at)
	}
	var dj distJSON
	if err := json.Unmarshal(j.Response, &dj); err != nil {
		return fmt.Errorf("%s: response: %w", at, err)
	}
	d, err := dj.dist()
	if err != nil {
		return fmt.Errorf("%s: response: %w", at, err)
	}
	p := packed{stats: d.stats()}
	if d.n > 0 {
		p.hist = []byte(dj.Hist)
	}
	*iv = Interval{Start: time.Duration(j.Start), Length: time.Duration(j.Length), response: p}
	return nil
}

// mergeIntervals merges two lists of intervals sorted by Start: intervals
// with the same Start add losslessly. When one list's length is a multiple
// of the other's (a generator whose phase ran long coarsened its
// intervals), the shorter intervals are first merged into the longer
// ones. The error says the lengths are not multiples of one another, or
// that a histogram could not be decoded or encoded.
func mergeIntervals(a, b []Interval) ([]Interval, error) {
	if len(a) > 0 && len(b) > 0 && a[0].Length != b[0].Length {
		la, lb := a[0].Length, b[0].Length
		var err error
		switch {
		case la%lb == 0:
			b, err = rebin(b, la)
		case lb%la == 0:
			a, err = rebin(a, lb)
		default:
			err = fmt.Errorf("intervals of %s and of %s cannot merge", la, lb)
		}
		if err != nil {
			return nil, err
		}
	}
	out := make([]Interval, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		switch {
		case len(b) == 0 || (len(a) > 0 && a[0].Start < b[0].Start):
			out, a = append(out, a[0]), a[1:]
		case len(a) == 0 || b[0].Start < a[0].Start:
			out, b = append(out, b[0]), b[1:]
		default:
			if a[0].Length != b[0].Length {
				return nil, fmt.Errorf("intervals at %s of %s and of %s cannot merge", a[0].Start, a[0].Length, b[0].Length)
			}
			d := &Dist{}
			if err := a[0].response.unpackInto(d); err != nil {
				return nil, err
			}
			if err := b[0].response.unpackInto(d); err != nil {
				return nil, err
			}
			p, err := pack(d)
			if err != nil {
				return nil, err
			}
			out = append(out, Interval{Start: a[0].Start, Length: a[0].Length, response: p})
			a, b = a[1:], b[1:]
		}
	}
	return out, nil
}

// rebin merges intervals sorted by Start into intervals of length l, a
// multiple of theirs.
func rebin(ivs []Interval, l time.Duration) ([]Interval, error) {
	var out []Interval
	for _, iv := range ivs {
		iv.Start, iv.Length = iv.Start/l*l, l
		if k := len(out) - 1; k >= 0 && out[k].Start == iv.Start {
			m, err := mergeIntervals(out[k:], []Interval{iv})
			if err != nil {
				return nil, err
			}
			out[k] = m[0]
			continue
		}
		out = append(out, iv)
	}
	return out, nil
}

// checkIntervals verifies that intervals have one positive length, are
// sorted by Start without overlap, and hold ok samples in all.
func checkIntervals(ivs []Interval, ok int64) error {
	var errs []error
	var n int64
	for i := range ivs {
		iv := &ivs[i]
		n += iv.Count()
		switch {
		case iv.Length <= 0 || iv.Start < 0:
			errs = append(errs, fmt.Errorf("interval %d: start %s, length %s", i, iv.Start, iv.Length))
		case iv.Length != ivs[0].Length:
			errs = append(errs, fmt.Errorf("interval %d: length %s, the first's is %s", i, iv.Length, ivs[0].Length))
		case i > 0 && iv.Start < ivs[i-1].End():
			errs = append(errs, fmt.Errorf("interval %d at %s starts before interval %d ends (%s)", i, iv.Start, i-1, ivs[i-1].End()))
		}
	}
	if n != ok {
		errs = append(errs, fmt.Errorf("intervals hold %d samples, ok is %d", n, ok))
	}
	return errors.Join(errs...)
}

// maxOpen is how many of the most recently used intervals a book keeps
// uncompressed: the current one and those late samples still reach.
const maxOpen = 3

// book holds a recorder's intervals. The shards flush their current
// interval's samples into it when they move on to a later interval (or
// when a Summary is taken); it keeps the maxOpen most recently used
// intervals as Dists and the older ones packed. It is safe for concurrent
// use.
type book struct {
	mu      sync.Mutex
	length  time.Duration
	entries []*entry // by index, ascending
	clock   int64    // use counter: the least recently used open entry is packed first
	spare   *hdr.Histogram
}

// entry is one interval of a book: open (a Dist) or packed.
type entry struct {
	index  int64 // Start / book.length
	open   *Dist
	used   int64
	packed packed
}

func newBook(length time.Duration) *book { return &book{length: length} }

// add moves d, the samples of the interval that starts at start (a
// multiple of a length the book had, so it lies inside one interval of
// the book), into the book, leaves d empty, and returns the book's
// interval length. When the book's interval was empty it takes d's
// histogram and gives d an empty one in exchange, instead of merging
// bucket by bucket.
func (b *book) add(start time.Duration, d *Dist) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.at(start)
	if e.n > 0 || d.h == nil {
		e.add(d)
		d.reset()
		return b.length
	}
	*e, *d = *d, *e
	d.reset()
	return b.length
}

// record books one late sample v that completed at done.
func (b *book) record(done, v time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.at(done).record(v)
}

// at returns the open Dist of the interval holding t (≥ 0), creating it,
// coarsening the book when t lies past MaxIntervals intervals, and packing
// the least recently used open interval beyond maxOpen.
func (b *book) at(t time.Duration) *Dist {
	if int64(t/b.length) >= MaxIntervals {
		b.coarsen(coarser(b.length, addSat(t, 1))) // [0, t] in at most MaxIntervals
	}
	i := int64(t / b.length)
	k := sort.Search(len(b.entries), func(k int) bool { return b.entries[k].index >= i })
	if k == len(b.entries) || b.entries[k].index != i {
		b.entries = append(b.entries, nil)
		copy(b.entries[k+1:], b.entries[k:])
		b.entries[k] = &entry{index: i}
	}
	e := b.entries[k]
	b.clock++
	e.used = b.clock
	if e.open == nil {
		b.reopen(e)
	}
	return e.open
}

// reopen turns e into an open entry, packing the least recently used open
// one if there are then more than maxOpen.
func (b *book) reopen(e *entry) {
	var lru *entry
	open := 0
	for _, o := range b.entries {
		if o.open != nil {
			open++
			if lru == nil || o.used < lru.used {
				lru = o
			}
		}
	}
	if open >= maxOpen {
		b.close(lru)
	}
	if h, err := e.packed.histogram(); err == nil && h != nil {
		// Decoding made a histogram: it holds the samples as they are.
		d := e.packed.stats
		d.h = h
		e.open, e.packed = &d, packed{}
		return
	}
	// An empty entry, or (not possible for what pack wrote) one whose
	// histogram does not decode: that one keeps its packed half too, and
	// intervals leaves it out, which Check reports.
	h := b.spare
	b.spare = nil
	if h == nil {
		h = newHist()
	}
	e.open = &Dist{h: h}
}

// close packs open entry e and keeps its histogram for the next one
// opened. If packing fails (it cannot, in memory), e stays open.
func (b *book) close(e *entry) {
	p, err := pack(e.open)
	if err != nil {
		return
	}
	e.packed = p
	e.open.reset()
	b.spare = e.open.h
	e.open = nil
}

// coarsen re-bins every entry into intervals of length l (a multiple of
// the book's), packed.
func (b *book) coarsen(l time.Duration) {
	old := b.entries
	b.entries = nil
	acc := &Dist{}
	var cur *entry
	finish := func() {
		if cur == nil {
			return
		}
		if p, err := pack(acc); err == nil {
			cur.packed = p
		} else {
			cur.open, acc = acc, &Dist{}
		}
		b.entries = append(b.entries, cur)
		acc.reset()
	}
	for _, e := range old {
		i := int64(time.Duration(e.index) * b.length / l)
		if cur == nil || cur.index != i {
			finish()
			cur = &entry{index: i}
		}
		if e.open != nil {
			acc.add(e.open)
		}
		_ = e.packed.unpackInto(acc) // cannot fail for what pack wrote
	}
	finish()
	b.length = l
}

// intervals returns the book's intervals, sorted by Start, packing open
// ones into the copies without closing them.
func (b *book) intervals() []Interval {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Interval
	for _, e := range b.entries {
		p := e.packed
		if e.open != nil {
			d := e.open.Clone()
			if err := p.unpackInto(d); err != nil {
				continue // Check reports the samples missing
			}
			var err error
			if p, err = pack(d); err != nil {
				continue
			}
		}
		if p.stats.n == 0 {
			continue
		}
		out = append(out, Interval{Start: time.Duration(e.index) * b.length, Length: b.length, response: p})
	}
	return out
}
