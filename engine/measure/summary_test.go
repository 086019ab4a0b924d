package measure

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
)

var okOutcome = drivers.Outcome{Class: drivers.OK, Responded: true, BytesIn: 100, BytesOut: 50}

// feed records a deterministic mix of outcomes: one arrival each, a few
// dropped, cancelled, errors of several classes and codes.
func feed(r *Recorder, rng *rand.Rand, n int) {
	for i := range n {
		r.AddArrivals(1)
		if rng.IntN(100) == 0 {
			r.AddDropped(1)
			continue
		}
		intended := time.Duration(i) * time.Millisecond
		sent := intended + time.Duration(rng.IntN(2000))*time.Microsecond
		done := sent + time.Duration(rng.ExpFloat64()*float64(5*time.Millisecond))
		o := okOutcome
		switch k := rng.IntN(100); {
		case k < 3:
			o = drivers.Outcome{Class: drivers.Status, Code: "503", Responded: true}
		case k < 5:
			o = drivers.Outcome{Class: drivers.Timeout}
		case k < 6:
			o = drivers.Outcome{Class: drivers.Reset, Code: "ECONNRESET", Dialed: 1, Connect: 300 * time.Microsecond}
		case k < 7:
			o = drivers.Outcome{Class: drivers.Cancelled}
		default:
			o.FirstByte = done - sent
		}
		r.Record(i, &Result{Seq: uint64(i + 1), Intended: intended, Sent: sent, Done: done, Outcome: o})
	}
}

func TestRecorderOutcomes(t *testing.T) {
	r := NewRecorder(3, Options{Duration: 10 * time.Second})
	rec := func(c drivers.Class, code string) {
		r.AddArrivals(1)
		r.Record(0, &Result{Done: time.Second, Outcome: drivers.Outcome{Class: c, Code: code}})
	}
	rec(drivers.OK, "")
	rec(drivers.Cancelled, "")
	rec(drivers.Cancelled, drivers.CodePhaseEnd) // cut in flight by the drain's end
	rec(drivers.Status, "503")
	rec(drivers.Status, "")
	rec(drivers.Timeout, "")
	rec("", "")
	r.AddLate(1)
	r.AddDropped(2)
	r.AddCancelled(3) // caught by an interrupt before they were sent
	r.LeftOver(1, 3*time.Second)
	r.LeftOver(2, 2*time.Second) // still waiting for a slot when the drain ran out
	r.AddArrivals(7)
	s := r.Summary(10 * time.Second)
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if s.OK != 1 || s.Cancelled != 5 || s.CancelledUnsent != 3 || s.Errors != 4 || s.Requests != 7 || s.Timeouts != 1 || s.Late != 1 || s.CancelledAtEnd != 1 {
		t.Errorf("ok %d cancelled %d (unsent %d) errors %d requests %d timeouts %d late %d", s.OK, s.Cancelled, s.CancelledUnsent, s.Errors, s.Requests, s.Timeouts, s.Late)
	}
	if s.LeftOver() != 3 || s.LeftOverUnsent != 2 || s.LeftOverBound.Count() != 3 {
		t.Errorf("left over %d (unsent %d), %d bounds; want 3 (2), 3", s.LeftOver(), s.LeftOverUnsent, s.LeftOverBound.Count())
	}
	if lo, _ := s.LeftOverBound.Min(); lo != time.Second {
		t.Errorf("smallest left-over bound %v, want 1s (the request cut at 1 s)", lo)
	}
	// Every arrival of a phase that was not interrupted is ok, an error,
	// dropped or left over; the interrupt's cancellations come on top.
	if s.Arrivals != s.OK+s.Errors+s.Dropped+s.LeftOver()+(s.Cancelled-s.CancelledAtEnd) {
		t.Errorf("arrivals %d != ok + errors + dropped + left over + cancelled by the interrupt", s.Arrivals)
	}
	wantCode := map[string]int64{"503": 1, "status": 1, "timeout": 1, "unclassified": 1}
	for k, v := range wantCode {
		if s.ErrorsByCode[k] != v {
			t.Errorf("errors by code %v, want %v", s.ErrorsByCode, wantCode)
		}
	}
	if s.ErrorsByClass["status"] != 2 || s.Failed["status"].Count() != 2 {
		t.Errorf("status class %d, failed dist %d", s.ErrorsByClass["status"], s.Failed["status"].Count())
	}
	if s.Throughput() != 0.1 {
		t.Errorf("throughput %v, want 0.1/s (failures never count)", s.Throughput())
	}
}

