package main

import (
	"fmt"
	"runtime"
	"testing"
)

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
reconcile:
  fetch: {path: /stats}
  expect:
    - server.requests == requests
    - server.status_503 == errors_by["503"]
    - server.ok == ok
    - server.connections == connections_opened
assert:
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
