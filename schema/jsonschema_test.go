package schema

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	validator "github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/runner-dev/runner/internal/schemacheck"
)

const schemaFile = "scenario.schema.json"

// compileSchema compiles the checked-in schema as an editor would.
func compileSchema(t *testing.T) *validator.Schema {
	t.Helper()
	sch, err := schemacheck.Compile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// instance decodes YAML into the generic values a JSON Schema validator
// takes (through JSON, so numbers are json.Number as the validator expects).
func instance(t *testing.T, src string) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(src), &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := schemacheck.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// TestJSONSchemaValidates: the schema accepts valid scenarios and rejects
// the common mistakes, agreeing with Parse on each.
func TestJSONSchemaValidates(t *testing.T) {
	sch := compileSchema(t)
	quickstart, err := os.ReadFile("testdata/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	good := map[string]string{
		"quickstart": string(quickstart),
		"flows":      shopFlow,
		"url and headers": `version: 1
target: {url: "https://127.0.0.1:8443"}
driver:
  http: {method: POST, version: 1.0, keep_alive: false, body_size: 1KiB, headers: {X-Id: "42"}, tls: {insecure_skip_verify: true}}
phases:
  - {open: {rate: {from: 0/s, to: 600/m}, arrivals: poisson, on_saturation: drop}, duration: 1m30s}
  - {closed: {connections: 2, think_time: 250us, expected_rate: 50/s}, requests: 100}
`,
		// Zeros that mean exactly zero: a pause, ramps from and to 0/s, no
		// think time, a staircase from no connection.
		"zeros": head + `phases:
  - {open: {rate: 0/s}, duration: 5s}
  - {open: {rate: {from: 0/s, to: 10/s}}, duration: 5s}
  - {open: {rate: {from: 10/s, to: 0/s}, arrivals: poisson, seed: -1}, duration: 5s}
  - {closed: {connections: 1, think_time: 0s}, duration: 1s}
  - {ramp: {connections: {from: 0, to: 2, step: 1, every: 1s}}}
`,
		"units from the environment": head + `phases: [{open: {rate: "${RATE:-10/s}"}, duration: "${DUR:-5s}"}]`,
		// Numbers and booleans from the environment, quoted or not.
		"numbers from the environment": "version: 1\ntarget: {serve: http}\ndriver: {http: {keep_alive: \"${KA:-false}\"}}\n" +
			"phases:\n  - {closed: {connections: \"${CONNS:-4}\"}, requests: \"${N:-5}\"}\n  - name: b\n    open:\n      rate: 1/s\n      connections: ${C:-2}\n    duration: 1s\nrepeats: \"${R:-2}\"\n",
		"every reference target": "version: 1\ntarget: {serve: ws-gateway}\ndriver: {websocket: {message: \"{\\\"id\\\": {{seq}}}\"}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
	}
	bad := map[string]string{
		"unknown key":              head + "phases: [{arival_rate: 50/s, duration: 10s}]\n",
		"misplaced key":            "version: 1\ntarget: {serve: http}\ndriver: {http: {phases: []}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
		"rate without unit":        head + "phases: [{open: {rate: 10}, duration: 10s}]\n",
		"duration without unit":    head + "phases: [{open: {rate: 10/s}, duration: 30}]\n",
		"size without unit":        "version: 1\ntarget: {serve: http}\ndriver: {http: {body_size: 512}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
		"inflight five":            head + "phases: [{open: {rate: 10/s, inflight: five}, duration: 10s}]\n",
		"no version":               "target: {serve: http}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
		"version 2":                "version: 2\ntarget: {serve: http}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
		"two models":               head + "phases: [{closed: {connections: 1}, open: {rate: 1/s}, duration: 1s}]\n",
		"unbounded":                head + "phases: [{closed: {connections: 1}}]\n",
		"url and serve":            "version: 1\ntarget: {serve: http, url: \"http://x:1\"}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
		"no protocol":              "version: 1\ntarget: {serve: http}\ndriver: {}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
		"poison arrivals":          head + "phases: [{open: {rate: 1/s, arrivals: poison}, duration: 1s}]\n",
		"rule with extra key":      head + "phases: [{closed: {connections: 1}, duration: 1s}]\nassert: [{rule: errors == 0, phases: a}]\n",
		"zero connections":         head + "phases: [{closed: {connections: 0}, duration: 1s}]\n",
		"zero inflight":            head + "phases: [{open: {rate: 1/s, inflight: 0}, duration: 1s}]\n",
		"zero seed":                head + "phases: [{open: {rate: 1/s, seed: 0}, duration: 1s}]\n",
		"zero repeats":             head + "phases: [{closed: {connections: 1}, duration: 1s}]\nrepeats: 0\n",
		"zero requests":            head + "phases: [{closed: {connections: 1}, requests: 0}]\n",
		"staircase to zero":        head + "phases: [{ramp: {connections: {from: 0, to: 0, step: 1, every: 1s}}}]\n",
		"unknown reference target": "version: 1\ntarget: {serve: nginx}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
		"connections in words":     head + "phases: [{closed: {connections: \"four\"}, duration: 1s}]\n",
		"keep-alive in words":      "version: 1\ntarget: {serve: http}\ndriver: {http: {keep_alive: \"sometimes\"}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
	}
	env := func(name string) (string, bool) { return "", false } // defaults apply
	for name, src := range good {
		if err := sch.Validate(instance(t, src)); err != nil {
			t.Errorf("%s: the schema rejects a valid scenario: %v", name, err)
		}
		if _, err := Parse(name, []byte(src), env); err != nil {
			t.Errorf("%s: Parse rejects a valid scenario: %v", name, err)
		}
	}
	for name, src := range bad {
		if err := sch.Validate(instance(t, src)); err == nil {
			t.Errorf("%s: the schema accepts an invalid scenario", name)
		}
		if _, err := Parse(name, []byte(src), env); err == nil {
			t.Errorf("%s: Parse accepts an invalid scenario", name)
		}
	}
}

// shipped are the scenarios users meet first, by file: every shipped
// scenario, the recipes' example and every `runner init` starter.
func shipped(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, glob := range []string{"../scenarios/*.yaml", "../deploy/scenario.yaml", "../cmd/runner/starters/*.yaml"} {
		files, err := filepath.Glob(glob)
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no files (%v)", glob, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out[f] = string(b)
		}
	}
	return out
}

