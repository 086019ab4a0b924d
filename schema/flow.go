package schema

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/runner-dev/runner/internal/suggest"
)

// MaxFlowWeight bounds the sum of the flows' weights (the engine's
// mix cycle holds one entry per unit of weight).
const MaxFlowWeight = 1_000_000

// MaxFlowSteps bounds the steps of all flows together: each step keeps
// its own figures per (repeat, phase), dense histograms of about 190 KiB
// each, and writing them as JSON costs more. 200 one-step flows over 3
// repeats peaked at 4.4 GB (2.7 GB once a step's histograms were
// allocated as samples came); 50 peak at 650 MB.
const MaxFlowSteps = 50

// Flow is one flow of an HTTP mix: an ordered list of steps that one
// virtual user (one connection) runs per arrival, one iteration.
type Flow struct {
	// Name names the flow in reports: letters, digits and _, not
	// starting with a digit.
	Name string `yaml:"name" json:"name"`
	// Weight is the flow's share of the mix, ≥ 1; default 1. In any
	// Σweights consecutive iterations the flow runs exactly Weight times.
	Weight int `yaml:"weight,omitempty" json:"weight,omitempty" jsonschema:"minimum=1"`
	// Steps are the flow's requests, in order; at least one.
	Steps []FlowStep `yaml:"steps" json:"steps"`
}

// FlowStep is one request of a flow. Method, path, headers, body and
// success are as for a single request (driver.http); headers here are
// added to (and override) the driver's. Templates may read
// {{seq}} (the iteration's number), {{data.NAME}} and the values earlier
// steps of the same flow captured, as {{NAME}}.
type FlowStep struct {
	// Name names the step in rules (step.NAME.p99) and reports: letters,
	// digits and _, not starting with a digit; unique across the flows.
	Name string `yaml:"name" json:"name"`
	// Method is the request method; default GET.
	Method string `yaml:"method,omitempty" json:"method,omitempty"`
	// Path is the request target, a template; default "/".
	Path string `yaml:"path,omitempty" json:"path,omitempty"`
	// Headers are sent with this step, over the driver's; values are templates.
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	// Body is a template for the request body; empty means no body.
	Body string `yaml:"body,omitempty" json:"body,omitempty"`
	// Success is an expr rule over status, headers and body, as
	// driver.http.success; default a 2xx status or 304.
	Success string `yaml:"success,omitempty" json:"success,omitempty"`
	// ThinkTime is the pause between the previous step's completion and
	// this step (ignored on the first step: it is due at the arrival).
	ThinkTime Duration `yaml:"think_time,omitempty" json:"think_time,omitempty"`
	// Capture takes values from the response, by name, for later steps;
	// a capture that does not match fails the step (class capture, code
	// capture:NAME).
	Capture map[string]Capture `yaml:"capture,omitempty" json:"capture,omitempty"`
}

// Capture says where a value is taken from in a response: exactly one
// of JSON, Header or Regex.
type Capture struct {
	// JSON is a path into the JSON body in gjson's syntax: token,
	// items.0.id, user.name.
	JSON string `yaml:"json,omitempty" json:"json,omitempty"`
	// Header is a response header's name; its first value is taken.
	Header string `yaml:"header,omitempty" json:"header,omitempty"`
	// Regex is an RE2 expression over the body; its first group is
	// taken, or the whole match when it has none.
	Regex string `yaml:"regex,omitempty" json:"regex,omitempty"`
}

// identifier is what flow, step and capture names must be, so that rules
// can read step.NAME.p99 and templates {{NAME}}.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reservedVars are template actions that are not captures.
var reservedVars = []string{"seq", "bytes", "data"}

// templateAction finds {{ … }} actions in a template.
var templateAction = regexp.MustCompile(`\{\{\s*([^{}]*?)\s*\}\}`)