func TestSummaryCheck(t *testing.T) {
	r := NewRecorder(4, Options{})
	feed(r, rand.New(rand.NewPCG(1, 1)), 5000)
	s := r.Summary(5 * time.Second)
	if err := s.Check(); err != nil {
		t.Fatalf("valid summary: %v", err)
	}
	for _, c := range []struct {
		name   string
		break_ func(*Summary)
		want   string
	}{
		{"lost request", func(s *Summary) { s.Requests++ }, "requests"},
		{"lost arrival", func(s *Summary) { s.Arrivals-- }, "arrivals"},
		{"class sum", func(s *Summary) { s.ErrorsByClass["status"]++ }, "by class"},
		{"code sum", func(s *Summary) { s.ErrorsByCode["503"]-- }, "by code"},
		{"timeouts", func(s *Summary) { s.Timeouts++ }, "timeouts"},
		{"cancelled at end", func(s *Summary) { s.CancelledAtEnd = s.Cancelled + 1 }, "cancelled_at_end"},
		{"unsent", func(s *Summary) { s.CancelledUnsent++ }, "cancelled_unsent"},
		{"left over", func(s *Summary) { s.LeftOverUnsent++ }, "left_over_unsent"},
		{"left-over bound", func(s *Summary) { s.LeftOverBound.record(time.Second) }, "left-over bounds"},
		{"dropped late", func(s *Summary) { s.DroppedLate = s.Dropped + 1 }, "dropped_late"},
		{"histogram", func(s *Summary) { s.Response.record(time.Second) }, "response distribution"},
		{"timeline", func(s *Summary) { s.Timeline[0].OK++ }, "timeline"},
		{"negative", func(s *Summary) { s.Late = -1 }, "late is negative"},
	} {
		b := s.Clone()
		c.break_(b)
		err := b.Check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Check() = %v, want it to mention %q", c.name, err, c.want)
		}
	}
}

func TestSummaryMergeEqualsOneRecorder(t *testing.T) {
	one := NewRecorder(2, Options{ExpectedInterval: 2 * time.Millisecond})
	a := NewRecorder(3, Options{ExpectedInterval: 2 * time.Millisecond})
	b := NewRecorder(1, Options{ExpectedInterval: 2 * time.Millisecond})
	feed(one, rand.New(rand.NewPCG(9, 9)), 3000)
	// The same stream of outcomes split in two: a gets the first 2000, b
	// the last 1000 (rng advanced past a's part).
	feed(a, rand.New(rand.NewPCG(9, 9)), 2000)
	rng := rand.New(rand.NewPCG(9, 9))
	feed(NewRecorder(1, Options{}), rng, 2000)
	feed(b, rng, 1000)
	want := one.Summary(3 * time.Second)
	got := a.Summary(3 * time.Second)
	got.Merge(b.Summary(time.Second))
	if err := got.Check(); err != nil {
		t.Fatal(err)
	}
	if got.Requests != want.Requests || got.OK != want.OK || got.Errors != want.Errors || got.Dropped != want.Dropped ||
		got.InflightSum != want.InflightSum || got.Elapsed != 3*time.Second {
		t.Errorf("merged counters differ: %+v vs %+v", got.Requests, want.Requests)
	}
	// The latencies do not depend on when a request was intended, so the
	// merged distributions equal the single recorder's.
	assertSameDist(t, "service", &got.Service, &want.Service)
	assertSameDist(t, "corrected", got.Corrected, want.Corrected)
	assertSameDist(t, "failed status", got.Failed["status"], want.Failed["status"])
}

