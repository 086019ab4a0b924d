package schema

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// shopFlow is a valid flow scenario: log in, list, open one.
const shopFlow = `version: 1
target: {serve: http}
driver:
  http:
    headers: {Accept: application/json}
    flows:
      - name: shop
        weight: 3
        steps:
          - name: login
            method: POST
            path: /login
            body: '{"user": "u{{seq}}"}'
            capture:
              token: {json: token}
          - name: items
            think_time: 100ms
            path: /items
            headers: {Authorization: "Bearer {{token}}"}
            capture:
              item: {regex: '"id":\s*(\d+)'}
          - name: item
            path: /items/{{item}}
      - name: health
        steps:
          - {name: healthz, path: /healthz}
phases: [{open: {rate: 10/s}, duration: 1s}]
`

func TestFlows_Valid(t *testing.T) {
	s := mustParse(t, shopFlow)
	fs := s.Driver.HTTP.Flows
	if len(fs) != 2 || fs[0].Weight != 3 || fs[1].Weight != 1 {
		t.Fatalf("flows %+v, want shop (weight 3) and health (weight 1 by default)", fs)
	}
	st := fs[0].Steps
	if len(st) != 3 || st[0].Method != "POST" || st[1].Method != "GET" || st[1].ThinkTime.D() != 100*time.Millisecond || st[0].Capture["token"].JSON != "token" {
		t.Errorf("steps %+v", st)
	}
	if h := s.Driver.HTTP; h.Method != "" || h.Path != "" {
		t.Errorf("with flows the driver's method %q and path %q get no default", h.Method, h.Path)
	}
}