// validateFlows checks driver.http.flows: names, weights, steps, think
// times, captures, and that every {{NAME}} a step reads was captured by
// an earlier step of its flow.
func (l *loader) validateFlows(h *HTTP) {
	const p = "driver.http.flows"
	if !l.ok(p) {
		return
	}
	if len(h.Flows) == 0 {
		l.failf(p, "expected at least one flow; leave flows out for a single request")
		return
	}
	for _, key := range []string{"method", "path", "body", "body_size", "success"} {
		if l.has("driver.http." + key) {
			l.failf("driver.http."+key, "%s is given per step when there are flows (driver.http.flows[].steps[].%s)", key, key)
		}
	}
	steps := 0
	for _, f := range h.Flows {
		steps += len(f.Steps)
	}
	if steps > MaxFlowSteps {
		l.failf(p, "%d steps in all; at most %d (each keeps its own figures)", steps, MaxFlowSteps)
		return
	}
	flowNames := map[string]bool{}
	stepNames := map[string]string{}
	total := 0
	for i, f := range h.Flows {
		fp := index(p, i)
		if l.ok(fp+".name") && l.checkIdentifier(fp+".name", f.Name, "flow") {
			if flowNames[f.Name] {
				l.failf(fp+".name", "flow %q is named twice; flow names are unique", f.Name)
			}
			flowNames[f.Name] = true
		}
		if l.ok(fp+".weight") && f.Weight < 1 {
			l.failf(fp+".weight", "expected a weight of at least 1, found %d", f.Weight)
		}
		if total += max(f.Weight, 1); total > MaxFlowWeight && l.has(fp+".weight") {
			l.failf(fp+".weight", "the flows' weights add up to more than %d", MaxFlowWeight)
		}
		if l.ok(fp+".steps") && len(f.Steps) == 0 {
			l.failf(fp+".steps", "expected at least one step")
		}
		captured := map[string]bool{}
		for j, st := range f.Steps {
			sp := index(fp+".steps", j)
			if l.ok(sp+".name") && l.checkIdentifier(sp+".name", st.Name, "step") {
				if other, dup := stepNames[st.Name]; dup {
					l.failf(sp+".name", "step %q is also in flow %q: step names are unique across the flows (rules read step.%s.*)", st.Name, other, st.Name)
				}
				stepNames[st.Name] = f.Name
			}
			if j == 0 && l.has(sp+".think_time") {
				l.failf(sp+".think_time", "the first step is due at the arrival itself; a pause before it is the phase's think_time (closed) or the arrival rate (open)")
			}
			l.validateStep(sp, &st, captured)
			for name := range st.Capture {
				captured[name] = true
			}
		}
	}
}

// validateStep checks one step at sp; captured holds what earlier steps
// of its flow capture.
func (l *loader) validateStep(sp string, st *FlowStep, captured map[string]bool) {
	l.checkMethod(sp+".method", st.Method)
	if l.ok(sp + ".path") {
		l.checkPath(sp+".path", st.Path)
	}
	if l.ok(sp+".success") && strings.TrimSpace(st.Success) == "" {
		l.failf(sp+".success", "empty rule; leave success out to use the default (a successful status)")
	}
	l.checkThinkTime(sp+".think_time", st.ThinkTime)
	l.checkHeaders(sp, st.Headers)
	for _, name := range slices.Sorted(maps.Keys(st.Capture)) {
		cp := sp + ".capture." + name
		c := st.Capture[name]
		if !l.checkIdentifier(cp, name, "capture") {
			continue
		}
		if slices.Contains(reservedVars, name) {
			l.failf(cp, "%q is a template action; name the capture otherwise", name)
		}
		kinds := 0
		for _, k := range []string{c.JSON, c.Header, c.Regex} {
			if k != "" {
				kinds++
			}
		}
		switch {
		case kinds != 1:
			l.failf(cp, "expected exactly one of json, header or regex, found %d", kinds)
		case c.Header != "" && !isToken(c.Header):
			l.failf(cp+".header", "invalid header name %s", quote(c.Header))
		case c.Regex != "":
			// Its {{…}} holes are values, quoted when inserted: check
			// the expression with each as a plain x.
			if _, err := regexp.Compile(templateAction.ReplaceAllLiteralString(c.Regex, "x")); err != nil {
				l.failf(cp+".regex", "not an RE2 expression: %v", err)
			}
		}
	}
	// Every {{NAME}} read here must come from an earlier step.
	check := func(path, tpl string) {
		for _, m := range templateAction.FindAllStringSubmatch(tpl, -1) {
			name := m[1]
			if name == "seq" || strings.HasPrefix(name, "data.") {
				continue
			}
			if !identifier.MatchString(name) {
				l.failf(path, "unknown template action {{%s}}; expected {{seq}}, {{data.NAME}} or a name an earlier step captured", name)
				continue
			}
			if !captured[name] {
				known := slices.Sorted(maps.Keys(captured))
				hint := "no earlier step of this flow captures anything"
				if len(known) > 0 {
					hint = "earlier steps capture " + strings.Join(known, ", ")
					if near := suggest.Nearest(name, known, suggest.Limit(name)); len(near) > 0 {
						hint = fmt.Sprintf("did you mean {{%s}}? (%s)", near[0], hint)
					}
				}
				l.failf(path, "{{%s}} is not captured by an earlier step of this flow: %s", name, hint)
			}
		}
	}
	check(sp+".path", st.Path)
	check(sp+".body", st.Body)
	for _, name := range slices.Sorted(maps.Keys(st.Headers)) {
		check(sp+".headers."+name, st.Headers[name])
	}
	// A capture's expression reads what the steps before it capture, not
	// its own step's.
	for _, name := range slices.Sorted(maps.Keys(st.Capture)) {
		cp := sp + ".capture." + name
		check(cp+".json", st.Capture[name].JSON)
		check(cp+".regex", st.Capture[name].Regex)
	}
}

// checkIdentifier checks that a flow, step or capture name is an
// identifier; false when it is not.
func (l *loader) checkIdentifier(path, v, what string) bool {
	if identifier.MatchString(v) {
		return true
	}
	l.failf(path, "expected a %s name of letters, digits and _ (not starting with a digit), found %s", what, quote(v))
	return false
}