func TestSummaryMergeIsLossless(t *testing.T) {
	parts := make([]*Summary, 3)
	whole := newSummary()
	for i := range parts {
		r := NewRecorder(2, Options{})
		feed(r, rand.New(rand.NewPCG(uint64(i), 5)), 1500)
		parts[i] = r.Summary(2 * time.Second)
		whole.Merge(parts[i])
	}
	// Merge order does not matter.
	rev := newSummary()
	for i := len(parts) - 1; i >= 0; i-- {
		rev.Merge(parts[i])
	}
	bw, _ := json.Marshal(whole)
	br, _ := json.Marshal(rev)
	if string(bw) != string(br) {
		t.Error("merge depends on order")
	}
	if err := whole.Check(); err != nil {
		t.Fatal(err)
	}
	var ok int64
	for _, p := range parts {
		ok += p.OK
	}
	if whole.OK != ok || whole.Response.Count() != ok {
		t.Errorf("ok %d (dist %d), want %d", whole.OK, whole.Response.Count(), ok)
	}
	// Self-merge doubles.
	d := parts[0].Clone()
	d.Merge(d)
	if d.OK != 2*parts[0].OK || d.Check() != nil {
		t.Errorf("self-merge: ok %d, check %v", d.OK, d.Check())
	}
}

func TestSummaryJSONRoundTrip(t *testing.T) {
	r := NewRecorder(4, Options{ExpectedInterval: time.Millisecond, Duration: 5 * time.Second})
	feed(r, rand.New(rand.NewPCG(2, 3)), 4000)
	s := r.Summary(4 * time.Second)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Check(); err != nil {
		t.Fatal(err)
	}
	assertSameDist(t, "response", &back.Response, &s.Response)
	assertSameDist(t, "service", &back.Service, &s.Service)
	assertSameDist(t, "corrected", back.Corrected, s.Corrected)
	assertSameDist(t, "first byte", &back.FirstByte, &s.FirstByte)
	for c, d := range s.Failed {
		assertSameDist(t, "failed "+c, back.Failed[c], d)
	}
	if back.Requests != s.Requests || back.ErrorsByCode["503"] != s.ErrorsByCode["503"] || len(back.Timeline) != len(s.Timeline) {
		t.Error("counters differ after round trip")
	}
	b2, _ := json.Marshal(&back)
	if string(b) != string(b2) {
		t.Error("re-encoding differs")
	}
	if l1, l2 := s.LittleL(), back.LittleL(); l1 != l2 {
		t.Errorf("littleL %v vs %v", l1, l2)
	}
}

func TestDerivedMetrics(t *testing.T) {
	// Two connections, closed model: each request takes 100 ms, back to back
	// for 1 s. Mean in flight is 2, and so is L = λ·W.
	r := NewRecorder(2, Options{})
	for c := range 2 {
		for i := range 10 {
			at := time.Duration(i) * 100 * time.Millisecond
			r.AddArrivals(1)
			r.Record(c, &Result{Intended: at, Sent: at, Done: at + 100*time.Millisecond, Outcome: okOutcome})
		}
	}
	s := r.Summary(time.Second)
	if got := s.InflightMean(); got != 2 {
		t.Errorf("inflight mean %v, want 2", got)
	}
	if l := s.LittleL(); l != 2 {
		t.Errorf("littleL %v, want 2", l)
	}
	if s.Throughput() != 20 || s.CompletedRate() != 20 || s.AchievedRate() != 20 {
		t.Errorf("rates %v %v %v, want 20/s", s.Throughput(), s.CompletedRate(), s.AchievedRate())
	}
	if er, ok := s.ErrorRate(); !ok || er != 0 {
		t.Errorf("error rate %v %v", er, ok)
	}
	if w, _ := s.MeanResponded(); w != 100*time.Millisecond {
		t.Errorf("W = %v", w)
	}
	empty := NewRecorder(1, Options{}).Summary(0)
	if _, ok := empty.ErrorRate(); ok {
		t.Error("error rate of no requests is ok")
	}
	if l := empty.LittleL(); l != 0 {
		t.Errorf("littleL of nothing %v, want 0", l)
	}
	if empty.Throughput() != 0 || empty.InflightMean() != 0 {
		t.Error("rates over zero elapsed are not 0")
	}
	if len(s.Timeline) != 2 || s.Timeline[0].OK != 18 || s.Timeline[1].OK != 2 {
		t.Errorf("timeline %+v", s.Timeline)
	}
	if m, _ := s.Timeline[0].Mean(); m != 100*time.Millisecond {
		t.Errorf("second 0 mean %v", m)
	}
}

