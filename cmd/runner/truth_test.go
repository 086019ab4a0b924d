package main

// Truth tests (issue 3): the reference target's truth knobs make its
// behaviour known in closed form, so what runner measures is compared
// with the analytical answer, and a closed-model run of the same target
// is shown to report far less (coordinated omission) and to say so.
//
// Runs go as separate processes (fcExec) against spawned targets, over
// loopback. The target's waits end at absolute instants on the precise
// clock, exact to microseconds; what is noisy on two shared cores is the
// client's side (dispatch and reading of responses, under -race), which
// only ever adds time. So the tolerances are asymmetric: a little below
// the truth (the HdrHistogram's bucket, 3 significant digits: ≤ 0.1 %),
// and a few milliseconds or percent above it.

import (
	"math"
	"slices"
	"testing"
)

// truthMs reads a headline response-time metric (ms) of a phase result.
func truthMs(t *testing.T, ph map[string]any, name string) float64 {
	t.Helper()
	return jsonNum(t, ph, "metrics", "response_time", name+"_ms")
}

// truthWarned reports whether the run's JSON carries a warning of code
// for phase.
func truthWarned(t *testing.T, r *fcRun, code, phase string) bool {
	t.Helper()
	ws, _ := readJSON(t, r.json)["warnings"].([]any)
	for _, w := range ws {
		m, _ := w.(map[string]any)
		if m["code"] == code && m["phase"] == phase {
			return true
		}
	}
	return false
}

// truthCheck fails unless truth − below ≤ got ≤ truth + above (all ms).
func truthCheck(t *testing.T, what string, got, truth, below, above float64) {
	t.Helper()
	if got < truth-below || got > truth+above {
		t.Errorf("%s = %.3f ms, want %.3f ms (−%.3g/+%.3g)", what, got, truth, below, above)
	} else {
		t.Logf("%s = %.3f ms, truth %.3f ms", what, got, truth)
	}
}

// queueChain returns R_k = δ + 10 + 3.333·k ms, the response time of
// request k of n of a single 10 ms worker offered 150/s (see
// TestTruth_QueueGrowsLinearly), with the chain's origin δ read from the
// run. Every response is R_k + δ plus the time its own reading took on
// the client (≥ 0); δ, common to all, is how late the first request
// reached the worker. The exact min (R_0) and max (R_{n−1}) each give δ
// plus one reading delay: the smaller is the estimate (a reading delay of
// the first response alone would otherwise shift the whole chain). It
// must lie in [−1, maxLate] ms.
func queueChain(t *testing.T, ph map[string]any, n int, maxLate float64) func(k int) float64 {
	t.Helper()
	R := func(k int) float64 { return 10 + float64(k)*10/3.0 }
	lo, hi := truthMs(t, ph, "min"), truthMs(t, ph, "max")
	delta := math.Min(lo-R(0), hi-R(n-1))
	t.Logf("min = %.3f ms, max = %.3f ms: the chain started %.3f ms after the first intended arrival", lo, hi, delta)
	if delta < -1 || delta > maxLate {
		t.Fatalf("chain origin %.3f ms, want in [−1, %.0f] ms: the first request's response time is S = 10 ms plus how late it reached the target", delta, maxLate)
	}
	return func(k int) float64 { return delta + R(k) }
}

// nearestRank is the nearest-rank percentile of n values given by the
// k-th smallest (k from 0): rank ⌈p/100·n⌉.
func nearestRank(p float64, n int, kth func(k int) float64) float64 {
	rank := int(math.Ceil(p / 100 * float64(n)))
	return kth(rank - 1)
}

