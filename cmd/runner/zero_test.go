package main

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// The defect pinned: an explicit 0 read as "not given" and replaced by a
// default.
//
// An explicit zero is a value: `rate: 0/s` is a pause of the phase's
// duration (its connections open, nothing sent, the target counts
// nothing), and a ramp from 0/s sends exactly its closed-form count, none
// at its first instant. Against the real HTTP reference target, with a
// warmup before them; counts are exact (uniform schedules).
func TestField_ExplicitZero_PauseAndRampFromZero(t *testing.T) {
	t.Parallel()
	const head = `version: 1
name: zero
target: {serve: http, args: ["--delay", "1ms"]}
driver: {http: {path: "/z/{{seq}}", timeout: 2s}}
`
	const phases = `phases:
  - {name: warmup, warmup: true, open: {rate: 20/s, connections: 2}, duration: 1s}
  - {name: pause, open: {rate: 0/s, connections: 2}, duration: 1s}
  - {name: climb, open: {rate: {from: 0/s, to: 100/s}, connections: 4}, duration: 2s}
reconcile:
  fetch: {path: /stats}
  expect: [server.requests == requests]
`
	judged := head + phases + `assert:
  - {rule: requests == 0, phase: pause}
  - {rule: errors == 0, phase: pause}
  - {rule: requests == 99, phase: climb}
  - {rule: errors == 0, phase: climb}
`
	// A latency percentile of the pause has no sample to read.
	percentile := head + `phases:
  - {name: pause, open: {rate: 0/s}, duration: 1s}
assert: [p50 < 1s]
`

	// runner plan says what the phases will do before any traffic; the
	// climb's slope is 50/s², so its first arrival is at √(2/50) s.
	code, out, stderr := cli(t, "plan", scenario(t, "zero.yaml", judged))
	for _, want := range []string{
		"rate         0/s: a pause of 1s, 0 requests (the connections stay open)",
		"expected     0 requests; time 1s",
		"rate         0/s → 100/s linear over 2s, uniform arrivals (none at 0/s: the first at 200ms)",
		"expected     99 requests; time 2s",
	} {
		if code != exitPass || !strings.Contains(out, want) {
			t.Errorf("plan: exit %d, lacks %q:\n%s%s", code, want, out, stderr)
		}
	}

	// The two runs go in parallel; fcExec never calls t.Fatal.
	var r, pr *fcRun
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r = fcExec(t, t.TempDir(), "zero", judged) }()
	go func() { defer wg.Done(); pr = fcExec(t, t.TempDir(), "zero-p50", percentile) }()
	wg.Wait()

	r.expect(t, exitPass)
	phs := r.phases(t)
	if len(phs) != 3 {
		t.Fatalf("%d phase results, want 3", len(phs))
	}
	// warmup: 20/s × 1 s; pause: nothing; climb 0 → 100/s over 2 s:
	// Λ(2) = 100, and nothing at 0/s, so ⌈100 − 1⌉ = 99.
	for i, want := range []struct {
		name string
		n    int64
	}{{"warmup", 20}, {"pause", 0}, {"climb", 99}} {
		ph := phs[i]
		if name, _ := fcPhaseName(t, ph); name != want.name {
			t.Fatalf("phase result %d is %q, want %q", i, name, want.name)
		}
		for _, key := range []string{"arrivals", "requests", "ok"} {
			if got := fcCount(t, ph, key); got != want.n {
				t.Errorf("%s: %s = %d, want %d", want.name, key, got, want.n)
			}
		}
		if got := jsonNum(t, ph, "server", "requests"); want.name != "warmup" && got != float64(want.n) {
			t.Errorf("%s: the target counted %g requests, want %d", want.name, got, want.n)
		}
	}
	pause := phs[1]
	// A pause lasts its duration (at least; the machine may add).
	if el := time.Duration(jsonNum(t, pause, "summary", "elapsed_ns")); el < time.Second {
		t.Errorf("pause elapsed %s, want ≥ 1s", el)
	}

	pr.expect(t, exitInconclusive)
	if !strings.Contains(pr.stdout, "INCONCLUSIVE p50 < 1s") || !strings.Contains(pr.stdout, "n/a (0 samples)") {
		t.Errorf("a percentile of a pause must be inconclusive with n/a (0 samples):\n%s", pr.stdout)
	}
	if got := fcCount(t, pr.phases(t)[0], "requests"); got != 0 {
		t.Errorf("pause sent %d requests", got)
	}
}
