package main

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/metric"
	"github.com/runner-dev/runner/engine/rules"
	"github.com/runner-dev/runner/reports"
	"github.com/runner-dev/runner/schema"
)

// Result returns the JSON Schema (draft 2020-12) of the JSON result
// document (reports.Run as reports.WriteJSON writes it), generated from
// the Go types with their json key names and the doc comments of their
// packages under root (the module's directory), indented, with a final
// newline. reports/result.schema.json holds its output; `go generate
// ./reports/` rewrites it.
//
// It is strict: an object has exactly the keys its type writes
// (additionalProperties false), a key without omitempty is required, and
// null is allowed only where encoding/json writes it (a nil pointer, slice
// or map without omitempty). The types that write their own JSON have a
// schema here: the unit strings of the scenario (schema.Duration, Rate,
// Size, RateSpec), a distribution (measure.Dist) and an interval's
// (measure.Interval), a rule's status
// (rules.Status) and the metrics with their catalogue extras
// (engine.Metrics, metric.All). format_version is the constant
// reports.FormatVersion.
func Result(root string) ([]byte, error) {
	types, err := reachable(reflect.TypeFor[reports.Run]())
	if err != nil {
		return nil, fmt.Errorf("result schema: %w", err)
	}
	files, err := sourceFiles(root, types)
	if err != nil {
		return nil, fmt.Errorf("result schema: %w", err)
	}
	comments, err := comments(root, files)
	if err != nil {
		return nil, fmt.Errorf("result schema: %w", err)
	}
	custom := map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[schema.Duration]():  unitString("A duration in the scenario's unit syntax, e.g. 250ms, 2s, 1m30s.", "^(?:"+durationNumber+")+$"),
		reflect.TypeFor[schema.Rate]():      unitString("A rate in the scenario's unit syntax: N/s or N/m, e.g. 300/s.", `^(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)/[sm]$`),
		reflect.TypeFor[schema.Size]():      unitString("A byte count in the scenario's unit syntax: B, KiB, MiB or GiB, e.g. 512KiB.", `^[0-9]+(?:B|KiB|MiB|GiB)$`),
		reflect.TypeFor[schema.RateSpec]():  resultRateSpec(),
		reflect.TypeFor[measure.Dist]():     distSchema(),
		reflect.TypeFor[measure.Interval](): intervalSchema(),
		reflect.TypeFor[rules.Status]():     statusSchema(),
	}
	names := defNames(types)
	r := &jsonschema.Reflector{ExpandedStruct: true, CommentMap: comments, Mapper: refs(custom), Namer: func(t reflect.Type) string { return names[t] }}
	s := r.Reflect(&reports.Run{})
	addDefinitions(s, custom)
	for _, t := range types {
		def := s.Definitions[names[t]]
		if t == reflect.TypeFor[reports.Run]() {
			def = s
		}
		if t.Kind() != reflect.Struct || def == nil || custom[t] != nil {
			continue
		}
		if err := nullable(def, t); err != nil {
			return nil, fmt.Errorf("result schema: %w", err)
		}
	}
	m, ok := s.Definitions["Metrics"]
	if !ok {
		return nil, fmt.Errorf("result schema: no definition of engine.Metrics")
	}
	metricExtras(m)
	if v, ok := s.Properties.Get("format_version"); ok {
		v.Pattern = `^[0-9]+\.[0-9]+$`
		v.Examples = []any{reports.FormatVersion}
	}
	s.ID = "https://github.com/runner-dev/runner/reports/result"
	s.Title = "runner result " + reports.FormatVersion
	s.Description = "The JSON result document of one run of one scenario (runner run --json, runner merge): the scenario, the plan, the environment, every phase's measurements and the verdict. Durations are integer nanoseconds in keys named *_ns, except the legacy keys the README's Units paragraph lists."
	return marshal(s)
}

// unitString is the schema of a string in a unit syntax.
func unitString(desc, pattern string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Pattern: pattern, Description: desc}
}

