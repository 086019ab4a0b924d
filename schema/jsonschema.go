package schema

import (
	_ "embed" // types.go is embedded for its doc comments
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"
)

//go:generate go run ./gen -o scenario.schema.json

// typesSource is the source of the scenario types; its doc comments become
// the descriptions that editors show, so there is one text to maintain.
//
//go:embed types.go
var typesSource string

// JSONSchema returns the JSON Schema (draft 2020-12) of scenario files,
// generated from the Go types with their yaml key names and doc comments,
// indented, with a final newline. scenario.schema.json holds its output;
// `go generate ./schema/` rewrites it.
//
// The schema is for editors: it knows the keys, types, unit syntaxes and
// enumerations, but Parse remains the judge (it checks ranges, references
// between phases and rules). It accepts what Parse accepts: a string
// holding ${...} wherever the loader interpolates before it reads the
// value, a unit-bearing string and a number or boolean alike (a quoted
// "${CONNS:-4}" for connections), whose value is only known when the file
// is loaded.
func JSONSchema() ([]byte, error) {
	comments, err := typeComments()
	if err != nil {
		return nil, fmt.Errorf("json schema: %w", err)
	}
	r := &jsonschema.Reflector{FieldNameTag: "yaml", ExpandedStruct: true, CommentMap: comments}
	s := r.Reflect(&Scenario{})
	interpolable(s)
	for _, d := range s.Definitions {
		interpolable(d)
	}
	s.Title = "runner scenario"
	s.Description = "A load-test scenario for runner: what load to offer (phases), how (target, driver) and what must hold (assert)."
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("json schema: %w", err)
	}
	return append(unescapeHTML(b), '\n'), nil
}

// unescapeHTML undoes encoding/json's escaping of <, > and & in strings
// (Schema's own MarshalJSON escapes them, whatever the encoder is told),
// so that descriptions read `p99 < 20ms` in the file. An escape is only
// undone where its backslash starts an escape sequence.
func unescapeHTML(b []byte) []byte {
	escapes := map[string]byte{`\u003c`: '<', `\u003e`: '>', `\u0026`: '&'}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if i+6 <= len(b) {
			if c, ok := escapes[string(b[i:i+6])]; ok {
				out = append(out, c)
				i += 5
				continue
			}
		}
		out = append(out, b[i], b[i+1]) // any other escape, e.g. \\ or \"
		i++
	}
	return out
}

// typeComments maps "pkgpath.Type" and "pkgpath.Type.Field" to the doc
// comments in types.go, on one line each.
func typeComments() (map[string]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "types.go", typesSource, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	pkg := reflect.TypeFor[Scenario]().PkgPath()
	text := func(groups ...*ast.CommentGroup) string {
		for _, g := range groups {
			if t := strings.Join(strings.Fields(g.Text()), " "); t != "" {
				return t
			}
		}
		return ""
	}
	m := map[string]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			m[pkg+"."+ts.Name.Name] = text(ts.Doc, gd.Doc)
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, fl := range st.Fields.List {
				for _, name := range fl.Names {
					m[pkg+"."+ts.Name.Name+"."+name.Name] = text(fl.Doc, fl.Comment)
				}
			}
		}
	}
	return m, nil
}

// Patterns of the unit syntaxes, anchored. Each also admits any string
// containing ${...}, whose value is only known when the file is loaded.
const (
	durationNumber  = `(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h)`
	durationPattern = `^(?:(?:` + durationNumber + `)+|.*\$\{.*)$`
	ratePattern     = `^(?:(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)/[sm]|.*\$\{.*)$`
	sizePattern     = `^(?:[0-9]+(?:B|KiB|MiB|GiB)|.*\$\{.*)$`
)

// JSONSchema describes Duration in the JSON Schema: a string with a unit.
func (Duration) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:        "string",
		Pattern:     durationPattern,
		Description: "A duration with an explicit unit (ns, us, ms, s, m, h), e.g. 250us, 5ms, 2s, 1m30s.",
		Examples:    []any{"250ms", "2s", "1m"},
	}
}

// JSONSchema describes Rate in the JSON Schema: N/s or N/m.
func (Rate) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:        "string",
		Pattern:     ratePattern,
		Description: "A rate with an explicit unit: N/s (per second) or N/m (per minute), e.g. 300/s, 600/m; at most " + MaxRate.String() + " (one generator cannot pace more).",
		Examples:    []any{"100/s", "600/m"},
	}
}

// JSONSchema describes Size in the JSON Schema: bytes with a binary unit.
func (Size) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:        "string",
		Pattern:     sizePattern,
		Description: "A byte count with an explicit unit: B, KiB, MiB or GiB, e.g. 512KiB.",
		Examples:    []any{"100B", "512KiB", "1MiB"},
	}
}

// JSONSchema describes RateSpec in the JSON Schema: a rate, or a ramp
// {from, to} between two rates.
func (RateSpec) JSONSchema() *jsonschema.Schema {
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

// JSONSchema describes Rule in the JSON Schema: an expression, or
// {rule, phase} to scope it to one phase.
func (Rule) JSONSchema() *jsonschema.Schema {
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

// JSONSchemaExtend adds to the Phase schema that exactly one load model is
// set and that the phase is bounded.
func (Phase) JSONSchemaExtend(s *jsonschema.Schema) {
	s.AllOf = []*jsonschema.Schema{
		{OneOf: requiredEach("closed", "open", "ramp")},
		{AnyOf: requiredEach("duration", "requests", "ramp")},
	}
}

// JSONSchemaExtend adds to the Open schema that an explicit seed is not 0
// (0 would read as "the default seed"; see Open.Seed).
func (Open) JSONSchemaExtend(s *jsonschema.Schema) {
	if v, ok := s.Properties.Get("seed"); ok {
		v.Not = &jsonschema.Schema{Const: 0}
	}
}

// JSONSchemaExtend adds to the Target schema that exactly one of url and
// serve is set, and the reference targets serve names.
func (Target) JSONSchemaExtend(s *jsonschema.Schema) {
	s.OneOf = requiredEach("url", "serve")
	if v, ok := s.Properties.Get("serve"); ok {
		v.Enum = nil
		for _, k := range serveKinds {
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

// JSONSchemaExtend lets the HTTP version be written unquoted: YAML reads
// `version: 1.1` as a number, and Parse takes it as "1.1".
func (HTTP) JSONSchemaExtend(s *jsonschema.Schema) {
	if v, ok := s.Properties.Get("version"); ok {
		v.Type = ""
		v.Enum = []any{"1.1", "1.0", 1.1, 1.0}
	}
}

// JSONSchemaExtend adds to the Driver schema that exactly one protocol is set.
func (Driver) JSONSchemaExtend(s *jsonschema.Schema) {
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