// TestTruth_QueueGrowsLinearly: a single worker with service time
// S = 10 ms (capacity 100/s) offered 150/s for 2 s, uniform arrivals.
//
// Analytical value: arrival k (k = 0…299) is due at k/150 s. The worker
// is never idle once it starts (each arrival comes before the previous
// completion, since k·6.67 ms < k·10 ms), so request k completes at
// (k+1)·10 ms and its response time is R_k = (k+1)·10 − k·20/3 ms =
// 10 + 3.333·k ms: the queue grows linearly (50 more per second), and
// R_k rises with k, so the nearest-rank pN of the 300 samples is R at
// k = ⌈N/100·300⌉ − 1: p50 = R_149 = 506.667 ms, p90 = R_269 = 906.667
// ms, p99 = R_296 = 996.667 ms, max = R_299 = 1006.667 ms, mean =
// 10 + 3.333·149.5 = 508.333 ms.
//
// The queue forms at the target, not in the client: at most ⌈300/3⌉ + 1
// = 101 requests are ever outstanding (arrivals minus completions), so
// 128 connections always have a free one; the timeout (5 s) outlasts the
// last completion at 3 s, so the grace drains every request.
//
// Origin: the chain starts when the first arrival reaches the target. If
// it reaches it δ late (a cold connection, a descheduled client, the race
// detector on a busy CI machine: 17 ms was seen), the single worker starts
// δ late and every response time shifts by δ, which is the honest
// measurement of that run. The first response is the smallest (R rises
// with k), so δ = min − R_0 is read from the run itself; it must lie in
// [−1, 40] ms, and the percentiles are checked against R_k + δ.
//
// Tolerance: −1 ms (histogram bucket) / +6 ms or +1 % on top of δ: each
// response is read by a client on a busy core; nothing can make it early.
// Below, also the run's own send lag p99: δ read from the fastest
// response includes how late the client read that one.
//
// Naive measurements: service time (send to completion) is the same here
// because the client never waits for a connection; the closed model at 4
// connections, though, sees a queue of at most 4: every response time is
// ≈ 4·S = 40 ms, p99 ≈ 40 ms, under 1/24 of the truth. It must report
// less than 1/5 of the open-model p99, and carry the closed-model warning.
//
// The coordinated-omission correction (expected_rate: 150/s, so one
// request per 4/150 s = 26.7 ms per connection) cannot recover this
// truth either, and the test asserts that it does not pretend to: it adds
// the requests a slow response held back (one sample of 40 − 26.7 = 13.3
// ms per response), which models a stall, not a queue that grows for as
// long as the overload lasts. Its p99 stays ≈ 40 ms, under 1/5 of the
// truth. (Issue 3 expected the corrected histogram to land near the
// open-model truth here; that holds for a stall, see
// TestTruth_PeriodicStallCorrected, and not for sustained overload,
// which only an open model measures.)
func TestTruth_QueueGrowsLinearly(t *testing.T) {
	const yaml = `version: 1
name: truth-queue
target: {serve: http, args: ["--workers", "1", "--delay", "10ms"]}
driver: {http: {path: /q, timeout: 5s}}
phases:
  - name: open
    open: {rate: 150/s, connections: 128, on_saturation: queue}
    duration: 2s
  - name: closed
    closed: {connections: 4, expected_rate: 150/s}
    duration: 2s
`
	r := fcRunScenario(t, "truth-queue", yaml, 0)
	phs := r.phases(t)
	if len(phs) != 2 {
		t.Fatalf("%d phase results, want 2", len(phs))
	}
	open, closed := phs[0], phs[1]
	for _, k := range []string{"arrivals", "requests", "ok"} {
		if got := fcCount(t, open, k); got != 300 {
			t.Errorf("open: %s = %d, want 300", k, got)
		}
	}
	if got := fcCount(t, open, "dropped"); got != 0 {
		t.Errorf("open: dropped = %d, want 0", got)
	}
	const ms = 1.0
	R := queueChain(t, open, 300, 40*ms)
	// The origin read from the fastest response holds the client's own
	// delay in reading it, which the others need not share: below, the
	// run's own client-side scheduling delay (its send lag's p99) widens
	// the −1 ms bucket tolerance.
	below := 1*ms + jsonNum(t, open, "metrics", "send_lag", "p99_ms")
	for _, c := range []struct {
		name string
		p    float64
	}{{"p50", 50}, {"p90", 90}, {"p99", 99}} {
		truth := nearestRank(c.p, 300, R)
		truthCheck(t, "open "+c.name, truthMs(t, open, c.name), truth, below, math.Max(6*ms, truth/100))
	}
	truthCheck(t, "open max", truthMs(t, open, "max"), R(299), below, 10*ms)
	truthCheck(t, "open mean", truthMs(t, open, "mean"), R(0)+149.5*10/3.0, below, 6*ms)

	truthP99 := nearestRank(99, 300, func(k int) float64 { return 10 + float64(k)*10/3.0 })
	cp99 := truthMs(t, closed, "p99")
	t.Logf("closed p99 = %.3f ms (truth of the open model %.3f ms)", cp99, truthP99)
	if cp99 >= truthP99/5 {
		t.Errorf("closed model p99 = %.3f ms, want < %.3f ms (1/5 of the open-model truth)", cp99, truthP99/5)
	}
	corr := jsonNum(t, closed, "metrics", "corrected_response_time", "p99_ms")
	t.Logf("closed CO-corrected p99 = %.3f ms", corr)
	if corr < cp99 || corr >= truthP99/5 {
		t.Errorf("closed CO-corrected p99 = %.3f ms, want in [%.3f, %.3f) ms: the correction adds samples below each response, it cannot model the growing queue", corr, cp99, truthP99/5)
	}
	if !truthWarned(t, r, "closed-model", "closed") {
		t.Error("the closed phase carries no closed-model warning in the JSON")
	}
	if truthWarned(t, r, "closed-model", "open") {
		t.Error("the open phase carries a closed-model warning")
	}
}