// readmeExamples are the README's YAML examples: whole scenarios as
// written, and the fragments (a target and its driver) completed with a
// version and a phase as a reader would.
func readmeExamples(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		src := m[1]
		if !regexp.MustCompile(`(?m)^version:`).MatchString(src) {
			src = "version: 1\n" + src
		}
		if !regexp.MustCompile(`(?m)^phases:`).MatchString(src) {
			src += "\nphases: [{closed: {connections: 1}, duration: 1s}]\n"
		}
		out[fmt.Sprintf("README.md yaml block %d", i+1)] = src
	}
	if len(out) < 3 {
		t.Fatalf("%d YAML examples in the README, want its scenario, WebSocket and frame examples", len(out))
	}
	return out
}

// The schema accepts every scenario runner ships or shows, as the loader
// does: an editor puts no red mark on a file `runner validate` accepts.
func TestJSONSchemaAcceptsWhatShips(t *testing.T) {
	sch := compileSchema(t)
	env := func(name string) (string, bool) {
		v, ok := map[string]string{"TARGET_URL": "http://127.0.0.1:8080"}[name]
		return v, ok
	}
	for name, src := range shipped(t) {
		if err := sch.Validate(instance(t, src)); err != nil {
			t.Errorf("%s: the schema rejects it: %v", name, err)
		}
		if _, err := Parse(name, []byte(src), env); err != nil {
			t.Errorf("%s: the loader rejects it: %v", name, err)
		}
	}
	for name, src := range readmeExamples(t) {
		if err := sch.Validate(instance(t, src)); err != nil {
			t.Errorf("%s: the schema rejects it: %v\n%s", name, err, src)
		}
	}
}
