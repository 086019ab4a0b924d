package measure

import (
	"maps"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/runner-dev/runner/drivers"
)

// Options configure a Recorder. The zero value records without CO
// correction and with a timeline of up to MaxTimeline seconds.
type Options struct {
	// ExpectedInterval is the closed model's expected time between two
	// requests of one connection (1 / expected_rate per connection). When
	// > 0, response times of ok requests are also recorded with coordinated
	// omission correction (HdrHistogram's RecordCorrectedValue) into
	// Summary.Corrected, reported apart. Used at µs resolution.
	ExpectedInterval time.Duration
	// Duration is the phase's planned length including its drain grace;
	// the timeline has ⌈Duration / 1 s⌉ seconds and completions after it
	// are booked in its last second. Zero means up to MaxTimeline seconds.
	Duration time.Duration
	// Window is the phase's own length when it is bounded by time (its
	// duration, without the drain). A request that completed adds its
	// whole service time to InflightSum (it lies inside the completion
	// window, Summary.CompletionWindow); one cut short (Class Cancelled:
	// the drain ran out, or an interrupt) adds only the part of [Sent,
	// Done] inside [0, Window] when Window > 0, so that the mean in-flight
	// over the completion window never exceeds the concurrency that was
	// possible. Zero counts every request's whole service time.
	Window time.Duration
	// Interval is the length of the intervals of Summary.Intervals; zero
	// or negative means IntervalFor(Duration). A recorder whose completions run past
	// MaxIntervals intervals lengthens them (to the next length
	// IntervalFor would choose that is a multiple of this one).
	Interval time.Duration
	// Redact, when non-nil, removes secrets from an error's message before
	// it is kept as its code's example and shortened to 300 bytes, so
	// that the cut never falls inside a secret (nil keeps messages as
	// they are).
	Redact func(string) string
	// Lazy leaves a shard's histograms unallocated until its first
	// sample (about 190 KiB each; Dist.record allocates it then), for a
	// recorder of which most shards see little: a flow step's, of which a
	// scenario may have hundreds. The first sample of each shard then
	// allocates, in the measured path.
	Lazy bool
}

// MaxTimeline is the most seconds a Summary's timeline holds when
// Options.Duration is zero (24 hours).
const MaxTimeline = 24 * 60 * 60

// unclassified is the error class booked for an outcome with an empty
// Class: a driver bug, but never counted as ok.
const unclassified = "unclassified"

// Recorder books request results and engine counters for one phase of one
// repeat. It is safe for concurrent use: Record takes the lock of one of N
// shards chosen by the caller, so workers that use distinct shards never
// contend; the Add counters are atomic. Summary merges the shards.
type Recorder struct {
	shards   []*shard
	opts     Options
	timeline int // seconds

	arrivals, dropped, cancelledUnsent, connectFailures, connectionsOpened atomic.Int64
	late, unknownID, duplicateID                                           atomic.Int64
	droppedLate                                                            atomic.Int64

	closesMu sync.Mutex
	closes   map[string]int64 // server closes by code

	liveMu sync.Mutex
	live   *hdr.Histogram // Live's merge of the shards, reused

	book *book // the intervals the shards have flushed
}

// shard is one lock's worth of recording state.
type shard struct {
	mu sync.Mutex

	requests, ok, errors, cancelled, timeouts, responded int64
	cancelledAtEnd, leftOverUnsent, cancelledThinking    int64
	interruptedThinking                                  int64
	bytesIn, bytesOut, dialed                            int64
	resent                                               int64 // Σ Outcome.Resent
	responseSum, inflightSum                             time.Duration
	waitSum, unansweredInflight                          time.Duration
	lastSent, lastDone                                   time.Duration

	// leftOver holds the lower bounds of left-over arrivals' response
	// times (censored samples).
	leftOver Dist

	response, service, connect, firstByte Dist
	// same holds the ok requests whose service time equals their
	// response time (every closed-model one): one histogram write for
	// both, which Summary and Live count in each.
	same Dist
	// same3 holds, instead, those whose first byte's time equals both
	// too (a response that came in one read, timed by one clock reading:
	// most closed-model requests in an event loop), counted in all
	// three: one histogram write where there were two.
	same3   Dist
	sendLag Dist // Sent − Intended of every sent request, but lagZero's
	// lagZero counts the sent requests whose send lag is 0 (every
	// closed-model one), added to sendLag by Summary.
	lagZero         int64
	sendEarly       Dist // Intended − Sent of those sent before their intended start
	corrected       *Dist
	failed          map[string]*Dist
	byClass, byCode map[string]int64
	firstErr        map[string]string // code → its first error's message
	timeline        []TimelineBucket

	// iv holds the ok response times of the shard's current interval,
	// number ivIndex of length ivLength, until the shard flushes it into
	// the recorder's book.
	iv       Dist
	ivIndex  int64
	ivLength time.Duration
}

