package main

import (
	"fmt"
	"reflect"

	"github.com/invopop/jsonschema"

	"github.com/runner-dev/runner/schema"
)

// Scenario returns the JSON Schema (draft 2020-12) of scenario files,
// generated from the Go types of package schema with their yaml key names
// and the doc comments of root/schema/types.go (root is the module's
// directory), indented, with a final newline. schema/scenario.schema.json
// holds its output; `go generate ./schema/` rewrites it.
//
// The schema is for editors: it knows the keys, types, unit syntaxes and
// enumerations, but schema.Parse remains the judge (it checks ranges,
// references between phases and rules). It accepts what Parse accepts: a
// string holding ${...} wherever the loader interpolates before it reads
// the value, a unit-bearing string and a number or boolean alike (a quoted
// "${CONNS:-4}" for connections), whose value is only known when the file
// is loaded.
func Scenario(root string) ([]byte, error) {
	comments, err := comments(root, []string{"schema/types.go"})
	if err != nil {
		return nil, fmt.Errorf("scenario schema: %w", err)
	}
	custom := map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[schema.Duration](): durationSchema(),
		reflect.TypeFor[schema.Rate]():     rateSchema(),
		reflect.TypeFor[schema.Size]():     sizeSchema(),
		reflect.TypeFor[schema.RateSpec](): rateSpecSchema(),
		reflect.TypeFor[schema.Rule]():     ruleSchema(),
	}
	r := &jsonschema.Reflector{FieldNameTag: "yaml", ExpandedStruct: true, CommentMap: comments, Mapper: refs(custom)}
	s := r.Reflect(&schema.Scenario{})
	addDefinitions(s, custom)
	for name, extend := range map[string]func(*jsonschema.Schema){
		"Phase": extendPhase, "Open": extendOpen, "Target": extendTarget, "HTTP": extendHTTP, "Driver": extendDriver,
	} {
		d, ok := s.Definitions[name]
		if !ok {
			return nil, fmt.Errorf("scenario schema: no definition %s to extend", name)
		}
		extend(d)
	}
	interpolable(s)
	for _, d := range s.Definitions {
		interpolable(d)
	}
	s.Title = "runner scenario"
	s.Description = "A load-test scenario for runner: what load to offer (phases), how (target, driver) and what must hold (assert)."
	return marshal(s)
}

// Patterns of the unit syntaxes, anchored. Each also admits any string
// containing ${...}, whose value is only known when the file is loaded.
const (
	durationNumber  = `(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h)`
	durationPattern = `^(?:(?:` + durationNumber + `)+|.*\$\{.*)$`
	ratePattern     = `^(?:(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)/[sm]|.*\$\{.*)$`
	sizePattern     = `^(?:[0-9]+(?:B|KiB|MiB|GiB)|.*\$\{.*)$`
)

// durationSchema describes schema.Duration: a string with a unit.
func durationSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:        "string",
		Pattern:     durationPattern,
		Description: "A duration with an explicit unit (ns, us, ms, s, m, h), e.g. 250us, 5ms, 2s, 1m30s.",
		Examples:    []any{"250ms", "2s", "1m"},
	}
}

// rateSchema describes schema.Rate: N/s or N/m.
func rateSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:        "string",
		Pattern:     ratePattern,
		Description: "A rate with an explicit unit: N/s (per second) or N/m (per minute), e.g. 300/s, 600/m; at most " + schema.MaxRate.String() + " (one generator cannot pace more).",
		Examples:    []any{"100/s", "600/m"},
	}
}

// sizeSchema describes schema.Size: bytes with a binary unit.
func sizeSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:        "string",
		Pattern:     sizePattern,
		Description: "A byte count with an explicit unit: B, KiB, MiB or GiB, e.g. 512KiB.",
		Examples:    []any{"100B", "512KiB", "1MiB"},
	}
}

// rateSpecSchema describes schema.RateSpec: a rate, or a ramp {from, to}
// between two rates.
func rateSpecSchema() *jsonschema.Schema {
	rate := &jsonschema.Schema{Ref: "#/$defs/Rate"}
	ramp := &jsonschema.Schema{
		Type:                 "object",
		Description:          "A linear ramp of the arrival rate over the phase's duration.",
		Properties:           jsonschema.NewProperties(),
		Required:             []string{"from", "to"},
		AdditionalProperties: jsonschema.FalseSchema,
	}
	ramp.Properties.Set("from", &jsonschema.Schema{Ref: "#/$defs/Rate", Description: "The rate at the start of the phase."})
	ramp.Properties.Set("to", &jsonschema.Schema{Ref: "#/$defs/Rate", Description: "The rate at the end of the phase's duration."})
	return &jsonschema.Schema{
		Description: "The offered arrival rate: a constant (300/s) or a linear ramp ({from: 10/s, to: 100/s}) over the phase's duration.",
		OneOf:       []*jsonschema.Schema{rate, ramp},
	}
}