func TestTimelineBounded(t *testing.T) {
	r := NewRecorder(1, Options{Duration: 2500 * time.Millisecond})
	for _, done := range []time.Duration{-time.Second, 0, 1500 * time.Millisecond, 2900 * time.Millisecond, time.Hour} {
		r.AddArrivals(1)
		r.Record(0, &Result{Done: done, Outcome: okOutcome})
	}
	s := r.Summary(3 * time.Second)
	if len(s.Timeline) != 3 || s.Timeline[0].OK != 2 || s.Timeline[1].OK != 1 || s.Timeline[2].OK != 2 {
		t.Errorf("timeline %+v, want 3 seconds holding 2, 1, 2", s.Timeline)
	}
	if err := s.Check(); err != nil {
		t.Error(err)
	}
}

func TestRecorderConcurrent(t *testing.T) {
	const workers, each = 32, 5000
	r := NewRecorder(8, Options{ExpectedInterval: time.Millisecond})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 0))
			for i := range each {
				r.AddArrivals(1)
				o := okOutcome
				if i%10 == 0 {
					o = drivers.Outcome{Class: drivers.EOF, Dialed: 1}
				}
				d := time.Duration(rng.IntN(3000)) * time.Microsecond
				r.Record(w, &Result{Done: d, Outcome: o})
				if i%1000 == 0 {
					_ = r.Summary(time.Second) // progress reads while recording
				}
			}
		}()
	}
	wg.Wait()
	s := r.Summary(time.Second)
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if s.Requests != workers*each || s.Errors != workers*each/10 || s.Reconnects != s.Errors {
		t.Errorf("requests %d errors %d reconnects %d", s.Requests, s.Errors, s.Reconnects)
	}
}

func TestRecordAnyShardIndex(t *testing.T) {
	r := NewRecorder(0, Options{}) // at least one shard
	for _, sh := range []int{-1, 0, 7, math.MaxInt, math.MinInt} {
		r.AddArrivals(1)
		r.Record(sh, &Result{Outcome: okOutcome})
	}
	r.Record(0, nil)
	if s := r.Summary(time.Second); s.OK != 5 || s.Check() != nil {
		t.Errorf("ok %d, check %v", s.OK, s.Check())
	}
}

func TestSummaryJSONRejectsBadDist(t *testing.T) {
	var s Summary
	err := json.Unmarshal([]byte(`{"response":{"count":5}}`), &s)
	if err == nil || !strings.Contains(err.Error(), "histogram holds 0 samples") {
		t.Errorf("err %v", err)
	}
}

func BenchmarkRecord(b *testing.B) {
	r := NewRecorder(1, Options{Duration: time.Minute})
	res := &Result{Intended: time.Millisecond, Sent: 2 * time.Millisecond, Done: 7 * time.Millisecond, Outcome: okOutcome}
	res.Outcome.FirstByte = 3 * time.Millisecond
	r.Record(0, res) // first touch of the lazily allocated first-byte histogram
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		res.Done = time.Duration(i%50_000) * time.Millisecond
		r.Record(0, res)
	}
}

func BenchmarkRecordParallel(b *testing.B) {
	r := NewRecorder(64, Options{Duration: time.Minute})
	var next sync.Mutex
	shard := 0
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		next.Lock()
		sh := shard
		shard++
		next.Unlock()
		res := &Result{Done: 7 * time.Millisecond, Outcome: okOutcome}
		for pb.Next() {
			r.Record(sh, res)
		}
	})
}

func BenchmarkSummary(b *testing.B) {
	r := NewRecorder(16, Options{})
	feed(r, rand.New(rand.NewPCG(1, 1)), 100000)
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Summary(time.Minute)
	}
}