// NewRecorder returns a Recorder with the given number of shards (at
// least 1; e.g. GOMAXPROCS or the number of workers). Each shard
// allocates its ok-path histograms (about 190 KiB each) up front so that
// Record does not allocate on the ok path within an interval; moving on
// to the next interval allocates a bounded number of times (the previous
// intervals are encoded).
func NewRecorder(shards int, opts Options) *Recorder {
	shards = max(shards, 1)
	r := &Recorder{shards: make([]*shard, shards), opts: opts, timeline: MaxTimeline}
	if r.opts.Interval <= 0 {
		r.opts.Interval = IntervalFor(opts.Duration)
	}
	r.book = newBook(r.opts.Interval)
	if opts.Duration > 0 {
		r.timeline = int(min((opts.Duration+time.Second-1)/time.Second, MaxTimeline))
	}
	for i := range r.shards {
		s := &shard{
			failed:   map[string]*Dist{},
			byClass:  map[string]int64{},
			byCode:   map[string]int64{},
			firstErr: map[string]string{},
		}
		if !opts.Lazy {
			s.response.h, s.service.h, s.same.h, s.sendLag.h, s.iv.h = newHist(), newHist(), newHist(), newHist(), newHist()
		}
		s.ivLength = r.opts.Interval
		if opts.ExpectedInterval > 0 {
			s.corrected = &Dist{}
			if !opts.Lazy {
				s.corrected.h = newHist()
			}
		}
		if opts.Duration > 0 && r.timeline <= 3600 {
			s.timeline = make([]TimelineBucket, 0, r.timeline)
		}
		r.shards[i] = s
	}
	return r
}

// Record books one request's result in shard (taken modulo the number of
// shards; any int is valid). Every result is exactly one outcome: ok,
// cancelled (drivers.Cancelled: at phase end or on interrupt — never an
// error, never ok), or an error of its class. It does not allocate on the
// ok path within one interval (Options.Interval).
func (r *Recorder) Record(shard int, res *Result) {
	if res == nil {
		return
	}
	s := r.shards[uint(shard)%uint(len(r.shards))]
	s.mu.Lock()
	s.record(res, &r.opts, r.timeline, r.book)
	s.mu.Unlock()
}

func (s *shard) record(res *Result, opts *Options, timeline int, b *book) {
	o := &res.Outcome
	resp, svc := res.ResponseTime(), res.ServiceTime()
	s.requests++
	s.bytesIn += o.BytesIn
	s.bytesOut += o.BytesOut
	s.dialed += int64(o.Dialed)
	s.resent += int64(o.Resent)
	s.lastSent = max(s.lastSent, res.Sent)
	inflight := svc
	if o.Class == drivers.Cancelled {
		// Cut short by the drain's end or an interrupt: it completed
		// nothing, so it neither extends the completion window nor counts
		// in flight beyond the phase's own window.
		if opts.Window > 0 {
			inflight = max(min(res.Done, opts.Window)-max(res.Sent, 0), 0)
		}
	} else {
		s.lastDone = max(s.lastDone, res.Done)
	}
	s.inflightSum = addSat(s.inflightSum, inflight)
	if o.Responded {
		s.responded++
		s.responseSum = addSat(s.responseSum, resp)
		s.waitSum = addSat(s.waitSum, max(res.Sent-res.Intended, 0))
	} else {
		s.unansweredInflight = addSat(s.unansweredInflight, inflight)
	}
	// Every recorded request was sent.
	if lag := res.Sent - res.Intended; lag > 0 {
		s.sendLag.record(lag)
	} else {
		s.lagZero++
	}
	if res.Sent < res.Intended {
		s.sendEarly.record(res.Intended - res.Sent)
	}
	if o.Connect > 0 {
		s.connect.record(o.Connect)
	}
	all3 := o.Class == drivers.OK && resp == svc && o.FirstByte == resp && resp > 0
	if o.FirstByte > 0 && !all3 {
		s.firstByte.record(o.FirstByte)
	}
	switch o.Class {
	case drivers.OK:
		s.ok++
		switch {
		case all3:
			s.same3.record(resp)
		case resp == svc:
			s.same.record(resp)
		default:
			s.response.record(resp)
			s.service.record(svc)
		}
		if s.corrected != nil {
			s.corrected.recordCorrected(resp, opts.ExpectedInterval)
		}
		s.interval(res.Done, resp, b)
		sec := s.second(res.Done, timeline)
		sec.OK++
		sec.ResponseSum = addSat(sec.ResponseSum, resp)
		sec.ResponseMax = max(sec.ResponseMax, resp)
	case drivers.Cancelled:
		s.cancelled++
		if o.Code == drivers.CodePhaseEnd {
			// Left over: its response time is at least what it waited.
			s.cancelledAtEnd++
			if res.Thinking {
				s.cancelledThinking++
			}
			s.leftOver.record(resp)
		} else if res.Thinking {
			s.interruptedThinking++
		}
	default:
		class := string(o.Class)
		if class == "" {
			class = unclassified
		}
		code := o.Code
		if code == "" {
			code = class
		}
		if _, known := s.byCode[code]; !known && len(s.byCode) >= MaxErrorCodes {
			code = OtherCodes // a target that puts unique values in its codes
		}
		s.errors++
		s.byClass[class]++
		s.byCode[code]++
		if _, seen := s.firstErr[code]; !seen && o.Err != nil && len(s.firstErr) < maxErrorExamples {
			msg := o.Err.Error()
			if opts.Redact != nil {
				msg = opts.Redact(msg) // before the cut, never after
			}
			s.firstErr[code] = truncate(msg, 300)
		}
		if o.Class == drivers.Timeout {
			s.timeouts++
		}
		f := s.failed[class]
		if f == nil {
			f = &Dist{}
			s.failed[class] = f
		}
		f.record(resp)
		s.second(res.Done, timeline).Errors++
	}
}

