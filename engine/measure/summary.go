package measure

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/runner-dev/runner/drivers"
)

// Summary is everything measured in one phase of one repeat (or of one
// segment of it). It is self-contained and mergeable (docs/design.md,
// "Mergeable results"): counters rather than ratios, exact sums, and full
// histograms that encode to JSON in HdrHistogram's V2 form. Derived metrics are methods.
//
// Identities (Check): every sent request ends in exactly one outcome, and
// every arrival is sent, dropped, left over unsent or cancelled before it
// was sent:
//
//	Requests == OK + Errors + (Cancelled − CancelledUnsent)
//	Arrivals == Requests + Dropped + CancelledUnsent + LeftOverUnsent
//
// so Arrivals == OK + Errors + Dropped + LeftOver() + (Cancelled −
// CancelledAtEnd): in a phase that was not interrupted, every arrival is
// ok, an error, dropped or left over.
//
// A Summary is not safe for concurrent mutation; its read methods are safe
// for concurrent use. Copying a Summary by value shares its histograms: use
// Clone before merging into a copy.
type Summary struct {
	// Elapsed is the phase's own length: its duration (or for an open
	// phase bounded by count, the span of its arrivals), or the wall-clock
	// time a phase bounded by its request count took. It is the window of
	// the offered rate. Rates of what was sent and completed are over the
	// windows in which that happened (SendWindow, CompletionWindow), which
	// include the drain after the phase's time was up.
	Elapsed time.Duration `json:"elapsed_ns"`
	// LastSent is the latest send and LastDone the latest completion
	// (ok or error, not a request cut short) of the phase, as offsets from
	// its start; 0 when none.
	LastSent time.Duration `json:"last_sent_ns"`
	LastDone time.Duration `json:"last_done_ns"`

	// Arrivals is the number of arrivals scheduled (open model) or requests
	// started (closed model).
	Arrivals int64 `json:"arrivals"`
	// Requests is the number of requests sent (recorded with Record),
	// whatever their outcome.
	Requests int64 `json:"requests"`
	// OK is the number of requests that ended ok.
	OK int64 `json:"ok"`
	// Errors is the number of requests that ended in an error class.
	Errors int64 `json:"errors"`
	// Dropped is the number of arrivals never sent because every
	// connection was at its in-flight cap at their intended start
	// (`on_saturation: drop`).
	Dropped int64 `json:"dropped"`
	// DroppedLate is the part of Dropped that the pacer dispatched later
	// than the lateness limit: the generator's drops, not the target's.
	DroppedLate int64 `json:"dropped_late,omitempty"`
	// LeftOverUnsent is the number of arrivals that came due during the
	// phase and were still waiting for a free connection (or in-flight
	// slot) when the drain ran out: never sent. With CancelledAtEnd they
	// are the phase's left-over arrivals (LeftOver).
	LeftOverUnsent int64 `json:"left_over_unsent"`
	// Cancelled is the number of arrivals that ended cancelled: requests
	// still open after the end-of-phase grace or interrupted in flight, and
	// arrivals an interrupt caught before they were sent (CancelledUnsent).
	// Neither error nor ok.
	Cancelled int64 `json:"cancelled"`
	// CancelledUnsent is the part of Cancelled that was never sent.
	CancelledUnsent int64 `json:"cancelled_unsent"`
	// CancelledAtEnd is the part of Cancelled that the drain's end cut off
	// in flight (Code drivers.CodePhaseEnd): left over, not interrupted.
	CancelledAtEnd int64 `json:"cancelled_at_end"`
	// CancelledThinking is the part of CancelledAtEnd that the drain's
	// end cut between two steps of a flow's iteration, while its virtual
	// user was thinking (Result.Thinking): left over with no request in
	// flight. CancelledAtEnd − CancelledThinking were cut in flight. 0 in
	// a phase without flows.
	CancelledThinking int64 `json:"cancelled_thinking,omitempty"`
	// InterruptedThinking is the part of Cancelled that an interrupt
	// (Ctrl-C) caught between two steps of a flow's iteration, its user
	// thinking (Result.Thinking): sent, with no request in flight. The
	// rest of Cancelled − CancelledUnsent − CancelledAtEnd had a request
	// in flight. 0 in a phase without flows.
	InterruptedThinking int64 `json:"interrupted_thinking,omitempty"`
	// Timeouts is the number of errors of class timeout (also in Errors).
	Timeouts int64 `json:"timeouts"`
	// Late is the number of responses that arrived after their request had
	// timed out. Not outcomes: those requests count as timeouts.
	Late int64 `json:"late"`
	// UnknownID counts replies whose id matched no request sent (or could
	// not be read), DuplicateID further replies to an answered request.
	// Not outcomes: no request waits for them (drivers.Strays).
	UnknownID   int64 `json:"unknown_id"`
	DuplicateID int64 `json:"duplicate_id"`
	// ClosesByCode counts connections the server closed, by close code
	// ("1000" clean, "1006" dropped without a close frame); nil when none.
	ClosesByCode map[string]int64 `json:"closes_by_code,omitempty"`
	// ErrorsByClass counts errors per drivers.Class ("timeout", "status", …).
	ErrorsByClass map[string]int64 `json:"errors_by_class"`
	// ErrorsByCode counts errors per Outcome.Code as the driver gave it
	// ("503", "EADDRNOTAVAIL", "RATE_LIMITED"); errors without a code count
	// under their class name.
	ErrorsByCode map[string]int64 `json:"errors_by_code"`
	// ErrorExamples holds, per error code, the message of one error of
	// that code (the first a shard saw, at most 300 bytes), so that a
	// report can say what "too-long" or "503" was. Nil when no error.
	ErrorExamples map[string]string `json:"error_examples,omitempty"`

	// ConnectionsOpened is the number of connections dialled: at the
	// barrier plus inside requests (Reconnects).
	ConnectionsOpened int64 `json:"connections_opened"`
	// Reconnects is Σ Outcome.Dialed: connections requests had to open
	// (re-dials after a close, or every request without keep-alive).
	Reconnects int64 `json:"reconnects"`
	// GoAwayRetries is Σ Outcome.Resent: requests sent a second time, on
	// a fresh connection, because an HTTP/2 GOAWAY said the server had not
	// processed them (RFC 9113 §6.8). Each counts once among Requests,
	// with the second send's outcome; its response time runs from its
	// intended start, the refused send included.
	GoAwayRetries int64 `json:"goaway_retries,omitempty"`
	// ConnectFailures is the number of barrier dials that failed.
	ConnectFailures int64 `json:"connect_failures"`
	// BytesIn and BytesOut are Σ Outcome.BytesIn and Σ Outcome.BytesOut.
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`

	// Response is the response time (Done − Intended) of ok requests.
	Response Dist `json:"response"`
	// Service is the service time (Done − Sent) of ok requests.
	Service Dist `json:"service"`
	// SendLag is Sent − Intended of every request sent: how long an
	// arrival waited in the client (for a free connection, or a late
	// pacer) before it went out; 0 throughout in the closed model.
	SendLag Dist `json:"send_lag"`
	// SendEarly is Intended − Sent of every request sent before its
	// intended start: an open phase's dispatch window sends a group's
	// later arrivals with its first, each up to the window early. Empty
	// without a window. With SendLag (whose 0s include these) it is the
	// whole dispatch error, Sent − Intended of both signs.
	SendEarly Dist `json:"send_early"`
	// Corrected is Response recorded with coordinated-omission correction
	// (closed model with an expected rate); nil when not asked for.
	Corrected *Dist `json:"corrected,omitempty"`
	// Failed holds the response times of failed requests per error class.
	Failed map[string]*Dist `json:"failed"`
	// ConnectTime is Outcome.Connect of every request that dialled.
	ConnectTime Dist `json:"connect_time"`
	// FirstByte is Outcome.FirstByte of every request that got a byte.
	FirstByte Dist `json:"first_byte"`

	// Responded is the number of requests with a complete response
	// (Outcome.Responded: ok, status and rule-failed outcomes).
	Responded int64 `json:"responded"`
	// ResponseSum is Σ response time over the Responded requests.
	ResponseSum time.Duration `json:"response_sum_ns"`
	// WaitSum is Σ (Sent − Intended) over the Responded requests: the part
	// of ResponseSum they spent waiting in the client before being sent.
	WaitSum time.Duration `json:"wait_sum_ns,omitempty"`
	// UnansweredInflightSum is the part of InflightSum spent by requests
	// without a complete response (timeouts, resets, cut at the end).
	UnansweredInflightSum time.Duration `json:"unanswered_inflight_sum_ns,omitempty"`
	// LeftOverBound holds, per left-over arrival, a lower bound of its
	// response time: the drain's end minus its intended start. The samples
	// are censored: each true value is at least the one recorded.
	LeftOverBound Dist `json:"left_over_bound"`
	// InflightSum is Σ service time over all requests (see
	// Options.Window for those cut short). A request is in flight exactly
	// during [Sent, Done), so InflightSum is the integral of the in-flight
	// count over time and InflightSum / CompletionWindow is the exact mean
	// in-flight count over the window in which the phase's requests ran.
	InflightSum time.Duration `json:"inflight_sum_ns"`

	// Timeline holds one entry per second of completion time (Done) from
	// the phase start, at most the phase length (Options.Duration).
	Timeline []TimelineBucket `json:"timeline"`

	// Intervals holds the ok response times per interval of completion
	// time (Options.Interval; 1 s for a phase of up to 10 minutes), sorted
	// by Start, without the empty ones: any percentile over time can be
	// derived from them (Interval.Response). Σ Count() == OK. Nil when no
	// request was ok, and in results written before intervals existed.
	Intervals []Interval `json:"intervals,omitempty"`
}

// TimelineBucket is one second of a Summary's timeline, by completion time.
type TimelineBucket struct {
	// OK and Errors count the requests that completed in this second.
	OK     int64 `json:"ok"`
	Errors int64 `json:"errors"`
	// ResponseSum and ResponseMax are the sum and the largest response
	// time of the ok requests that completed in this second.
	ResponseSum time.Duration `json:"response_sum_ns"`
	ResponseMax time.Duration `json:"response_max_ns"`
}

// Mean is the mean response time of the second's ok requests; ok is false
// when there were none.
func (s TimelineBucket) Mean() (v time.Duration, ok bool) {
	if s.OK == 0 {
		return 0, false
	}
	return s.ResponseSum / time.Duration(s.OK), true
}

func newSummary() *Summary {
	return &Summary{
		ErrorsByClass: map[string]int64{},
		ErrorsByCode:  map[string]int64{},
		Failed:        map[string]*Dist{},
	}
}

// seal builds the percentile indexes of every distribution.
func (s *Summary) seal() {
	s.Response.seal()
	s.Service.seal()
	s.SendLag.seal()
	s.SendEarly.seal()
	s.ConnectTime.seal()
	s.FirstByte.seal()
	s.LeftOverBound.seal()
	if s.Corrected != nil {
		s.Corrected.seal()
	}
	for _, d := range s.Failed {
		if d != nil {
			d.seal()
		}
	}
}

// FailedAll is the response-time distribution of all failed requests,
// every error class merged.
func (s *Summary) FailedAll() *Dist {
	all := &Dist{}
	for _, c := range slices.Sorted(maps.Keys(s.Failed)) {
		all.add(s.Failed[c])
	}
	all.seal()
	return all
}

func mergeTimeline(dst, src []TimelineBucket) []TimelineBucket {
	if len(src) > len(dst) {
		dst = append(dst, make([]TimelineBucket, len(src)-len(dst))...)
	}
	for i, x := range src {
		d := &dst[i]
		d.OK += x.OK
		d.Errors += x.Errors
		d.ResponseSum = addSat(d.ResponseSum, x.ResponseSum)
		d.ResponseMax = max(d.ResponseMax, x.ResponseMax)
	}
	return dst
}

// Merge adds o to s losslessly. Both must be summaries of the same phase
// over the same wall-clock window, e.g. the segments of one phase run by N
// generators (docs/design.md, "Mergeable results"): counters and sums
// add, histograms merge bucket by bucket, timelines add second by second,
// intervals of the same start merge (after re-binning the shorter ones
// when one length is a multiple of the other; else the error says so and
// s keeps its own), and Elapsed is the longer of the two. When one side has ok responses but no intervals (a result written
// before they existed), the merge has none. Never merge repeats to average
// them: each repeat is judged on its own. A nil o is a no-op. The error
// says a histogram could not hold some of o's samples (their ranges
// differ): the merged percentiles would then miss them.
func (s *Summary) Merge(o *Summary) error {
	if o == nil {
		return nil
	}
	if o == s {
		o = o.Clone()
	}
	s.Elapsed = max(s.Elapsed, o.Elapsed)
	s.LastSent = max(s.LastSent, o.LastSent)
	s.LastDone = max(s.LastDone, o.LastDone)
	s.Arrivals += o.Arrivals
	s.Requests += o.Requests
	s.OK += o.OK
	s.Errors += o.Errors
	s.Dropped += o.Dropped
	s.DroppedLate += o.DroppedLate
	s.LeftOverUnsent += o.LeftOverUnsent
	s.Cancelled += o.Cancelled
	s.CancelledUnsent += o.CancelledUnsent
	s.CancelledAtEnd += o.CancelledAtEnd
	s.CancelledThinking += o.CancelledThinking
	s.InterruptedThinking += o.InterruptedThinking
	s.Timeouts += o.Timeouts
	s.Late += o.Late
	s.UnknownID += o.UnknownID
	s.DuplicateID += o.DuplicateID
	s.ClosesByCode = addCounts(s.ClosesByCode, o.ClosesByCode)
	s.ErrorsByClass = addCounts(s.ErrorsByClass, o.ErrorsByClass)
	s.ErrorsByCode = addCounts(s.ErrorsByCode, o.ErrorsByCode)
	for c, m := range o.ErrorExamples {
		if _, ok := s.ErrorExamples[c]; !ok {
			if s.ErrorExamples == nil {
				s.ErrorExamples = map[string]string{}
			}
			s.ErrorExamples[c] = m
		}
	}
	s.ConnectionsOpened += o.ConnectionsOpened
	s.Reconnects += o.Reconnects
	s.GoAwayRetries += o.GoAwayRetries
	s.ConnectFailures += o.ConnectFailures
	s.BytesIn += o.BytesIn
	s.BytesOut += o.BytesOut
	var dropped int64
	dropped += s.Response.add(&o.Response)
	dropped += s.Service.add(&o.Service)
	dropped += s.SendLag.add(&o.SendLag)
	dropped += s.SendEarly.add(&o.SendEarly)
	dropped += s.ConnectTime.add(&o.ConnectTime)
	dropped += s.FirstByte.add(&o.FirstByte)
	dropped += s.LeftOverBound.add(&o.LeftOverBound)
	if o.Corrected != nil {
		if s.Corrected == nil {
			s.Corrected = &Dist{}
		}
		dropped += s.Corrected.add(o.Corrected)
	}
	if s.Failed == nil {
		s.Failed = map[string]*Dist{}
	}
	for c, d := range o.Failed {
		if d == nil {
			continue
		}
		if s.Failed[c] == nil {
			s.Failed[c] = &Dist{}
		}
		dropped += s.Failed[c].add(d)
	}
	s.Responded += o.Responded
	s.ResponseSum = addSat(s.ResponseSum, o.ResponseSum)
	s.WaitSum = addSat(s.WaitSum, o.WaitSum)
	s.UnansweredInflightSum = addSat(s.UnansweredInflightSum, o.UnansweredInflightSum)
	s.InflightSum = addSat(s.InflightSum, o.InflightSum)
	s.Timeline = mergeTimeline(s.Timeline, o.Timeline)
	var ivErr error
	if s.hasIntervals() && o.hasIntervals() {
		if ivs, err := mergeIntervals(s.Intervals, o.Intervals); err != nil {
			ivErr = fmt.Errorf("intervals: %w", err)
		} else {
			s.Intervals = ivs
		}
	} else {
		// One side predates intervals: the merge could not hold all of
		// the ok responses, so it holds none.
		s.Intervals = nil
	}
	s.seal()
	if dropped > 0 {
		ivErr = errors.Join(ivErr, fmt.Errorf("%d histogram samples out of range were dropped: the histograms' ranges differ", dropped))
	}
	return ivErr
}

// hasIntervals says whether s's intervals hold its ok responses: it has
// intervals or none was ok. Results written before intervals existed have
// ok responses and no intervals.
func (s *Summary) hasIntervals() bool { return len(s.Intervals) > 0 || s.OK == 0 }

func addCounts(dst, src map[string]int64) map[string]int64 {
	if dst == nil {
		dst = map[string]int64{}
	}
	for k, v := range src {
		dst[k] += v
	}
	return dst
}

// Clone returns an independent deep copy of s.
func (s *Summary) Clone() *Summary {
	c := *s
	c.ErrorsByClass = maps.Clone(s.ErrorsByClass)
	c.ErrorsByCode = maps.Clone(s.ErrorsByCode)
	c.ErrorExamples = maps.Clone(s.ErrorExamples)
	c.ClosesByCode = maps.Clone(s.ClosesByCode)
	c.Response = *s.Response.Clone()
	c.Service = *s.Service.Clone()
	c.SendLag = *s.SendLag.Clone()
	c.SendEarly = *s.SendEarly.Clone()
	c.ConnectTime = *s.ConnectTime.Clone()
	c.FirstByte = *s.FirstByte.Clone()
	c.LeftOverBound = *s.LeftOverBound.Clone()
	if s.Corrected != nil {
		c.Corrected = s.Corrected.Clone()
	}
	if s.Failed != nil {
		c.Failed = make(map[string]*Dist, len(s.Failed))
		for k, d := range s.Failed {
			if d != nil {
				c.Failed[k] = d.Clone()
			}
		}
	}
	c.Timeline = slices.Clone(s.Timeline)
	c.Intervals = slices.Clone(s.Intervals) // immutable: a shallow copy is deep
	return &c
}

// Check verifies the identities a finished phase's Summary must satisfy
// and returns every violation joined, or nil:
//
//	Requests == OK + Errors + Cancelled − CancelledUnsent           (one outcome per request)
//	Arrivals == Requests + Dropped + CancelledUnsent + LeftOverUnsent (nothing silently lost)
//	LeftOverBound holds LeftOver() samples; DroppedLate ≤ Dropped; GoAwayRetries ≤ Requests
//	Errors == Σ ErrorsByClass == Σ ErrorsByCode
//	Timeouts == ErrorsByClass["timeout"]
//	CancelledUnsent + CancelledAtEnd ≤ Cancelled, Responded ≤ Requests,
//	Reconnects ≤ ConnectionsOpened
//	Response and Service hold OK samples; Failed[c] holds ErrorsByClass[c]
//	Σ Timeline OK == OK and Σ Timeline Errors == Errors
//	Elapsed, LastSent, LastDone ≥ 0; LastDone ≥ the start of the last
//	timeline second, and of the last interval, holding a completion
//	Corrected (when present) holds at least OK samples
//	Intervals (when present) have one length, are sorted by start without
//	overlap, and hold OK samples in all
func (s *Summary) Check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, c := range []struct {
		name string
		v    int64
	}{
		{"arrivals", s.Arrivals}, {"requests", s.Requests}, {"ok", s.OK}, {"errors", s.Errors},
		{"dropped", s.Dropped}, {"cancelled", s.Cancelled}, {"cancelled_unsent", s.CancelledUnsent},
		{"cancelled_at_end", s.CancelledAtEnd}, {"cancelled_thinking", s.CancelledThinking}, {"interrupted_thinking", s.InterruptedThinking}, {"left_over_unsent", s.LeftOverUnsent}, {"dropped_late", s.DroppedLate},
		{"timeouts", s.Timeouts}, {"late", s.Late}, {"unknown_id", s.UnknownID}, {"duplicate_id", s.DuplicateID}, {"connections_opened", s.ConnectionsOpened},
		{"reconnects", s.Reconnects}, {"goaway_retries", s.GoAwayRetries}, {"connect_failures", s.ConnectFailures}, {"responded", s.Responded},
	} {
		if c.v < 0 {
			bad("%s is negative: %d", c.name, c.v)
		}
	}
	for _, c := range []struct {
		name string
		v    time.Duration
	}{{"elapsed_ns", s.Elapsed}, {"last_sent_ns", s.LastSent}, {"last_done_ns", s.LastDone}} {
		if c.v < 0 {
			bad("%s is negative: %d", c.name, c.v)
		}
	}
	// The latest completion is no earlier than the start of the last
	// second of the timeline, and of the last interval, that holds one.
	for k := len(s.Timeline) - 1; k >= 0; k-- {
		if b := s.Timeline[k]; b.OK+b.Errors != 0 {
			if at := time.Duration(k) * time.Second; s.LastDone < at {
				bad("last_done_ns %d is before second %d of the timeline, which holds completions", s.LastDone, k)
			}
			break
		}
	}
	if n := len(s.Intervals); n > 0 && s.LastDone < s.Intervals[n-1].Start {
		bad("last_done_ns %d is before the last interval's start %d", s.LastDone, s.Intervals[n-1].Start)
	}
	if s.Requests != s.OK+s.Errors+s.Cancelled-s.CancelledUnsent {
		bad("requests %d != ok %d + errors %d + cancelled %d - cancelled_unsent %d", s.Requests, s.OK, s.Errors, s.Cancelled, s.CancelledUnsent)
	}
	if s.Arrivals != s.Requests+s.Dropped+s.CancelledUnsent+s.LeftOverUnsent {
		bad("arrivals %d != requests %d + dropped %d + cancelled_unsent %d + left_over_unsent %d", s.Arrivals, s.Requests, s.Dropped, s.CancelledUnsent, s.LeftOverUnsent)
	}
	if n := s.LeftOverBound.Count(); n != s.LeftOver() {
		bad("left-over bounds hold %d samples, left over is %d", n, s.LeftOver())
	}
	if s.DroppedLate > s.Dropped {
		bad("dropped_late %d > dropped %d", s.DroppedLate, s.Dropped)
	}
	if n := sumCounts(s.ErrorsByClass); n != s.Errors {
		bad("errors %d != Σ errors by class %d", s.Errors, n)
	}
	if n := sumCounts(s.ErrorsByCode); n != s.Errors {
		bad("errors %d != Σ errors by code %d", s.Errors, n)
	}
	if n := s.ErrorsByClass[string(drivers.Timeout)]; n != s.Timeouts {
		bad("timeouts %d != errors of class timeout %d", s.Timeouts, n)
	}
	if s.CancelledUnsent+s.CancelledAtEnd > s.Cancelled {
		bad("cancelled_unsent %d + cancelled_at_end %d > cancelled %d", s.CancelledUnsent, s.CancelledAtEnd, s.Cancelled)
	}
	if s.CancelledThinking > s.CancelledAtEnd {
		bad("cancelled_thinking %d > cancelled_at_end %d", s.CancelledThinking, s.CancelledAtEnd)
	}
	if s.InterruptedThinking > s.Cancelled-s.CancelledUnsent-s.CancelledAtEnd {
		bad("interrupted_thinking %d > cancelled %d − cancelled_unsent %d − cancelled_at_end %d", s.InterruptedThinking, s.Cancelled, s.CancelledUnsent, s.CancelledAtEnd)
	}
	if s.Responded > s.Requests {
		bad("responded %d > requests %d", s.Responded, s.Requests)
	}
	if s.GoAwayRetries > s.Requests {
		bad("goaway_retries %d > requests %d", s.GoAwayRetries, s.Requests)
	}
	if s.Reconnects > s.ConnectionsOpened {
		bad("reconnects %d > connections_opened %d", s.Reconnects, s.ConnectionsOpened)
	}
	if n := s.Response.Count(); n != s.OK {
		bad("response distribution holds %d samples, ok is %d", n, s.OK)
	}
	if n := s.Service.Count(); n != s.OK {
		bad("service distribution holds %d samples, ok is %d", n, s.OK)
	}
	for _, c := range slices.Sorted(maps.Keys(s.Failed)) {
		if d := s.Failed[c]; d != nil && d.Count() != s.ErrorsByClass[c] {
			bad("failed[%s] holds %d samples, errors of class %s are %d", c, d.Count(), c, s.ErrorsByClass[c])
		}
	}
	for _, c := range slices.Sorted(maps.Keys(s.ErrorsByClass)) {
		if n := s.ErrorsByClass[c]; n > 0 && s.Failed[c] == nil {
			bad("failed[%s] missing for %d errors", c, n)
		}
	}
	var tok, terr int64
	for _, x := range s.Timeline {
		tok += x.OK
		terr += x.Errors
	}
	if tok != s.OK || terr != s.Errors {
		bad("timeline holds %d ok and %d errors, want %d and %d", tok, terr, s.OK, s.Errors)
	}
	if s.Corrected != nil && s.Corrected.Count() < s.OK {
		bad("corrected distribution holds %d samples, fewer than ok %d", s.Corrected.Count(), s.OK)
	}
	if s.Intervals != nil {
		if err := checkIntervals(s.Intervals, s.OK); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func sumCounts(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func perSecond(n float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return n / d.Seconds()
}

// LeftOver is the number of arrivals that came due during the phase and
// were neither answered nor failed when its drain ran out: never sent
// (LeftOverUnsent) or cut in flight (CancelledAtEnd). Their response
// times are censored (LeftOverBound).
func (s *Summary) LeftOver() int64 { return s.LeftOverUnsent + s.CancelledAtEnd }

// CompletionWindow is the time in which the phase's requests completed:
// from its start to the later of its own end (Elapsed) and its last
// completion (LastDone, in the drain). The window of throughput, the
// completed rate, Little's law and the mean in-flight: completions of the
// drain are never divided by the phase's length alone.
func (s *Summary) CompletionWindow() time.Duration { return max(s.Elapsed, s.LastDone) }

// SendWindow is the time in which the phase's requests were sent: from its
// start to the later of its own end and its last send (an arrival that
// waited for a free connection can leave during the drain). The window of
// the achieved rate.
func (s *Summary) SendWindow() time.Duration { return max(s.Elapsed, s.LastSent) }

// Drain is how long after the phase's own end its last request completed;
// 0 when none completed after it.
func (s *Summary) Drain() time.Duration { return max(s.LastDone-s.Elapsed, 0) }

// Throughput is OK / CompletionWindow in responses per second
// (docs/design.md, "Throughput"): successful responses per second of the
// time in which they completed; failures never count. 0 when the window
// is empty.
func (s *Summary) Throughput() float64 { return perSecond(float64(s.OK), s.CompletionWindow()) }

// CompletedRate is Responded / CompletionWindow per second: every
// complete response, ok or not. It is λ in Little's law. 0 when the
// window is empty.
func (s *Summary) CompletedRate() float64 {
	return perSecond(float64(s.Responded), s.CompletionWindow())
}

// AchievedRate is Requests / SendWindow per second: requests actually
// sent, per second of the time in which they were sent. 0 when the window
// is empty.
func (s *Summary) AchievedRate() float64 { return perSecond(float64(s.Requests), s.SendWindow()) }

// ErrorRate is Errors / Requests, a fraction in [0, 1]; ok is false when
// no request was sent.
func (s *Summary) ErrorRate() (rate float64, ok bool) {
	if s.Requests <= 0 {
		return 0, false
	}
	return float64(s.Errors) / float64(s.Requests), true
}

// InflightMean is the mean number of requests in flight at the target
// over the completion window, exactly InflightSum / CompletionWindow (see
// InflightSum). 0 when the window is empty.
func (s *Summary) InflightMean() float64 {
	return perSecond(s.InflightSum.Seconds(), s.CompletionWindow())
}

// WaitingMean is the mean number of answered requests waiting in the
// client before their send, WaitSum / CompletionWindow: the part of
// Little's L that is not in flight at the target.
func (s *Summary) WaitingMean() float64 {
	return perSecond(s.WaitSum.Seconds(), s.CompletionWindow())
}

// UnansweredMean is the mean number of requests in flight at the target
// that never got a complete response, UnansweredInflightSum /
// CompletionWindow: in InflightMean, not in Little's L.
func (s *Summary) UnansweredMean() float64 {
	return perSecond(s.UnansweredInflightSum.Seconds(), s.CompletionWindow())
}

// MeanResponded is W of Little's law: the mean response time over the
// Responded requests, ResponseSum / Responded. ok is false when none
// responded.
func (s *Summary) MeanResponded() (w time.Duration, ok bool) {
	if s.Responded <= 0 {
		return 0, false
	}
	return s.ResponseSum / time.Duration(s.Responded), true
}

// LittleL is Little's law L = λ·W (J. D. C. Little, 1961): λ is the
// completion rate Responded / T and W the MEAN response time over the same
// responses (never a percentile; MeanResponded), with T the completion
// window (CompletionWindow), the same window as InflightMean's, so
//
//	L = (Responded / T) · (ResponseSum / Responded) = ResponseSum / T,
//
// the mean number of requests in the system. Compare it with InflightMean
// or with the connections of a closed model: exactly
// L = InflightMean + WaitingMean − UnansweredMean (up to requests cut
// short, whose in-flight time is clipped). 0 when T ≤ 0 or nothing
// responded (then L is undefined: check Responded before judging it).
func (s *Summary) LittleL() float64 {
	t := s.CompletionWindow()
	if t <= 0 || s.Responded <= 0 {
		return 0
	}
	return s.ResponseSum.Seconds() / t.Seconds()
}
