package main

// End-to-end tests of the WebSocket driver against the spawned
// ws-gateway and its truth knobs (issue 4): every reply paired or counted,
// every count reconciled with the gateway's own.

import (
	"strings"
	"testing"
)

// wsScenario is a scenario against `runner serve ws-gateway ARGS` whose
// messages are paired by id and judged by resp.ok, with the gateway's
// counters fetched by control message.
func wsScenario(name, args, timeout, phases, rest string) string {
	return `version: 1
name: ` + name + `
target: {serve: ws-gateway, args: [` + args + `]}
driver:
  websocket:
    path: /gateway
    message: '{"id": {{seq}}, "pad": "{{bytes 32}}"}'
    correlate: id
    success: resp.ok == true
    error_code: resp.code
    timeout: ` + timeout + `
phases:
` + phases + `reconcile:
  fetch: {message: '{"cmd":"stats"}', field: stats}
` + rest
}

// wsServer reads a server counter delta of a phase result.
func wsServer(t *testing.T, ph map[string]any, name string) int64 {
	t.Helper()
	return int64(jsonNum(t, ph, "server", name))
}

// Replies in reversed batches of 4, a duplicate of every 7th reply and a
// reply with an id never sent after every 9th: each request is paired
// with its own reply, and the extras are counted apart, exactly as many
// as the gateway sent. An extra is counted when it arrives, so one sent
// just before a phase's end lands in the next phase (the gateway counts
// it when sent): the totals over the run agree, and a tail phase on one
// connection, whose last reply comes after every extra (19 replies,
// 401–419: the last extras follow 413 and 414), lets them all arrive.
func TestWS_OutOfOrderDuplicateUnknown(t *testing.T) {
	t.Parallel()
	yaml := wsScenario("ws-strays", `"--reorder", "4", "--duplicate-every", "7", "--unknown-id-every", "9"`, "5s",
		"  - {name: main, closed: {connections: 4}, requests: 400}\n  - {name: tail, closed: {connections: 1}, requests: 19}\n", `  expect:
    - server.ok == ok
assert:
  - errors == 0
  - {rule: ok == 400 and duplicate_id > 0 and unknown_id > 0, phase: main}
  - unknown_id < 100     # accepted explicitly: no unsolicited-replies INCONCLUSIVE
  - duplicate_id < 100
`)
	r := fcRunScenario(t, "ws-strays", yaml, exitPass)
	var dup, unk, dupSent, unkSent int64
	for _, ph := range r.phases(t) {
		dup += fcCount(t, ph, "duplicate_id")
		unk += fcCount(t, ph, "unknown_id")
		dupSent += wsServer(t, ph, "duplicates_sent")
		unkSent += wsServer(t, ph, "unknown_sent")
	}
	if dup != dupSent || unk != unkSent || dupSent != 419/7 || unkSent != 419/9 {
		t.Errorf("duplicate %d unknown %d; the gateway sent %d and %d (want %d and %d)", dup, unk, dupSent, unkSent, 419/7, 419/9)
	}
	if !strings.Contains(r.stdout, "unsolicited   late replies 0, unknown id ") {
		t.Errorf("console lacks the unsolicited line:\n%s", r.stdout)
	}
}

// Every 10th message is answered 300 ms late, after its 100 ms timeout:
// it is a timeout, and its reply, when it comes, is late: never ok, never
// unknown. A second phase gives the last late replies time to arrive
// (strays are booked to the phase during which they arrive, as are the
// gateway's replies: so only messages received reconcile per phase here).
func TestWS_RepliesAfterTimeout(t *testing.T) {
	t.Parallel()
	yaml := wsScenario("ws-late", `"--slow-every", "10", "--slow-delay", "300ms"`, "100ms",
		"  - {name: main, closed: {connections: 2}, requests: 200}\n  - {name: tail, closed: {connections: 1, think_time: 100ms}, duration: 1s}\n", `  expect:
    - server.messages == requests
assert:
  - unknown_id == 0 and duplicate_id == 0
`)
	r := fcRunScenario(t, "ws-late", yaml, exitPass)
	phs := r.phases(t)
	main, tail := phs[0], phs[1]
	timeouts := fcCount(t, main, "timeouts")
	if timeouts != 20 {
		t.Errorf("timeouts %d, want 20 (every 10th of 200)", timeouts)
	}
	if ok := fcCount(t, main, "ok"); ok != 180 {
		t.Errorf("ok %d, want 180", ok)
	}
	// The tail's own slow messages time out too; a late reply to one of
	// them may come after the run.
	all := timeouts + fcCount(t, tail, "timeouts")
	if late := fcCount(t, main, "late") + fcCount(t, tail, "late"); late < timeouts || late > all {
		t.Errorf("late replies %d (main %d, tail %d), want one per timeout of main (%d), at most one per timeout (%d)", late, fcCount(t, main, "late"), fcCount(t, tail, "late"), timeouts, all)
	}
}