// interval books an ok response time v that completed at done in the
// shard's current interval. A completion in a later interval first
// flushes the current one into the book; a late one, in an earlier
// interval, goes straight to the book (its lock, no allocation while that
// interval is one of the book's open ones).
func (s *shard) interval(done, v time.Duration, b *book) {
	done = max(done, 0)
	i := int64(done / s.ivLength)
	if s.iv.n > 0 && i != s.ivIndex {
		if i < s.ivIndex {
			b.record(done, v)
			return
		}
		s.flush(b)
		i = int64(done / s.ivLength)
	}
	s.ivIndex = i
	s.iv.record(v)
}

// flush moves the shard's current interval into the book and takes on
// the book's interval length.
func (s *shard) flush(b *book) {
	if s.iv.n == 0 {
		return
	}
	s.ivLength = b.add(time.Duration(s.ivIndex)*s.ivLength, &s.iv)
}

// second returns the timeline entry of completion time done, growing the
// timeline as needed; done outside [0, timeline s) is booked in the first
// or last second.
func (s *shard) second(done time.Duration, timeline int) *TimelineBucket {
	i := 0
	if done > 0 {
		i = int(min(done/time.Second, time.Duration(timeline-1)))
	}
	if i >= len(s.timeline) {
		if i >= cap(s.timeline) {
			grown := make([]TimelineBucket, len(s.timeline), min(max(2*cap(s.timeline), i+1, 16), timeline))
			copy(grown, s.timeline)
			s.timeline = grown
		}
		s.timeline = s.timeline[:i+1]
	}
	return &s.timeline[i]
}

