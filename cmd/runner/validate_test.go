package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// Done-when of the spine: validate names all three problems of a file, each
// with line and column, and exits 2.
func TestValidateReportsEveryProblemWithPosition(t *testing.T) {
	p := scenario(t, "three.yaml", `version: 1
target: {url: "http://127.0.0.1:1"}
driver: {http: {path: /}}
phases:
  - name: steady
    open: {rate: 100, connections: 2}
    duration: 2s
    colour: blue
assert:
  - p99 < 20ms
  - errors === 0
`)
	code, _, stderr := cli(t, "validate", p)
	if code != exitInvalid {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`three\.yaml:6:18: phases\[0\]\.open\.rate: .*N/s\|N/m`),
		regexp.MustCompile(`three\.yaml:8:5: phases\[0\]\.colour: unknown key`),
		regexp.MustCompile(`three\.yaml:11:5: assert\[1\]: `),
	} {
		if !want.MatchString(stderr) {
			t.Errorf("stderr lacks %s:\n%s", want, stderr)
		}
	}
}

// B20, the defect pinned: a misplaced or misspelt YAML key silently
// ignored.
//
// Misplaced and unknown keys are errors from validate, plan and run
// alike, before any traffic: the target counts 0 requests.
func TestField_B20_MisplacedAndUnknownKeys(t *testing.T) {
	base := target(t)
	head := "version: 1\ntarget: {url: \"" + base + "\"}\n"
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"a-phases-under-driver", head + `driver:
  http:
    path: /
    phases:
      - {open: {rate: 50/s}, duration: 1s}
phases:
  - {closed: {connections: 1}, duration: 1s}
`, []string{":6:5: driver.http.phases: unknown key", "belongs at the top level"}},
		{"b-misspelt-key", head + `driver: {http: {path: /}}
phases:
  - {arival_rate: 50/s, duration: 1s}
`, []string{":5:6: phases[0].arival_rate: unknown key", "did you mean"}},
		{"c-rule-without-unit", head + `driver: {http: {path: /}}
phases:
  - {closed: {connections: 1}, duration: 1s}
assert: [p99 < 20]
`, []string{":6:10: assert[0]:", "p99 is a duration", "20ms"}},
		{"d-duplicate-key", head + `driver: {http: {path: /}}
phases:
  - open: {rate: 50/s, rate: 60/s}
    duration: 1s
`, []string{"phases[0].open.rate: duplicate key"}},
		{"e-wrong-type", head + `driver: {http: {path: /}}
phases:
  - open: {rate: 50/s, inflight: "five"}
    duration: 1s
`, []string{"phases[0].open.inflight: expected an integer", `"five"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := scenario(t, tc.name+".yaml", tc.yaml)
			for _, verb := range []string{"validate", "plan", "run"} {
				code, _, stderr := cli(t, verb, p)
				if code != exitInvalid {
					t.Fatalf("%s: exit %d, want 2; stderr:\n%s", verb, code, stderr)
				}
				for _, w := range tc.want {
					if !strings.Contains(stderr, w) {
						t.Errorf("%s: stderr lacks %q:\n%s", verb, w, stderr)
					}
				}
				if !strings.Contains(stderr, tc.name+".yaml:") {
					t.Errorf("%s: stderr does not name the file:\n%s", verb, stderr)
				}
			}
		})
	}
	if n := stats(t, base)["requests"]; n != 0 {
		t.Fatalf("the target counted %g requests; invalid scenarios must send nothing", n)
	}
}

// A driver's own configuration error is reported alone, not followed by
// knock-on plan errors; a WebSocket phase with in-flight > 1 and no
// correlate says to set correlate.
func TestValidateWebSocketInflight(t *testing.T) {
	head := "version: 1\ntarget: {serve: ws-gateway}\ndriver:\n  websocket: {message: '{\"id\": \"u-{{seq}}\"}'%s}\nphases:\n  - {open: {rate: 10/s, connections: 1, inflight: 32}, duration: 1s}\n"
	code, _, errOut := cli(t, "validate", scenario(t, "a.yaml", fmt.Sprintf(head, ", correlate: id")))
	if code != exitInvalid || !strings.Contains(errOut, "it must be {{seq}}") || strings.Contains(errOut, "inflight") {
		t.Errorf("driver error: exit %d\n%s", code, errOut)
	}
	code, _, errOut = cli(t, "validate", scenario(t, "b.yaml", fmt.Sprintf(head, "")))
	if code != exitInvalid || !strings.Contains(errOut, "phases[0].open.inflight") || !strings.Contains(errOut, "set correlate to the reply field") {
		t.Errorf("no correlate: exit %d\n%s", code, errOut)
	}
}
