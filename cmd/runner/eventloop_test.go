package main

import (
	"fmt"
	"runtime"
	"testing"
)

// loopReconcile reconciles every count the reference target keeps with
// the client's: requests, ok, 503s and connections.
const loopReconcile = `reconcile:
  fetch: {path: /stats}
  expect:
    - server.requests == requests
    - server.status_503 == errors_by["503"]
    - server.ok == ok
    - server.connections == connections_opened
`

// TestEventLoop_SameCountsAsGoroutines: one closed scenario, run by the
// event loops (the default for plain HTTP/1.1) and by a goroutine per
// connection (--no-event-loop), against a reference target that answers
// 503 to every 7th request and ends every connection after 50 requests
// (Connection: close): both count exactly what the target counted
// (reconcile: requests, ok, 503s, connections), the same requests, ok
// and errors, and the result says which carried the phase.
func TestEventLoop_SameCountsAsGoroutines(t *testing.T) {
	const yaml = `version: 1
name: event-loop
target: {serve: http, args: ["--error-every", "7", "--close-after", "50"]}
driver: {http: {path: /e, timeout: 2s}}
phases:
  - {name: counted, closed: {connections: 8}, requests: 3000}
` + loopReconcile + `assert:
  - requests == 3000
`
	counts := map[string]string{}
	for _, flags := range [][]string{nil, {"--no-event-loop"}} {
		r := fcExecFlags(t, t.TempDir(), "event-loop", yaml, flags)
		r.expect(t, exitPass)
		ph := r.phases(t)[0]
		loops, _ := ph["event_loops"].(float64) // absent: 0, a goroutine each
		want := min(runtime.GOMAXPROCS(0), 8)
		if flags != nil {
			want = 0
		}
		if int(loops) != want {
			t.Errorf("flags %v: event_loops %v, want %d", flags, loops, want)
		}
		// The connections opened depend on how the requests fell on the
		// slots (a slot's 50th request closes it), so they differ from
		// run to run either way: each run reconciles them with the
		// target's count instead.
		counts[fmt.Sprint(flags)] = fmt.Sprintf("requests %d ok %d errors %d", fcCount(t, ph, "requests"), fcCount(t, ph, "ok"), fcCount(t, ph, "errors"))
	}
	if counts["[]"] != counts["[--no-event-loop]"] {
		t.Errorf("event loops: %s\ngoroutines:  %s", counts["[]"], counts["[--no-event-loop]"])
	}
}

// TestEventLoop_OpenSameCountsAsGoroutines: the open model's event loop
// (one loop keeps the timetable and every connection) against the pacer
// and its goroutines, as TestEventLoop_SameCountsAsGoroutines compares
// the closed model's: an open phase bounded by its count, its arrivals
// grouped by a dispatch window, against the
// same target, with more arrivals than its connections absorb at times
// (8 connections at 2,000/s, 2 ms a request: about 4 in flight), queued
// for the first free one. Both send every arrival, reconcile every count
// with the target's, and meet arrivals == requests; the result says one
// event loop carried the phase, or none.
func TestEventLoop_OpenSameCountsAsGoroutines(t *testing.T) {
	const yaml = `version: 1
name: open-event-loop
target: {serve: http, args: ["--error-every", "7", "--close-after", "50", "--delay", "2ms"]}
driver: {http: {path: /e, timeout: 2s}}
phases:
  - {name: counted, open: {rate: 2000/s, connections: 8, dispatch_window: 1ms}, requests: 3000}
` + loopReconcile + `assert:
  - requests == 3000
  - arrivals == requests
`
	counts := map[string]string{}
	for _, flags := range [][]string{nil, {"--no-event-loop"}} {
		r := fcExecFlags(t, t.TempDir(), "open-event-loop", yaml, flags)
		// The verdict may be INCONCLUSIVE on a busy machine (its
		// generator late); the counts must hold either way.
		if r.code != exitPass && r.code != exitInconclusive {
			t.Fatalf("flags %v: exit %d, want pass or inconclusive\n%s\n%s", flags, r.code, r.stdout, r.stderr)
		}
		ph := r.phases(t)[0]
		loops, _ := ph["event_loops"].(float64)
		want := 1
		if flags != nil {
			want = 0
		}
		if int(loops) != want {
			t.Errorf("flags %v: event_loops %v, want %d", flags, loops, want)
		}
		counts[fmt.Sprint(flags)] = fmt.Sprintf("arrivals %d requests %d ok %d errors %d", fcCount(t, ph, "arrivals"), fcCount(t, ph, "requests"), fcCount(t, ph, "ok"), fcCount(t, ph, "errors"))
	}
	if counts["[]"] != counts["[--no-event-loop]"] {
		t.Errorf("event loop: %s\ngoroutines: %s", counts["[]"], counts["[--no-event-loop]"])
	}
}

// TestEventLoop_OpenDrainRunsOut: an open phase the target cannot keep
// up with (4 connections at 50 ms a request, 500 arrivals a second),
// carried by the event loop and by the pacer: every arrival that came due
// is booked, sent or left over when the drain runs out, never lost
// (arrivals == requests + left_over_unsent, the 500 of the timetable),
// and the verdict on `left_over == 0` fails both ways.
func TestEventLoop_OpenDrainRunsOut(t *testing.T) {
	const yaml = `version: 1
name: open-drain
target: {serve: http, args: ["--delay", "50ms"]}
driver: {http: {path: /, timeout: 300ms}}
phases:
  - {name: over, open: {rate: 500/s, connections: 4, dispatch_window: 1ms}, duration: 1s}
assert:
  - left_over == 0
`
	for _, flags := range [][]string{nil, {"--no-event-loop"}} {
		r := fcExecFlags(t, t.TempDir(), "open-drain", yaml, flags)
		if r.code != exitFail {
			t.Fatalf("flags %v: exit %d, want fail (left over)\n%s\n%s", flags, r.code, r.stdout, r.stderr)
		}
		ph := r.phases(t)[0]
		if loops, _ := ph["event_loops"].(float64); (loops == 1) != (flags == nil) {
			t.Errorf("flags %v: event_loops %v", flags, loops)
		}
		arrivals, requests, left := fcCount(t, ph, "arrivals"), fcCount(t, ph, "requests"), fcCount(t, ph, "left_over_unsent")
		if arrivals != 500 || requests+left != arrivals || left == 0 {
			t.Errorf("flags %v: arrivals %d, requests %d, left over %d; want 500 = requests + left over, some left over", flags, arrivals, requests, left)
		}
	}
}