// addSat returns a+b for non-negative durations, saturated at the largest
// Duration instead of wrapping.
func addSat(a, b time.Duration) time.Duration {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// AddArrivals books n scheduled arrivals. Book one per arrival in the open
// model and one per request in the closed model, so that
// Arrivals == Requests + Dropped + CancelledUnsent + LeftOverUnsent always
// holds.
func (r *Recorder) AddArrivals(n int64) { r.arrivals.Add(n) }

// AddDropped books n arrivals dropped because every connection was at its
// in-flight cap (`on_saturation: drop`). They were never sent.
func (r *Recorder) AddDropped(n int64) { r.dropped.Add(n) }

// AddCancelled books n arrivals that were cancelled before they were sent
// (still waiting for a connection when the run was interrupted). They
// count in Cancelled and CancelledUnsent, not in Requests: they never
// reached a driver. Requests cancelled in flight are recorded with Record
// and Class drivers.Cancelled instead.
func (r *Recorder) AddCancelled(n int64) { r.cancelledUnsent.Add(n) }

// AddDroppedLate books n arrivals dropped (`on_saturation: drop`) that the
// pacer dispatched later than the engine's lateness limit: the burst a
// late generator sends can find every slot busy, so these drops are the
// generator's, not the target's. They are also in AddDropped.
func (r *Recorder) AddDroppedLate(n int64) { r.droppedLate.Add(n) }

// LeftOver books one arrival that came due during the phase but was never
// sent before the phase's drain ran out (still waiting for a free
// connection or in-flight slot). Its response time is censored: it is at
// least lowerBound (the drain's end minus its intended start), which is
// recorded in Summary.LeftOverBound. Requests cut in flight by the
// drain's end are recorded with Record instead (Class drivers.Cancelled,
// Code drivers.CodePhaseEnd). shard is taken modulo the number of shards.
func (r *Recorder) LeftOver(shard int, lowerBound time.Duration) {
	r.LeftOverN(shard, lowerBound, 1)
}

// LeftOverN books n left-over arrivals with the same lower bound at once
// (see LeftOver): a backlog of millions is booked in one step.
func (r *Recorder) LeftOverN(shard int, lowerBound time.Duration, n int64) {
	if n <= 0 {
		return
	}
	s := r.shards[uint(shard)%uint(len(r.shards))]
	s.mu.Lock()
	s.leftOverUnsent += n
	s.leftOver.recordN(max(lowerBound, 0), n)
	s.mu.Unlock()
}

// AddConnectFailures books n connections that could not be dialled at the
// barrier (before any request waited on them).
func (r *Recorder) AddConnectFailures(n int64) { r.connectFailures.Add(n) }

// AddConnectionsOpened books n connections dialled at the barrier.
// Connections dialled inside requests come from Outcome.Dialed.
func (r *Recorder) AddConnectionsOpened(n int64) { r.connectionsOpened.Add(n) }

// AddLate books n responses that arrived after their request had already
// ended as a timeout. They are not outcomes: the request stays a timeout.
func (r *Recorder) AddLate(n int64) { r.late.Add(n) }

// AddStrays books replies no request waited for (unknown id, duplicate
// id) and connections the server closed, by close code. They are not
// outcomes.
func (r *Recorder) AddStrays(unknownID, duplicateID int64, closes map[string]int64) {
	r.unknownID.Add(unknownID)
	r.duplicateID.Add(duplicateID)
	r.closesMu.Lock()
	for k, v := range closes {
		if v == 0 {
			continue
		}
		if r.closes == nil {
			r.closes = map[string]int64{}
		}
		r.closes[k] += v
	}
	r.closesMu.Unlock()
}

// Summary merges the shards into a new Summary of a phase that lasted
// elapsed (wall clock; the denominator of every rate). It may be called
// while recording goes on (for progress): each shard is consistent in
// itself, but the identities Check verifies hold only once the phase is
// over and every result is recorded. It moves each shard's current
// interval into the recorder's book of intervals (Summary.Intervals).
func (r *Recorder) Summary(elapsed time.Duration) *Summary {
	s := newSummary()
	s.Elapsed = elapsed
	if r.opts.ExpectedInterval > 0 {
		s.Corrected = &Dist{}
	}
	for _, sh := range r.shards {
		sh.mu.Lock()
		s.Requests += sh.requests
		s.OK += sh.ok
		s.Errors += sh.errors
		s.Cancelled += sh.cancelled
		s.CancelledAtEnd += sh.cancelledAtEnd
		s.CancelledThinking += sh.cancelledThinking
		s.InterruptedThinking += sh.interruptedThinking
		s.LeftOverUnsent += sh.leftOverUnsent
		s.Timeouts += sh.timeouts
		s.LastSent = max(s.LastSent, sh.lastSent)
		s.LastDone = max(s.LastDone, sh.lastDone)
		s.WaitSum = addSat(s.WaitSum, sh.waitSum)
		s.UnansweredInflightSum = addSat(s.UnansweredInflightSum, sh.unansweredInflight)
		s.LeftOverBound.add(&sh.leftOver)
		s.Responded += sh.responded
		s.BytesIn += sh.bytesIn
		s.BytesOut += sh.bytesOut
		s.Reconnects += sh.dialed
		s.GoAwayRetries += sh.resent
		s.ResponseSum = addSat(s.ResponseSum, sh.responseSum)
		s.InflightSum = addSat(s.InflightSum, sh.inflightSum)
		s.Response.add(&sh.response)
		s.Response.add(&sh.same)
		s.Service.add(&sh.service)
		s.Service.add(&sh.same)
		s.Response.add(&sh.same3)
		s.Service.add(&sh.same3)
		s.FirstByte.add(&sh.same3)
		s.SendLag.add(&sh.sendLag)
		s.SendLag.recordN(0, sh.lagZero)
		s.SendEarly.add(&sh.sendEarly)
		s.ConnectTime.add(&sh.connect)
		s.FirstByte.add(&sh.firstByte)
		if sh.corrected != nil {
			s.Corrected.add(sh.corrected)
		}
		for c, n := range sh.byClass {
			s.ErrorsByClass[c] += n
		}
		for c, m := range sh.firstErr {
			if _, ok := s.ErrorExamples[c]; !ok {
				if s.ErrorExamples == nil {
					s.ErrorExamples = map[string]string{}
				}
				s.ErrorExamples[c] = m
			}
		}
		for c, n := range sh.byCode {
			s.ErrorsByCode[c] += n
		}
		for c, d := range sh.failed {
			if s.Failed[c] == nil {
				s.Failed[c] = &Dist{}
			}
			s.Failed[c].add(d)
		}
		s.Timeline = mergeTimeline(s.Timeline, sh.timeline)
		sh.flush(r.book)
		sh.mu.Unlock()
	}
	s.Arrivals = r.arrivals.Load()
	s.Dropped = r.dropped.Load()
	s.CancelledUnsent = r.cancelledUnsent.Load()
	s.Cancelled += s.CancelledUnsent
	s.DroppedLate = r.droppedLate.Load()
	s.ConnectFailures = r.connectFailures.Load()
	s.ConnectionsOpened = r.connectionsOpened.Load() + s.Reconnects
	s.Late = r.late.Load()
	s.UnknownID, s.DuplicateID = r.unknownID.Load(), r.duplicateID.Load()
	r.closesMu.Lock()
	s.ClosesByCode = maps.Clone(r.closes)
	r.closesMu.Unlock()
	s.Intervals = r.book.intervals()
	s.seal()
	return s
}

// MaxErrorCodes bounds the distinct error codes kept per shard; errors of
// further codes count under OtherCodes.
const MaxErrorCodes = 256

// OtherCodes is the code of errors beyond MaxErrorCodes distinct codes.
const OtherCodes = "(other codes)"

// maxErrorExamples bounds the error codes a shard keeps an example of.
const maxErrorExamples = 32

// truncate cuts s to at most n bytes, on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Live is a glance at a phase in progress, for a progress line: counts so
// far and the nearest-rank p99 of the ok responses so far.
type Live struct {
	Requests, OK, Errors int64
	// P99 is the response time's p99 so far; ok false before any response.
	P99   time.Duration
	P99OK bool
}

// Live merges the shards' counts and response histograms into a Live. It
// takes each shard's lock briefly; call it about once a second, not per
// request. It reuses one histogram and allocates nothing, so a long run
// of idle connections does not pile up garbage second after second. Its
// P99 is the nearest rank, as Dist.Percentile's.
func (r *Recorder) Live() Live {
	var l Live
	r.liveMu.Lock()
	defer r.liveMu.Unlock()
	if r.live == nil {
		r.live = newHist()
	} else {
		r.live.Reset()
	}
	var n int64
	var lo, hi time.Duration
	for _, s := range r.shards {
		s.mu.Lock()
		l.Requests += s.requests
		l.OK += s.ok
		l.Errors += s.errors
		for _, d := range [3]*Dist{&s.response, &s.same, &s.same3} {
			if d.n > 0 {
				if n == 0 || d.min < lo {
					lo = d.min
				}
				hi = max(hi, d.max)
				n += d.n
				r.live.Merge(d.h)
			}
		}
		s.mu.Unlock()
	}
	l.P99, l.P99OK = histPercentile(r.live, n, lo, hi, 99)
	return l
}

// histPercentile is the nearest-rank pth percentile of n samples in h
// whose exact min and max are lo and hi, as Dist.Percentile computes it,
// without building an index: HdrHistogram's ValueAtQuantile(q) returns
// the first bucket whose cumulative count reaches round(q/100·n), and q is
// chosen so that this is the rank ceil(p/100·n).
func histPercentile(h *hdr.Histogram, n int64, lo, hi time.Duration, p float64) (time.Duration, bool) {
	if n == 0 {
		return 0, false
	}
	rank := NearestRank(p, n)
	switch {
	case rank <= 1:
		return lo, true
	case rank >= n:
		return hi, true
	}
	q := (float64(rank) - 0.25) / float64(n) * 100
	v := time.Duration(h.ValueAtQuantile(q))*time.Microsecond + time.Microsecond - 1
	return min(max(v, lo), hi), true
}
