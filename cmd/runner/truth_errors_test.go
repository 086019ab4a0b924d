package main

import (
	"math"
	"testing"
)

// TestTruth_ErrorsEveryNth: the target answers 503 to every 5th counted
// request, so over a count-bounded run of 1000 the error rate is exactly
// 0.2, throughput is exactly 4/5 of the achieved rate (failures never
// count; a tool counting every response would report them equal), and the
// target's own counters, fetched before and after the phase, reconcile
// with the client's counts as deltas.
//
// Naive measurement: failures counted as throughput report 25 % more
// (5/4 of the true throughput) and an error rate of 0; the test asserts
// the exact counts (800 ok, 200 errors of class status, code 503), so it
// fails both.
func TestTruth_ErrorsEveryNth(t *testing.T) {
	const yaml = `version: 1
name: truth-errors
target: {serve: http, args: ["--delay", "1ms", "--error-every", "5"]}
driver: {http: {path: /e, timeout: 2s}}
phases:
  - {name: steady, closed: {connections: 4}, requests: 1000}
reconcile:
  fetch: {path: /stats}
  expect:
    - server.requests == requests
    - server.status_503 == errors_by["503"]
    - server.ok == ok
assert:
  - error_rate == 0.2
  - errors == 0
`
	r := fcRunScenario(t, "truth-errors", yaml, exitFail)
	ph := r.phases(t)[0]
	if ok, errs := fcCount(t, ph, "ok"), fcCount(t, ph, "errors"); ok != 800 || errs != 200 {
		t.Fatalf("ok %d errors %d, want 800 and 200", ok, errs)
	}
	if er := jsonNum(t, ph, "metrics", "error_rate"); er != 0.2 {
		t.Errorf("error_rate %v, want exactly 0.2", er)
	}
	thr, ach := jsonNum(t, ph, "metrics", "throughput"), jsonNum(t, ph, "metrics", "achieved_rate")
	if math.Abs(thr-0.8*ach) > 1e-9*ach {
		t.Errorf("throughput %.3f/s is not 4/5 of achieved %.3f/s", thr, ach)
	}
	rep := readJSON(t, r.json)
	v, _ := rep["verdict"].(map[string]any)
	expect, _ := v["expect"].([]any)
	if len(expect) != 3 {
		t.Fatalf("%d reconciliation results, want 3", len(expect))
	}
	for _, e := range expect {
		m, _ := e.(map[string]any)
		if m["status"] != "pass" {
			t.Errorf("reconciliation %v: %v", m["rule"], m["status"])
		}
	}
	// The rules: error_rate == 0.2 holds, errors == 0 fails: exit 1.
	rules, _ := v["rules"].([]any)
	if len(rules) != 2 || rules[0].(map[string]any)["status"] != "pass" || rules[1].(map[string]any)["status"] != "fail" {
		t.Errorf("rules %v", rules)
	}
}