// ruleSchema describes schema.Rule: an expression, or {rule, phase} to
// scope it to one phase.
func ruleSchema() *jsonschema.Schema {
	one := uint64(1)
	scoped := &jsonschema.Schema{
		Type:                 "object",
		Properties:           jsonschema.NewProperties(),
		Required:             []string{"rule"},
		AdditionalProperties: jsonschema.FalseSchema,
	}
	scoped.Properties.Set("rule", &jsonschema.Schema{Type: "string", MinLength: &one, Description: "The rule's expression."})
	scoped.Properties.Set("phase", &jsonschema.Schema{Type: "string", MinLength: &one, Description: "The name of the one (non-warmup) phase the rule judges."})
	return &jsonschema.Schema{
		Description: "A rule over the metrics, e.g. p99 < 20ms or errors == 0, judged on every non-warmup phase; or {rule: ..., phase: NAME} to judge one phase.",
		OneOf:       []*jsonschema.Schema{{Type: "string", MinLength: &one}, scoped},
	}
}

// extendPhase adds to the Phase schema that exactly one load model is set
// and that the phase is bounded.
func extendPhase(s *jsonschema.Schema) {
	s.AllOf = []*jsonschema.Schema{
		{OneOf: requiredEach("closed", "open", "ramp")},
		{AnyOf: requiredEach("duration", "requests", "ramp")},
	}
}

// extendOpen adds to the Open schema that an explicit seed is not 0 (0
// would read as "the default seed"; see schema.Open.Seed).
func extendOpen(s *jsonschema.Schema) {
	if v, ok := s.Properties.Get("seed"); ok {
		v.Not = &jsonschema.Schema{Const: 0}
	}
}

// extendTarget adds to the Target schema that exactly one of url and
// serve is set, and the reference targets serve names.
func extendTarget(s *jsonschema.Schema) {
	s.OneOf = requiredEach("url", "serve")
	if v, ok := s.Properties.Get("serve"); ok {
		v.Enum = nil
		for _, k := range schema.ServeKinds() {
			v.Enum = append(v.Enum, k)
		}
	}
}

// interpolated is the schema of a string holding ${...}: a value the
// loader interpolates from the environment before it reads it.
var interpolated = &jsonschema.Schema{Type: "string", Pattern: `\$\{`, Description: "A value from the environment, ${NAME} or ${NAME:-default}, read once the file is loaded."}

// interpolable lets every number and boolean property of s (directly,
// not through a $ref) also be a string holding ${...}, as the loader
// reads it: the property's own schema becomes one branch of an anyOf,
// its description kept on the whole.
func interpolable(s *jsonschema.Schema) {
	if s == nil || s.Properties == nil {
		return
	}
	for pair := s.Properties.Oldest(); pair != nil; pair = pair.Next() {
		v := pair.Value
		switch v.Type {
		case "integer", "number", "boolean":
			own := *v
			desc := own.Description
			own.Description = ""
			*v = jsonschema.Schema{Description: desc, AnyOf: []*jsonschema.Schema{&own, interpolated}}
		}
	}
}

// extendHTTP lets the HTTP version be written unquoted: YAML reads
// `version: 1.1` (or 2) as a number, and Parse takes it as "1.1" ("2").
func extendHTTP(s *jsonschema.Schema) {
	if v, ok := s.Properties.Get("version"); ok {
		v.Type = ""
		v.Enum = []any{"1.1", "1.0", "2", 1.1, 1.0, 2}
	}
}

// extendDriver adds to the Driver schema that exactly one protocol is set.
func extendDriver(s *jsonschema.Schema) {
	one := uint64(1)
	s.MinProperties, s.MaxProperties = &one, &one
}

func requiredEach(keys ...string) []*jsonschema.Schema {
	var list []*jsonschema.Schema
	for _, k := range keys {
		list = append(list, &jsonschema.Schema{Required: []string{k}})
	}
	return list
}