// B16, the defect pinned: the client hanging, or booking timeouts, when
// the server closes a WebSocket.
//
// TestField_B16_ServerInitiatedClose: the gateway closes every connection
// after its 5th message, (a) with a close handshake (1000 "bye"), (b) by
// dropping the TCP connection. 20 connections, one message per 100 ms
// each. The client answers the close (the gateway counts a clean
// handshake for every close it sent), re-dials for its next message, no
// request ends as a timeout, every close is counted by its code and
// reconciles with the gateway's, and the run ends on time.
func TestField_B16_ServerInitiatedClose(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, args, code, counter string
	}{
		{"clean", `"--close-after", "5"`, "1000", "closes_clean"},
		{"abrupt", `"--close-after", "5", "--close-abrupt"`, "1006", "closes_abrupt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			yaml := wsScenario("b16-"+c.name, c.args, "2s",
				"  - {name: main, closed: {connections: 20, think_time: 100ms}, duration: 3s}\n", `  expect:
    - server.ok == ok
    - server.`+c.counter+` == closes_by["`+c.code+`"]
    - server.connections == connections_opened
assert:
  - timeouts == 0
  - closes_by["`+c.code+`"] >= 20
`)
			r := fcRunScenario(t, "b16-"+c.name, yaml, exitPass)
			ph := r.phases(t)[0]
			closes := wsServer(t, ph, c.counter)
			if c.code == "1000" && wsServer(t, ph, "closes_sent") != closes {
				t.Errorf("the gateway sent %d closes, %d completed the handshake", wsServer(t, ph, "closes_sent"), closes)
			}
			reconnects := fcCount(t, ph, "reconnects")
			// A close in the last think time of the phase is not followed
			// by a message, so by a re-dial: at most one per connection.
			if reconnects > closes || reconnects < closes-20 {
				t.Errorf("reconnects %d, closes %d: want closes − 20 ≤ reconnects ≤ closes", reconnects, closes)
			}
			if w := jsonNum(t, ph, "wall"); w > 5.5e9 {
				t.Errorf("phase wall time %.1f s: want 3 s plus at most the 2 s grace", w/1e9)
			}
			t.Logf("%s: %d closes, %d reconnects, %d ok", c.name, closes, reconnects, fcCount(t, ph, "ok"))
		})
	}
}

// A gateway that never answers: every message times out, the run ends
// on time, and the timeouts reconcile with the replies the gateway held.
func TestWS_GatewayNeverAnswers(t *testing.T) {
	t.Parallel()
	yaml := wsScenario("ws-silent", `"--never-answer"`, "200ms",
		"  - {name: main, open: {rate: 50/s, connections: 2, inflight: 16}, duration: 1s}\n", `  expect:
    - server.messages == timeouts
assert:
  - ok == 0 and timeouts == requests
  - errors == 0
`)
	r := fcRunScenario(t, "ws-silent", yaml, exitFail)
	ph := r.phases(t)[0]
	if n := fcCount(t, ph, "timeouts"); n != 50 {
		t.Errorf("timeouts %d, want all 50 arrivals", n)
	}
	if !strings.Contains(r.stdout, "errors == 0 is false: 50 vs 0, difference 50") {
		t.Errorf("the failed rule does not show its sides:\n%s", r.stdout)
	}
}

// A reconciliation that does not hold fails the run (exit 1) and prints
// both sides and the difference.
func TestWS_ReconciliationMismatch(t *testing.T) {
	t.Parallel()
	yaml := wsScenario("ws-mismatch", `"--bucket", "0"`, "2s",
		"  - {name: main, closed: {connections: 1}, requests: 50}\n", `  expect:
    - server.ok == ok + 1
`)
	r := fcRunScenario(t, "ws-mismatch", yaml, exitFail)
	for _, want := range []string{
		"reconciliation (server counters vs client counts)",
		"FAIL         server.ok == ok + 1",
		"server.ok=50 ok=50 — server.ok == ok + 1 is false: 50 vs 51, difference -1",
		"verdict: FAIL",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
}

// The gateway closes each connection cleanly after its 100th message,
// under a closed model that sends the next message at once. A message
// the client writes when the close has already arrived was never sent: it
// is sent on a new connection, not booked as a reset (the breaker found a
// storm of those). A message that crossed the gateway's close frame on
// the wire is a request that ends as eof close-1000, and the gateway
// (which drops what comes after its close) never counted it: so the
// gateway's messages plus those eofs are the requests, exactly.
func TestWS_CleanCloseUnderLoad(t *testing.T) {
	t.Parallel()
	yaml := wsScenario("ws-close-load", `"--close-after", "100", "--bucket", "0"`, "2s",
		"  - {name: main, closed: {connections: 4}, requests: 2000}\n", `  expect:
    - server.messages + errors_by["close-1000"] == requests
    - server.closes_clean == closes_by["1000"]
assert:
  - 'errors_by["reset"] == 0 and timeouts == 0 and errors == errors_by["close-1000"]'
  - 'closes_by["1000"] >= 15'
`)
	r := fcRunScenario(t, "ws-close-load", yaml, exitPass)
	ph := r.phases(t)[0]
	t.Logf("closes %v, reconnects %d, errors %d", ph["summary"].(map[string]any)["closes_by_code"], fcCount(t, ph, "reconnects"), fcCount(t, ph, "errors"))
}