// TestTruth_PeriodicStall: a target that freezes for D = 500 ms every
// P = 2 s, offered 200/s (uniform) for 4 s over only 10 connections.
//
// The stall clock starts at the target's first counted request
// (--stall-origin first), which is the phase's first arrival: a spawned
// target starts listening well before the phase, and a stall that a
// phase's start or end cut in two would change the truth. So the stalls
// are [0, 0.5 s) and [2 s, 2.5 s) of the phase, both wholly inside it,
// and the last 1.5 s of the phase are calm, so every waiting arrival has
// been sent and answered long before the phase's time is up.
//
// Analytical value: an arrival at t inside a stall [s, s+D) is answered
// at s+D, so it waits s+D−t; an arrival outside a stall waits nothing.
// A quarter of the arrivals (D/P) wait, uniformly between 0 and 500 ms:
// P(R > x) = 0.25·(1 − x/500 ms). Exactly, over the 800 arrivals at 5j ms
// (j = 0…799), the 200 in the stalls wait 500 − (5j mod 2000) ms, two of
// each value 5, 10, …, 500 ms, and the other 600 wait 0, so the nearest
// ranks land on: p90 = the 720th smallest = 300 ms, p95 (760th) = 400
// ms, p99 (792nd) = 480 ms, and the mean is 2·5·(1+…+100)/800 = 63.125 ms.
//
// It must hold with only 10 connections: during a stall the 10 are all
// held within 50 ms, and the next 90 arrivals wait at the client for a
// connection; their response time counts from their intended start, so
// waiting at the client is measured like waiting at the target.
//
// Tolerance: −1 % below (the histogram's bucket; the target never
// answers before the stall's end, nor the client before the target).
// Above, the analytical model drains the backlog instantly when a stall
// ends; the real client pushes the 90 waiting requests through 10
// connections at its own pace C, so the backlog's k-th request leaves
// about k/C after the stall's end. The rate is low and the backlog short
// so that this hardly matters even for a slow client (the test ran at
// 1,000/s over 50 connections before, and a busy core broke it: a backlog
// of 450): the allowances hold for C ≥ 1,000/s, under -race with one of
// the two cores taken by a busy loop:
//   - p99 is an arrival of a stall's first 5 ms, on the wire when the
//     stall began: +5 % (24 ms) for the reading of 10 responses at once;
//   - p95, the stall's 20th arrival, 10 deep in the backlog: 10/C ≤ 10 ms,
//     +5 % (20 ms);
//   - p90, the 40th arrival, 30 deep: 30/C ≤ 30 ms, +10 % (30 ms);
//   - the mean: each stall's backlog drains in 90/(C − 200/s) and adds
//     ½·90 times that to the sum of waits: 2·½·90²/(C − 200)/800 = 12.7 ms
//     at C = 1,000/s; +25 % (15.8 ms).
//
// And the stalls' origin: the stall clock starts when the first request
// reaches the target, δ after its intended start, so every stalled
// arrival waits δ more. δ is read from p99 (a stall's first arrivals),
// within p99's own allowance, and added to the others' (a quarter of it
// to the mean's); a run on a busy machine under -race saw δ ≈ 10 ms.
//
// Naive measurements: with latency counted from the actual send (service
// time, which the report shows apart), the 90 arrivals of each stall
// that waited for a connection report almost nothing: only the 20
// requests on the wire during the stalls (2.5 %) wait, so service p90 is
// a few ms: asserted below 1/10 of the truth. A closed model at 10
// connections sends only 10 requests into each stall, 20 slow samples
// among thousands: p99 ≈ 1 ms. It must report less than 1/10 of the
// open-model truth, and carry the closed-model warning.
func TestTruth_PeriodicStall(t *testing.T) {
	const yaml = `version: 1
name: truth-stall
target: {serve: http, args: ["--stall-every", "2s", "--stall-for", "500ms", "--stall-origin", "first"]}
driver: {http: {path: /s, timeout: 5s}}
phases:
  - name: open
    open: {rate: 200/s, connections: 10, on_saturation: queue}
    duration: 4s
  - name: closed
    closed: {connections: 10}
    duration: 4s
`
	// wait(k): the k-th smallest exact response time (k from 0), in ms.
	wait := func(k int) float64 {
		if k < 600 {
			return 0
		}
		return float64(5 * ((k-600)/2 + 1))
	}
	// A stall of the client itself while it drains a backlog moves a
	// percentile past its allowance now and then; a wrong rank or a
	// response time counted from the send does so on every run. So a run
	// out of range is repeated, twice at most, and the last one decides.
	var r *fcRun
	var open, closed map[string]any
	for attempt := 1; ; attempt++ {
		r = fcRunScenario(t, "truth-stall", yaml, 0)
		phs := r.phases(t)
		if len(phs) != 2 {
			t.Fatalf("%d phase results, want 2", len(phs))
		}
		open, closed = phs[0], phs[1]
		for _, k := range []string{"arrivals", "requests", "ok"} {
			if got := fcCount(t, open, k); got != 800 {
				t.Errorf("open: %s = %d, want 800", k, got)
			}
		}
		if got := fcCount(t, open, "dropped") + fcCount(t, open, "left_over_unsent"); got != 0 {
			t.Errorf("open: dropped + left over = %d, want 0", got)
		}
		type check struct {
			name                     string
			got, truth, below, above float64
		}
		// The stall clock starts when the first request reaches the
		// target, δ after its intended start (a busy machine under -race:
		// 10 ms was seen), and every stalled arrival then waits δ longer.
		// p99 is an arrival of a stall's first 5 ms, on the wire when the
		// stall began: δ is read from it (at most its own allowance, 24
		// ms), and the deeper percentiles and the mean are checked
		// against their truth moved by δ (the mean by a quarter of it:
		// a quarter of the arrivals stall).
		p99truth := nearestRank(99, 800, wait)
		delta := math.Min(math.Max(truthMs(t, open, "p99")-p99truth, 0), p99truth*0.05)
		var checks []check
		for _, c := range []struct {
			name       string
			p, allowed float64 // allowed: the fraction above the truth
			shift      float64
		}{{"p90", 90, 0.10, delta}, {"p95", 95, 0.05, delta}, {"p99", 99, 0.05, 0}} {
			truth := nearestRank(c.p, 800, wait)
			checks = append(checks, check{"open " + c.name, truthMs(t, open, c.name), truth, truth / 100, truth*c.allowed + c.shift})
		}
		checks = append(checks, check{"open mean", truthMs(t, open, "mean"), 63.125, 0.63, 63.125*0.25 + delta/4})
		t.Logf("attempt %d: the stalls began %.3f ms after the first intended arrival (read from p99)", attempt, delta)
		out := slices.ContainsFunc(checks, func(c check) bool { return c.got < c.truth-c.below || c.got > c.truth+c.above })
		if !out || attempt == 3 {
			for _, c := range checks {
				truthCheck(t, c.name, c.got, c.truth, c.below, c.above)
			}
			break
		}
		t.Logf("attempt %d out of range (a client stall?), again: %+v", attempt, checks)
	}
	sp90 := jsonNum(t, open, "metrics", "service_time", "p90_ms")
	t.Logf("open service-time p90 = %.3f ms (the naive reading; truth of p90 300 ms)", sp90)
	if sp90 >= 30 {
		t.Errorf("open service-time p90 = %.3f ms, want < 30 ms: only the requests on the wire wait at the target", sp90)
	}

	cp99 := truthMs(t, closed, "p99")
	t.Logf("closed p99 = %.3f ms, max %.3f ms (truth of the open model 480 ms)", cp99, truthMs(t, closed, "max"))
	if cp99 >= 48 {
		t.Errorf("closed model p99 = %.3f ms, want < 48 ms (1/10 of the open-model truth)", cp99)
	}
	if !truthWarned(t, r, "closed-model", "closed") {
		t.Error("the closed phase carries no closed-model warning in the JSON")
	}
}