// TestIssue12_RedactBeforeShortening: an error example is redacted before
// it is cut to 300 bytes; cut first, a secret that straddles the cut kept
// its front part (it no longer matched whole).
func TestIssue12_RedactBeforeShortening(t *testing.T) {
	const secret = "K7QZXW3MPV2RJT6NYH4BCL5DFG8SAE9UKQ7ZXW3MPV2RJT"
	msg := strings.Repeat("x", 280) + secret + " and the rest of a long message"
	redact := func(s string) string { return strings.ReplaceAll(s, secret, "[redacted]") }
	r := NewRecorder(1, Options{Duration: time.Second, Redact: redact})
	r.Record(0, &Result{Done: time.Millisecond, Outcome: drivers.Outcome{Class: drivers.Status, Code: "502", Err: errors.New(msg)}})
	got := r.Summary(time.Second).ErrorExamples["502"]
	if strings.Contains(got, secret[:4]) || !strings.Contains(got, "[redacted]") {
		t.Errorf("example %q keeps part of the secret", got)
	}
	if len(got) > 300+len("…") {
		t.Errorf("example of %d bytes, want at most 300 and the cut mark", len(got))
	}
}

// Requests sent again after a GOAWAY are counted once each among the
// requests, with their second send's outcome, and summed apart in
// goaway_retries; merging sums them; more than the requests is refused.
func TestRecorderGoAwayRetries(t *testing.T) {
	r := NewRecorder(2, Options{Duration: time.Second})
	for i, o := range []drivers.Outcome{
		{Class: drivers.OK, Responded: true, Resent: 1},
		{Class: drivers.Reset, Code: "goaway", Resent: 1},
		{Class: drivers.OK, Responded: true},
	} {
		r.AddArrivals(1)
		r.Record(i, &Result{Seq: uint64(i + 1), Sent: time.Millisecond, Done: 2 * time.Millisecond, Outcome: o})
	}
	s := r.Summary(time.Second)
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if s.GoAwayRetries != 2 || s.Requests != 3 || s.OK != 2 || s.Errors != 1 {
		t.Errorf("goaway_retries %d requests %d ok %d errors %d; want 2, 3, 2, 1", s.GoAwayRetries, s.Requests, s.OK, s.Errors)
	}
	m := s.Clone()
	if err := m.Merge(s); err != nil {
		t.Fatal(err)
	}
	if m.GoAwayRetries != 4 {
		t.Errorf("merged goaway_retries %d, want 4", m.GoAwayRetries)
	}
	s.GoAwayRetries = s.Requests + 1
	if err := s.Check(); err == nil || !strings.Contains(err.Error(), "goaway_retries") {
		t.Errorf("Check of more retries than requests: %v", err)
	}
}

// TestRecorderFirstByteWhenAllThreeEqual: a request whose first byte,
// service time and response time are one value (a response in one read,
// the closed model) is booked once for all three, and each summary
// distribution still counts it: the same counts, sums and extremes as
// the requests recorded one by one into each distribution.
func TestRecorderFirstByteWhenAllThreeEqual(t *testing.T) {
	r := NewRecorder(2, Options{})
	var resp, svc, fb Dist
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 3000 {
		sent := time.Duration(i) * time.Millisecond
		intended := sent
		if i%3 == 1 {
			intended -= time.Duration(rng.IntN(500)) * time.Microsecond // sent late: response ≠ service
		}
		d := time.Duration(1+rng.IntN(5000)) * time.Microsecond
		o := okOutcome
		o.FirstByte = d
		if i%5 == 2 {
			o.FirstByte = d / 2 // the body came in a later read
		}
		r.Record(i, &Result{Seq: uint64(i + 1), Intended: intended, Sent: sent, Done: sent + d, Outcome: o})
		resp.record(sent + d - intended)
		svc.record(d)
		fb.record(o.FirstByte)
	}
	s := r.Summary(3 * time.Second)
	for _, c := range []struct {
		name      string
		got, want *Dist
	}{{"response", &s.Response, &resp}, {"service", &s.Service, &svc}, {"first byte", &s.FirstByte, &fb}} {
		gmin, _ := c.got.Min()
		gmax, _ := c.got.Max()
		wmin, _ := c.want.Min()
		wmax, _ := c.want.Max()
		gp99, _ := c.got.Percentile(99)
		wp99, _ := c.want.Percentile(99)
		if c.got.Count() != c.want.Count() || c.got.Sum() != c.want.Sum() || gmin != wmin || gmax != wmax || gp99 != wp99 {
			t.Errorf("%s: n %d sum %v min %v max %v; want n %d sum %v min %v max %v", c.name,
				c.got.Count(), c.got.Sum(), gmin, gmax, c.want.Count(), c.want.Sum(), wmin, wmax)
		}
	}
}