// resultRateSpec is the schema of schema.RateSpec as it marshals: a
// constant rate as its string, a ramp as {from, to}.
func resultRateSpec() *jsonschema.Schema {
	ramp := &jsonschema.Schema{
		Type:                 "object",
		Properties:           jsonschema.NewProperties(),
		Required:             []string{"from", "to"},
		AdditionalProperties: jsonschema.FalseSchema,
	}
	ramp.Properties.Set("from", &jsonschema.Schema{Ref: "#/$defs/Rate"})
	ramp.Properties.Set("to", &jsonschema.Schema{Ref: "#/$defs/Rate"})
	return &jsonschema.Schema{
		Description: "The offered arrival rate: a constant rate, or a ramp {from, to} over the phase's duration.",
		OneOf:       []*jsonschema.Schema{{Ref: "#/$defs/Rate"}, ramp},
	}
}

// distSchema is the schema of measure.Dist as it marshals (its distJSON).
func distSchema() *jsonschema.Schema {
	s := &jsonschema.Schema{
		Type:                 "object",
		Description:          "A distribution of durations: exact statistics in integer nanoseconds and the HdrHistogram of the values in microseconds (V2 compressed, base64).",
		Properties:           jsonschema.NewProperties(),
		AdditionalProperties: jsonschema.FalseSchema,
	}
	nonNegative := func(desc string) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "integer", Minimum: "0", Description: desc}
	}
	s.Properties.Set("count", nonNegative("The number of values."))
	s.Properties.Set("min_ns", nonNegative("The smallest value, ns; 0 when there is none."))
	s.Properties.Set("max_ns", nonNegative("The largest value, ns; 0 when there is none."))
	s.Properties.Set("sum_ns", nonNegative("The exact sum of the values, ns."))
	s.Properties.Set("sum_sq_ns2", &jsonschema.Schema{Type: "string", Pattern: "^[0-9]+$", Description: "The exact sum of the squared values, ns², as a decimal string (it passes 2^53)."})
	s.Properties.Set("clamped", nonNegative("How many values were above the histogram's range and recorded at its top."))
	s.Properties.Set("hdr_us", &jsonschema.Schema{Type: "string", Description: "The histogram, values in µs, in HdrHistogram's V2 compressed base64 encoding (HISTF...)."})
	for p := s.Properties.Oldest(); p != nil; p = p.Next() {
		s.Required = append(s.Required, p.Key)
	}
	return s
}

// intervalSchema is the schema of measure.Interval as it marshals (its
// intervalJSON): the interval's bounds and its ok response times.
func intervalSchema() *jsonschema.Schema {
	s := &jsonschema.Schema{
		Type:                 "object",
		Description:          "The ok response times of the requests that completed in one interval [start_ns, start_ns+length_ns) of the phase (offsets from the phase start).",
		Properties:           jsonschema.NewProperties(),
		Required:             []string{"start_ns", "length_ns", "response"},
		AdditionalProperties: jsonschema.FalseSchema,
	}
	s.Properties.Set("start_ns", &jsonschema.Schema{Type: "integer", Minimum: "0", Description: "The interval's start, ns from the phase start; a multiple of length_ns."})
	s.Properties.Set("length_ns", &jsonschema.Schema{Type: "integer", Minimum: "1", Description: "The interval's length, ns; one length for every interval of a phase."})
	s.Properties.Set("response", &jsonschema.Schema{Ref: "#/$defs/Dist"})
	return s
}

// statusSchema is the schema of rules.Status as it marshals: its name.
func statusSchema() *jsonschema.Schema {
	var names []any
	for _, st := range []rules.Status{rules.Pass, rules.Inconclusive, rules.Error, rules.Fail} {
		names = append(names, st.String())
	}
	return &jsonschema.Schema{Type: "string", Enum: names, Description: "A judgement: pass, inconclusive, error or fail."}
}

