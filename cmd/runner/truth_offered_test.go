package main

import (
	"math"
	"testing"
)

// TestTruth_AchievedBelowOffered: one connection with an in-flight cap of 1
// against a 10 ms target can carry at most 100 requests/s; 200/s offered
// for 2 s is impossible. Queue mode: all 400 arrivals are sent, the
// second half during the drain (about 2 s after the phase's end, within
// the 10 s timeout), so achieved is 400 over the ≈ 4 s in which they were
// sent, ≈ 100/s, reported and warned as below 95 % of offered. Drop mode: each
// arrival that finds the slot busy is dropped at once, and
// requests + dropped == arrivals exactly; achieved is lower there (≈ 67/s
// measured): a response takes a hair over 10 ms, so the arrival due at the
// instant the slot would free is already gone and two in three drop.
//
// Naive measurement: a tool that paces by the previous response (the
// closed loop in disguise) reports the rate it managed as the rate
// offered, so achieved = offered and no warning; the test requires
// achieved ≤ 95 % of offered (measured 47.5 % in queue mode, 33.5 % in
// drop mode: a factor 2 to 3 that the naive report hides).
func TestTruth_AchievedBelowOffered(t *testing.T) {
	for _, mode := range []string{"queue", "drop"} {
		t.Run(mode, func(t *testing.T) {
			yaml := `version: 1
name: truth-offered-` + mode + `
target: {serve: http, args: ["--delay", "10ms"]}
driver: {http: {path: /o, timeout: 10s}}
phases:
  - {name: steady, open: {rate: 200/s, connections: 1, inflight: 1, on_saturation: ` + mode + `}, duration: 2s}
`
			r := fcRunScenario(t, "truth-offered-"+mode, yaml, exitPass)
			ph := r.phases(t)[0]
			arrivals, requests, dropped := fcCount(t, ph, "arrivals"), fcCount(t, ph, "requests"), fcCount(t, ph, "dropped")
			if arrivals != 400 || requests+dropped != arrivals {
				t.Fatalf("arrivals %d requests %d dropped %d: want 400 arrivals = requests + dropped", arrivals, requests, dropped)
			}
			if mode == "queue" && requests != 400 {
				t.Fatalf("queue mode: %d of 400 arrivals sent; every arrival that came due is sent during the drain", requests)
			}
			achieved := jsonNum(t, ph, "metrics", "achieved_rate")
			offered := jsonNum(t, ph, "metrics", "offered_rate")
			// The truth is 100/s; a loaded loopback round trip adds to the
			// 10 ms, so accept 60–105/s: far from the 200/s offered.
			if offered != 200 || achieved < 60 || achieved > 105 {
				t.Errorf("offered %.1f/s achieved %.1f/s, want 200 and ≈ 100", offered, achieved)
			}
			// Over the window in which they were sent: the phase's 2 s, or
			// up to the last send of the drain.
			window := math.Max(2, jsonNum(t, ph, "summary", "last_sent_ns")/1e9)
			if math.Abs(float64(requests)/window-achieved) > 0.5 {
				t.Errorf("achieved %.1f/s is not requests/%.3f s (%d)", achieved, window, requests)
			}
			if !truthWarned(t, r, "achieved-below-offered", "steady") {
				t.Error("the achieved-below-offered warning did not fire")
			}
			t.Logf("%s: offered %.0f/s, achieved %.1f/s, requests %d, dropped %d", mode, offered, achieved, requests, dropped)
		})
	}
}
