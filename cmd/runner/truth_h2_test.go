package main

import (
	"math"
	"strings"
	"testing"
)

// TestTruth_H2LittlesLaw: HTTP/2 multiplexing carries more requests at
// once than there are connections. One h2c connection to the reference
// target (service time S = 100 ms, served concurrently), open arrivals
// at λ = 75/s, uniform, with inflight 8: each request holds a stream for
// W ≈ S, so by Little's law L = λ·W ≈ 7.5 requests are in flight on the
// one connection, under the cap of 8 (arrivals 13.3 ms apart, a stream
// free again after 100 ms: at most 8 at once, so none queues).
//
// The tolerance comes from what the target recorded: W lies between S
// and S + late_max_us (how late the target wrote its latest response)
// plus 5 ms for the client's read and the loopback, so L must lie in
// [λ·S, λ·(S + late + 5 ms)] within 1 %, λ the responses over the window
// the engine averages over.
// The engine's own time-average of requests in flight (inflight_mean)
// must agree with λ·W within 5 %, and the target must have accepted one
// connection: the overlap happened on it, not on connections opened
// behind the scenario's back.
//
// Naive measurement: a driver that sends one request at a time per
// connection (HTTP/1.1 semantics, or streams serialised by a lock) gives
// L ≤ 1 and fails; one that opens a connection per stream fails the
// connection count.
func TestTruth_H2LittlesLaw(t *testing.T) {
	const yaml = `version: 1
name: truth-h2-little
target: {serve: http, args: ["--delay", "100ms"]}
driver: {http: {version: "2", path: /l, timeout: 2s}}
phases:
  - {name: steady, open: {rate: 75/s, connections: 1, inflight: 8}, duration: 3s}
reconcile:
  fetch: {path: /stats}
  expect: ['server.connections == 1']
`
	r := fcRunScenario(t, "truth-h2-little", yaml, exitPass)
	ph := r.phases(t)[0]
	const s = 0.100 // the target's service time
	if ok, req := jsonNum(t, ph, "summary", "ok"), jsonNum(t, ph, "summary", "requests"); ok != req || ok < 200 {
		t.Fatalf("ok %v of %v requests, want all of about 225", ok, req)
	}
	if opened := jsonNum(t, ph, "summary", "connections_opened"); opened != 1 {
		t.Errorf("the client opened %v connections, want 1", opened)
	}
	if conns := jsonNum(t, ph, "server", "connections"); conns != 1 {
		t.Errorf("the target accepted %v connections, want 1", conns)
	}
	// λ: the responses over the window the engine averages in flight over
	// (the phase, or up to its last response when that came later).
	window := max(jsonNum(t, ph, "summary", "last_done_ns"), jsonNum(t, ph, "summary", "elapsed_ns")) / 1e9
	lambda := jsonNum(t, ph, "summary", "responded") / window
	late := jsonNum(t, ph, "server", "late_max_us") / 1e6
	lo, hi := lambda*s*0.99, lambda*(s+late+0.005)*1.01
	// At the target: the time-average of requests between send and
	// response, which Little's law makes λ·(mean service time).
	in := jsonNum(t, ph, "metrics", "inflight_mean")
	if in < lo || in > hi {
		t.Errorf("in flight on one connection on average %.3f, want %.3f…%.3f (λ %.1f/s, S %.0f ms, the target %.1f ms late at most)", in, lo, hi, lambda, s*1000, late*1000)
	}
	// From the intended start: L = λ·W is what is in flight plus what
	// waited in the client before its send (the generator's own delay on
	// a busy machine), each measured apart.
	l := jsonNum(t, ph, "metrics", "little_l")
	wait := 0.0
	if w, ok := ph["summary"].(map[string]any)["wait_sum_ns"].(float64); ok && window > 0 {
		wait = w / 1e9 / window
	}
	if math.Abs(l-(in+wait))/l > 0.03 {
		t.Errorf("λ·W = %.3f, in flight %.3f + waiting in the client %.3f: Little's law off by more than 3 %%", l, in, wait)
	}
	t.Logf("h2c, 1 connection: λ·W = %.3f = in flight %.3f + waiting %.3f (target range %.3f…%.3f)\n%s", l, in, wait, lo, hi, r.stdout)
	if strings.Contains(r.stdout, "did not start from zero") {
		// A connection before the first phase (a check of the target
		// outside the plan) shows as a stale counter.
		t.Errorf("the target counted a connection before the first phase:\n%s", r.stdout)
	}
	if strings.Contains(r.stderr, "concurrent streams") {
		t.Errorf("the reference target's stream limit (250) was said to cap inflight 8:\n%s", r.stderr)
	}
}

// TestH2_GoAwayReconcilesWithTheTarget: the reference target told to
// close each connection after 10 requests (--close-after 10) ends an
// HTTP/2 connection with GOAWAY. Across that churn, with 8 streams in
// flight on each of 2 connections, every request ends ok, the
// connections runner opened are the connections the target accepted, and
// the requests the target served are runner's requests: a stream refused
// by a GOAWAY and sent again is served once, counted once.
func TestH2_GoAwayReconcilesWithTheTarget(t *testing.T) {
	t.Parallel()
	const yaml = `version: 1
name: truth-h2-goaway
target: {serve: http, args: ["--delay", "10ms", "--close-after", "10"]}
driver: {http: {version: "2", path: /g, timeout: 2s}}
phases:
  - {name: steady, open: {rate: 800/s, connections: 2, inflight: 8}, requests: 800}
reconcile:
  fetch: {path: /stats}
  expect: ['server.connections == connections_opened', 'server.requests == requests']
assert: [errors == 0]
`
	r := fcRunScenario(t, "truth-h2-goaway", yaml, exitPass)
	ph := r.phases(t)[0]
	opened := jsonNum(t, ph, "summary", "connections_opened")
	if opened < 10 {
		t.Errorf("connections opened %v, want the churn of --close-after 10 (800 requests: dozens)", opened)
	}
	if g := jsonNum(t, ph, "summary", "closes_by_code", "goaway-NO_ERROR"); g < opened-2 {
		t.Errorf("%v GOAWAYs for %v connections opened", g, opened)
	}
}