// metricExtras adds to the Metrics schema the catalogue metrics without a
// field of their own (engine.Metrics.Extra: their key's first part is no
// property), which it writes under their JSON keys as they are: a number,
// or null when it has no value. They are not required: a report from
// before a metric existed lacks it.
func metricExtras(m *jsonschema.Schema) {
	for _, d := range metric.All() {
		first, _, _ := strings.Cut(d.JSON, ".")
		if _, ok := m.Properties.Get(first); ok || d.JSON == "" {
			continue
		}
		m.Properties.Set(d.JSON, &jsonschema.Schema{
			AnyOf:       []*jsonschema.Schema{{Type: "number"}, {Type: "null"}},
			Description: "The catalogue metric " + d.JSON + " (engine/metric), in its unit; null when it has no value.",
		})
	}
}

// nullable lets each property of def whose field in the struct type t
// encoding/json may write as null (a pointer, slice or map without
// omitempty) be null, keeping its own schema as the other branch.
func nullable(def *jsonschema.Schema, t reflect.Type) error {
	fs, err := fields(t)
	for _, f := range fs {
		name, omit := jsonName(f)
		switch f.Type.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		default:
			continue
		}
		if omit || name == "" {
			continue
		}
		v, ok := def.Properties.Get(name)
		if !ok || v.Type == "" && v.Ref == "" {
			continue // no schema to keep: anything goes already
		}
		own := *v
		desc := own.Description
		own.Description = ""
		*v = jsonschema.Schema{Description: desc, AnyOf: []*jsonschema.Schema{&own, {Type: "null"}}}
	}
	return err
}

// fields are the exported fields of struct type t that encoding/json
// writes. An embedded field is refused (the schema would have to promote
// its fields as encoding/json does), and none is in the result today.
func fields(t reflect.Type) ([]reflect.StructField, error) {
	var out []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _ := jsonName(f); name == "" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous {
			return nil, fmt.Errorf("%s embeds %s: promote its fields by hand", t, f.Type)
		}
		out = append(out, f)
	}
	return out, nil
}

// jsonName is f's key in encoding/json ("" when it is not written) and
// whether it has omitempty or omitzero.
func jsonName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	omit := slices.ContainsFunc(strings.Split(opts, ","), func(o string) bool { return o == "omitempty" || o == "omitzero" })
	return name, omit
}

// reachable lists the named types of the module reachable from t through
// the fields encoding/json writes, t first, each once.
func reachable(t reflect.Type) ([]reflect.Type, error) {
	var out []reflect.Type
	var errs []error
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if seen[t] {
			return
		}
		seen[t] = true
		if t.Name() != "" && strings.HasPrefix(t.PkgPath(), modulePath+"/") {
			out = append(out, t)
		}
		if t.Kind() != reflect.Struct || t == reflect.TypeFor[measure.Dist]() || t == reflect.TypeFor[measure.Interval]() {
			return
		}
		fs, err := fields(t)
		errs = append(errs, err)
		for _, f := range fs {
			walk(f.Type)
		}
	}
	walk(t)
	return out, errors.Join(errs...)
}

// defNames names each type's definition in the schema: its Go name, or
// where two packages declare the same name (engine.Verdict and
// rules.Verdict), its package's name, a dot and its Go name.
func defNames(types []reflect.Type) map[reflect.Type]string {
	count := map[string]int{}
	for _, t := range types {
		count[t.Name()]++
	}
	names := map[reflect.Type]string{}
	for _, t := range types {
		names[t] = t.Name()
		if count[t.Name()] > 1 {
			names[t] = path.Base(t.PkgPath()) + "." + t.Name()
		}
	}
	return names
}

// sourceFiles lists the non-test Go files, relative to root, of the
// packages that declare types: where their doc comments are.
func sourceFiles(root string, types []reflect.Type) ([]string, error) {
	var files []string
	dirs := map[string]bool{}
	for _, t := range types {
		dir := strings.TrimPrefix(t.PkgPath(), modulePath+"/")
		if dirs[dir] {
			continue
		}
		dirs[dir] = true
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
				files = append(files, filepath.Join(dir, n))
			}
		}
	}
	slices.Sort(files)
	return files, nil
}
