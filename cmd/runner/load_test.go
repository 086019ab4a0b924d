package main

import (
	"regexp"
	"strings"
	"testing"
)

// problemShape is the shape of every problem `runner validate` reports.
var problemShape = regexp.MustCompile(`^\S+\.yaml:\d+:\d+: [A-Za-z0-9_.\[\]-]+: \S`)

// Problems the loader alone cannot see (the reference target's flags,
// what a rule reads, the driver's and the plan's own checks) and values
// that used to pass validation and fail only at run time: each is
// reported by validate, plan and run alike with exit 2, before anything
// runs, as file:line:col: key.path: message.
func TestValidateRejectsBeforeRunning(t *testing.T) {
	const driver = "driver: {http: {path: /}}\n"
	const phases = "phases:\n  - {name: steady, open: {rate: 10/s}, duration: 1s}\n"
	const url = "version: 1\ntarget: {url: \"http://127.0.0.1:1\"}\n"
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		// The run would try to connect, and fail.
		{"port-too-high", "version: 1\ntarget: {url: \"http://127.0.0.1:99999\"}\n" + driver + phases,
			[]string{`:2:15: target.url: port out of range in "http://127.0.0.1:99999"; expected a port from 1 to 65535`}},
		{"port-zero", "version: 1\ntarget: {url: \"http://127.0.0.1:0\"}\n" + driver + phases,
			[]string{`:2:15: target.url: port out of range`}},
		// The spawned target would exit before it was ready (exit 3).
		{"target-args-bad-value", "version: 1\ntarget: {serve: http, args: [\"--delay\", \"banana\"]}\n" + driver + phases,
			[]string{`:2:41: target.args: invalid value "banana" for flag -delay: parse error (a duration needs a unit, e.g. 5ms) (runner serve http --help lists the flags)`}},
		{"target-args-unknown-flag", "version: 1\ntarget:\n  serve: http\n  args: [--delay, 5ms, --dealy, 1ms]\n" + driver + phases,
			[]string{`:4:24: target.args: flag provided but not defined: -dealy`}},
		{"target-args-out-of-range", "version: 1\ntarget: {serve: http, args: [--error-status, \"700\"]}\n" + driver + phases,
			[]string{`:2:46: target.args: error-status 700: want 200-599`}},
		// The rule would be INCONCLUSIVE at every run (exit 4).
		{"server-counter-without-fetch", url + driver + phases + "assert:\n  - errors == 0\n  - server.requests == requests\n  - {rule: \"median(server.ok) > 0\", phase: steady}\n",
			[]string{
				`:8:5: assert[1]: server.requests needs reconcile.fetch to read the target's counters`,
				`:9:12: assert[2].rule: server.ok needs reconcile.fetch to read the target's counters`,
			}},
		{"server-counter-computed-name", url + driver + phases + "assert: ['let k = \"ok\"; server[k] > 0']\n",
			[]string{`:6:10: assert[0]: server.<counter> needs reconcile.fetch`}},
		// `runner plan` printed rate -9223372036854775808/s.
		{"rate-overflow", url + driver + "phases:\n  - {open: {rate: 1000000000000000000000000/s}, duration: 1s}\n  - {closed: {connections: 1, expected_rate: 20000000/s}, duration: 1s}\n",
			[]string{
				`:5:19: phases[0].open.rate: rate "1000000000000000000000000/s" is above the maximum of 10000000/s: one generator cannot pace more; split the load across generators`,
				`:6:46: phases[1].closed.expected_rate: rate "20000000/s" is above the maximum of 10000000/s`,
			}},
		{"duration-overflow", url + driver + "phases:\n  - {open: {rate: 1/s}, duration: 99999999999999999h}\n",
			[]string{`:5:35: phases[0].duration: duration "99999999999999999h" overflows: the longest is 2562047h (about 292 years)`}},
		// Problems that had no line and column.
		{"url-user-info", "version: 1\ntarget: {url: \"http://user:pw@127.0.0.1:1\"}\n" + driver + phases,
			[]string{`:2:15: target.url: user info (user:password@) in the url is not supported; send an Authorization header`}},
		{"invalid-utf8", url + "driver: {http: {path: \"/caf\xe9\"}}\n" + phases,
			[]string{`:3:28: driver.http.path: invalid UTF-8: byte 0xe9; a scenario file is UTF-8 text`}},
		{"tls-ca-file", "version: 1\ntarget: {url: \"https://127.0.0.1:1\"}\ndriver: {http: {path: /, tls: {ca_file: /nonexistent/ca.pem}}}\n" + phases,
			[]string{`:3:41: driver.http: tls.ca_file: open /nonexistent/ca.pem: no such file or directory`}},
		{"driver-header", url + "driver:\n  http:\n    headers: {Content-Length: \"5\"}\n" + phases,
			[]string{`:5:31: driver.http: header "Content-Length": set by the driver from body or body_size`}},
		{"plan-limits", url + driver + "phases:\n  - {ramp: {connections: {from: 0, to: 100000, step: 1, every: 1ms}}}\n  - {open: {rate: 10/s, inflight: 4}, duration: 1s}\n",
			[]string{
				`:5:26: phases[0]: ramp.connections: 100000 stairs (from 0 to 100000 by 1); at most 10000`,
				`:6:35: phases[1].open.inflight: the driver carries at most 1 request(s) per connection at a time; found 4`,
			}},
		// The breaker's OOM: 200 × 65536 goroutines passed validation.
		{"inflight-slots", "version: 1\ntarget: {serve: ws-gateway}\ndriver: {websocket: {message: '{\"id\": {{seq}}}', correlate: id}}\nphases:\n  - {open: {rate: 10/s, connections: 200, inflight: 65536}, duration: 1s}\n",
			[]string{`:5:53: phases[0].open.inflight: 200 connections × in-flight 65536 = 13107200 requests in flight at once; at most 100000`}},
		// Rule messages in the user's terms.
		{"rule-method", url + driver + phases + "assert: [p99.Hours() < 1]\n",
			[]string{`:6:10: assert[0]: column 5: p99 is a metric, it has no method Hours(); for the number of hours write p99 / 1h`}},
		{"rule-double-approx", url + driver + phases + "assert: [p99 ≈≈ 1ms]\n",
			[]string{`:6:10: assert[0]: column 6: unexpected token Operator("≈")`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := scenario(t, tc.name+".yaml", tc.yaml)
			for _, verb := range []string{"validate", "plan", "run"} {
				code, stdout, stderr := cli(t, verb, p)
				if code != exitInvalid {
					t.Fatalf("%s: exit %d, want 2; stdout:\n%s\nstderr:\n%s", verb, code, stdout, stderr)
				}
				lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
				if verb == "validate" {
					lines = lines[:len(lines)-1] // "1 of 1 file(s) invalid"
				}
				if len(lines) != len(tc.want) {
					t.Fatalf("%s: %d problems, want %d:\n%s", verb, len(lines), len(tc.want), stderr)
				}
				for i, line := range lines {
					if !strings.HasPrefix(line, p+":") || !strings.Contains(line, tc.want[i]) {
						t.Errorf("%s: problem %d:\n got: %s\nwant: %s…%s…", verb, i, line, p, tc.want[i])
					}
					if !problemShape.MatchString(line) {
						t.Errorf("%s: problem %d is not file:line:col: key.path: message:\n%s", verb, i, line)
					}
				}
			}
		})
	}
}