// TestTruth_PeriodicStallCorrected: the stall of TestTruth_PeriodicStall
// (500 ms every 2 s) measured by a paced closed loop with the
// coordinated-omission correction: 10 connections each send a request,
// read the answer and think 10 ms, about 1000 req/s in all, declared as
// expected_rate: 1000/s (one request per 10 ms per connection). The phase
// lasts 3.5 s: two stalls (at 0 and 2 s, origin the first request), and
// its end is 0.5 s clear of the third, so no request is caught in it.
//
// Plain closed-model reading: during a stall only the 10 requests on the
// wire wait (20 slow samples among ≈ 2500), so p95 and p99 are ≈ 1 ms,
// 1/400 of the truth (p95 asserted below 1/10 of it; p99 is logged: on a
// loaded machine the loop paces slower and 20 slow samples can pass 1 %).
//
// Corrected: each stuck response of v ≈ 490–500 ms adds the ⌊v/10⌋ − 1
// requests its connection would have sent meanwhile, at v − 10, v − 20,
// … ms, so each stall contributes ≈ 10 × 50 samples uniform over 0…500
// ms, the open model's 500 waits per stall: ≈ 1000 slow samples in all,
// besides the calm ones, n − 20 of the n requests. The slow fraction is
// f = 1000 / (1000 + n − 20) and P(R > x) = f·(1 − x/V), V the stuck
// responses' wait (500 ms), so the truth of the corrected pq is
// V·(1 − (1 − q)/f): at n = 3000 (a loop pacing at the declared rate over
// 4 s) p90 300, p95 400, p99 480 ms, the open model's. Deriving f from the
// measured n keeps the truth exact when think-time sleeps overshoot or the
// machine is loaded (fewer calm samples, a larger f). V is the plain
// maximum, the longest stuck wait as the run recorded it: on a loaded
// machine a held response is released and read a little after the
// stall's end (a busy run saw 2097 requests and a corrected p99 of 504 ms,
// above the 500 ms a fixed V allows), and that longer wait is what the
// correction rightly spreads. Tolerance ±10 % (p90), ±6 % (p95), ±4 %
// (p99): the synthetic count varies by a few per stuck response with when
// each was sent.
func TestTruth_PeriodicStallCorrected(t *testing.T) {
	const yaml = `version: 1
name: truth-stall-corrected
target: {serve: http, args: ["--stall-every", "2s", "--stall-for", "500ms", "--stall-origin", "first"]}
driver: {http: {path: /s, timeout: 5s}}
phases:
  - name: closed
    closed: {connections: 10, think_time: 10ms, expected_rate: 1000/s}
    duration: 3500ms
`
	r := fcRunScenario(t, "truth-stall-corrected", yaml, 0)
	phs := r.phases(t)
	if len(phs) != 1 {
		t.Fatalf("%d phase results, want 1", len(phs))
	}
	ph := phs[0]
	n := float64(fcCount(t, ph, "requests"))
	if n < 1000 {
		t.Fatalf("%v requests in 3.5 s, want ≥ 1000 (the loop paces at about 1000/s)", n)
	}
	f := 1000 / (1000 + n - 20)
	v := truthMs(t, ph, "max")
	t.Logf("%v requests: slow fraction of the corrected distribution f = %.3f; longest stuck wait V = %.3f ms", n, f, v)
	if v < 490 || v > 600 {
		t.Fatalf("plain max %.3f ms: the 500 ms stall should hold the stuck responses about 500 ms", v)
	}
	for _, c := range []struct {
		name     string
		q, allow float64
	}{{"p90", 0.90, 0.10}, {"p95", 0.95, 0.06}, {"p99", 0.99, 0.04}} {
		truth := v * (1 - (1-c.q)/f)
		got := jsonNum(t, ph, "metrics", "corrected_response_time", c.name+"_ms")
		truthCheck(t, "corrected "+c.name, got, truth, truth*c.allow, truth*c.allow)
	}
	p95, p99 := truthMs(t, ph, "p95"), truthMs(t, ph, "p99")
	t.Logf("plain closed p95 = %.3f ms, p99 = %.3f ms", p95, p99)
	if p95 >= 40 {
		t.Errorf("plain closed p95 = %.3f ms, want < 40 ms (1/10 of the truth): only the requests on the wire wait", p95)
	}
	if !truthWarned(t, r, "closed-model", "closed") {
		t.Error("the closed phase carries no closed-model warning in the JSON")
	}
}