func TestFlows_Problems(t *testing.T) {
	const top = "version: 1\ntarget: {serve: http}\ndriver:\n  http:\n"
	const ph = "phases: [{open: {rate: 1/s}, duration: 1s}]\n"
	for _, tc := range []struct {
		name, flows string
		want        []string
	}{
		{"no flow", "    flows: []\n", []string{"driver.http.flows: expected at least one flow"}},
		{"path beside flows", "    path: /x\n    flows: [{name: a, steps: [{name: s}]}]\n", []string{"driver.http.path: path is given per step"}},
		{"bad names", "    flows: [{name: 'a b', steps: [{name: 1x}]}]\n", []string{
			`driver.http.flows[0].name: expected a flow name of letters, digits and _`,
			`driver.http.flows[0].steps[0].name: expected a step name of letters, digits and _`}},
		{"same step twice", "    flows: [{name: a, steps: [{name: s}]}, {name: b, steps: [{name: s}]}]\n", []string{`step "s" is also in flow "a"`}},
		{"same flow twice", "    flows: [{name: a, steps: [{name: s}]}, {name: a, steps: [{name: t}]}]\n", []string{`flow "a" is named twice`}},
		{"weight 0", "    flows: [{name: a, weight: 0, steps: [{name: s}]}]\n", []string{"weight of at least 1, found 0"}},
		{"weight 1.5", "    flows: [{name: a, weight: 1.5, steps: [{name: s}]}]\n", []string{"weight: expected an integer, found 1.5"}},
		{"too heavy", "    flows: [{name: a, weight: 999999, steps: [{name: s}]}, {name: b, weight: 2, steps: [{name: t}]}]\n", []string{"add up to more than 1000000"}},
		{"no steps", "    flows: [{name: a, steps: []}]\n", []string{"flows[0].steps: expected at least one step"}},
		{"negative think", "    flows: [{name: a, steps: [{name: s}, {name: t, think_time: -1s}]}]\n", []string{"think_time: expected a duration of 0s or more"}},
		{"think before the first step", "    flows: [{name: a, steps: [{name: s, think_time: 1s}]}]\n", []string{"steps[0].think_time: the first step is due at the arrival itself"}},
		{"bytes in a step", "    flows: [{name: a, steps: [{name: s, body: '{{bytes 10}}'}]}]\n", []string{"unknown template action {{bytes 10}}"}},
		{"capture of two kinds", "    flows: [{name: a, steps: [{name: s, capture: {t: {json: x, header: X-T}}}]}]\n", []string{"capture.t: expected exactly one of json, header or regex, found 2"}},
		{"capture of none", "    flows: [{name: a, steps: [{name: s, capture: {t: {}}}]}]\n", []string{"capture.t: expected exactly one of json, header or regex, found 0"}},
		{"bad regex", "    flows: [{name: a, steps: [{name: s, capture: {t: {regex: '('}}}]}]\n", []string{"capture.t.regex: not an RE2 expression"}},
		{"reserved capture", "    flows: [{name: a, steps: [{name: s, capture: {seq: {json: x}}}]}]\n", []string{`"seq" is a template action`}},
		{"capture read before it is taken", "    flows: [{name: a, steps: [{name: s, path: '/x/{{tokn}}'}, {name: t, capture: {token: {json: x}}}]}]\n", []string{
			"{{tokn}} is not captured by an earlier step of this flow: no earlier step"}},
		{"misspelt capture", "    flows: [{name: a, steps: [{name: s, capture: {token: {json: x}}}, {name: t, headers: {X-T: '{{tokn}}'}}]}]\n", []string{
			"{{tokn}} is not captured by an earlier step of this flow: did you mean {{token}}?"}},
		{"capture from another flow", "    flows: [{name: a, steps: [{name: s, capture: {token: {json: x}}}]}, {name: b, steps: [{name: t, body: '{{token}}'}]}]\n", []string{
			"flows[1].steps[0].body: {{token}} is not captured by an earlier step"}},
		{"capture reads an earlier capture", "    flows: [{name: a, steps: [{name: s, capture: {token: {json: x}}}, {name: t, capture: {id: {json: 'items.#(t==\"{{tokn}}\").id'}, re: {regex: '{{id}}=(\\d+)'}}}]}]\n", []string{
			`steps[1].capture.id.json: {{tokn}} is not captured by an earlier step of this flow: did you mean {{token}}?`,
			`steps[1].capture.re.regex: {{id}} is not captured by an earlier step of this flow`}},
		{"regex with holes", "    flows: [{name: a, steps: [{name: s, capture: {t: {regex: '({{seq}}'}, u: {regex: 'a{{{seq}}'}}}]}]\n", []string{"capture.t.regex: not an RE2 expression: error parsing regexp: missing closing ): `(x`"}},
		{"bad method", "    flows: [{name: a, steps: [{name: s, method: get}]}]\n", []string{`methods are case-sensitive; did you mean "GET"?`}},
		{"bad path", "    flows: [{name: a, steps: [{name: s, path: x}]}]\n", []string{`steps[0].path: expected a path starting with "/"`}},
		{"cookie header with a jar", "    cookies: true\n    flows: [{name: a, steps: [{name: s, headers: {Cookie: x}}]}]\n", []string{
			"flows[0].steps[0].headers.Cookie: the Cookie header is the cookie jar's when cookies is true"}},
		{"unknown step key", "    flows: [{name: a, steps: [{name: s, pth: /x}]}]\n", []string{`steps[0].pth: unknown key; did you mean "path"?`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantProblems(t, top+tc.flows+ph, tc.want...)
		})
	}
}

// TestFlows_TooManySteps, from the breaker: 4000 one-step flows passed
// validation and took 6 GB to run (a recorder per step).
func TestFlows_TooManySteps(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\ntarget: {serve: http}\ndriver:\n  http:\n    flows:\n")
	for i := range MaxFlowSteps + 1 {
		fmt.Fprintf(&b, "      - {name: f%d, steps: [{name: s%d}]}\n", i, i)
	}
	b.WriteString("phases: [{open: {rate: 1/s}, duration: 1s}]\n")
	wantProblems(t, b.String(), fmt.Sprintf("driver.http.flows: %d steps in all; at most %d", MaxFlowSteps+1, MaxFlowSteps))
}
