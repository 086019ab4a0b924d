package schema

import (
	"strings"
	"testing"
)

// B04, the defect pinned: a number accepted without its unit, as a guess.
//
// The rate is global and units are explicit (rakyll/hey#140). A
// value without its unit is rejected with its position, key path and the
// accepted units; 600/m is the same rate as 10/s.
func TestField_B04_UnitsExplicit(t *testing.T) {
	scenario := func(rate, duration string) string {
		return `version: 1
target: {serve: http}
driver: {http: {}}
phases:
  - open: {rate: ` + rate + `, connections: 50}
    duration: ` + duration + `
`
	}
	t.Run("a: 10/s", func(t *testing.T) {
		s := mustParse(t, scenario("10/s", "30s"))
		if r := s.Phases[0].Open.Rate; r.From != 10 || r.Ramp {
			t.Errorf("rate %+v, want a constant 10/s", r)
		}
	})
	t.Run("b: 600/m is 10/s", func(t *testing.T) {
		s := mustParse(t, scenario("600/m", "30s"))
		if r := s.Phases[0].Open.Rate; r.From != 10 || r.String() != "10/s" {
			t.Errorf("rate %v (%g/s), want 10/s", r, float64(r.From))
		}
	})
	t.Run("c: rate without unit", func(t *testing.T) {
		wantProblems(t, scenario("10", "30s"),
			"s.yaml:5:18: phases[0].open.rate: expected a rate with unit (N/s|N/m), e.g. 10/s; found 10")
	})
	t.Run("d: duration without unit", func(t *testing.T) {
		wantProblems(t, scenario("10/s", "30"),
			"s.yaml:6:15: phases[0].duration: expected a duration with unit (us|ms|s|m), e.g. 30s; found 30")
	})
	t.Run("quoted numbers have no unit either", func(t *testing.T) {
		wantProblems(t, scenario(`"10"`, `"30"`),
			`s.yaml:5:18: phases[0].open.rate: expected a rate with unit (N/s|N/m), e.g. 10/s; found string "10"`,
			`s.yaml:6:15: phases[0].duration: expected a duration with unit (us|ms|s|m), e.g. 30s; found string "30"`)
	})
}

// B11, the defect pinned: warmup traffic entering the verdict.
//
// Warmup is never judged (grafana/k6#891). A rule scoped to a
// warmup phase is a validation error.
func TestField_B11_WarmupNeverJudged(t *testing.T) {
	const phases = `version: 1
target: {serve: http}
driver: {http: {}}
reconcile: {fetch: {path: /stats}, expect: ["server.requests == requests"]}
phases:
  - {name: warmup, warmup: true, open: {rate: 20/s}, duration: 5s}
  - {name: steady, open: {rate: 100/s}, duration: 10s}
`
	s := mustParse(t, phases+"assert: [p99 < 20ms]\n")
	if !s.Phases[0].Warmup || s.Phases[1].Warmup {
		t.Errorf("warmup flags %v %v", s.Phases[0].Warmup, s.Phases[1].Warmup)
	}
	wantProblems(t, phases+"assert: [{rule: p99 < 20ms, phase: warmup}]\n",
		`s.yaml:8:36: assert[0].phase: phase "warmup" is a warmup phase, and warmup phases are never judged`)
	wantProblems(t, strings.Replace(phases, `expect: ["server.requests == requests"]`, `expect: [{rule: "server.requests == requests", phase: warmup}]`, 1),
		`s.yaml:4:90: reconcile.expect[0].phase: phase "warmup" is a warmup phase, and warmup phases are never judged`)
}

// B20, the defect pinned: a misplaced or misspelt YAML key silently
// ignored.
//
// Misplaced and unknown YAML keys are never silently ignored
// (artilleryio/artillery#1834). Each file is rejected with file:line:col,
// the key path, what was expected and, where one is plausible, a
// suggestion.
func TestField_B20_MisplacedAndUnknownKeys(t *testing.T) {
	t.Run("a: phases under the protocol block", func(t *testing.T) {
		// The original report put phases under driver.websocket; this format
		// has no websocket driver yet, so it goes under driver.http.
		wantProblems(t, `version: 1
target: {serve: http}
driver:
  http:
    path: /
    phases:
      - {closed: {connections: 10}, duration: 10s}
`,
			"s.yaml:1:1: phases: required key missing; expected a list of phases",
			`s.yaml:6:5: driver.http.phases: unknown key; "phases" belongs at the top level`)
	})
	t.Run("b: arival_rate", func(t *testing.T) {
		wantProblems(t, head+`phases:
  - arival_rate: 50/s
    duration: 10s
`,
			`s.yaml:5:5: phases[0].arival_rate: unknown key; did you mean "open"? (write open: {rate: 50/s})`,
			`s.yaml:5:5: phases[0]: no load model; expected exactly one of closed, open or ramp`)
	})
	t.Run("c: rule without unit", func(t *testing.T) {
		// `p99 < 20` compares a duration with a bare number: the engine's
		// rule compiler rejects it (it compiles every rule before any
		// traffic). Loading keeps the text and its position for that message.
		s := mustParse(t, head+"phases: [{open: {rate: 10/s}, duration: 1s}]\nassert: [p99 < 20]\n")
		if r := s.Assert[0]; r.Expr != "p99 < 20" || r.Line != 5 || r.Col != 10 {
			t.Errorf("rule %+v, want p99 < 20 at 5:10", r)
		}
	})
	t.Run("d: rate twice", func(t *testing.T) {
		wantProblems(t, head+`phases:
  - open:
      rate: 10/s
      rate: 20/s
    duration: 10s
`,
			`s.yaml:7:7: phases[0].open.rate: duplicate key "rate": first at line 6, again at line 7; keep one`)
	})
	t.Run("e: inflight five", func(t *testing.T) {
		wantProblems(t, head+`phases:
  - open: {rate: 10/s, inflight: "five"}
    duration: 10s
`,
			`s.yaml:5:34: phases[0].open.inflight: expected an integer, found string "five"`)
	})
}
