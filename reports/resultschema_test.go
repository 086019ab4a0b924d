package reports

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	validator "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/runner-dev/runner/internal/schemacheck"
)

const (
	resultSchemaFile = "result.schema.json"
	formatFile       = "testdata/result-format.txt"
)

// resultSchema compiles result.schema.json, its formats asserted.
func resultSchema(t *testing.T) *validator.Schema {
	t.Helper()
	sch, err := schemacheck.Compile(resultSchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// TestResultSchemaJudgesReports: the fixture's JSON report, as WriteJSON
// writes it, follows the schema; the same report with one key added,
// removed, mistyped or out of its enumeration does not.
func TestResultSchemaJudgesReports(t *testing.T) {
	sch := resultSchema(t)
	path := filepath.Join(t.TempDir(), "r.json")
	if err := WriteJSON(path, fixture(t)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	decode := func() map[string]any {
		v, err := schemacheck.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		return v.(map[string]any)
	}
	if err := sch.Validate(decode()); err != nil {
		t.Fatalf("the schema rejects the fixture's report: %v", err)
	}
	phase0 := func(d map[string]any) map[string]any {
		return d["result"].(map[string]any)["phases"].([]any)[0].(map[string]any)
	}
	for name, edit := range map[string]func(map[string]any){
		"unknown top-level key":   func(d map[string]any) { d["verdikt"] = "pass" },
		"no format_version":       func(d map[string]any) { delete(d, "format_version") },
		"format_version a number": func(d map[string]any) { d["format_version"] = json.Number("1") },
		"no run_id":               func(d map[string]any) { delete(d, "run_id") },
		"unknown summary key": func(d map[string]any) {
			phase0(d)["summary"].(map[string]any)["requestz"] = json.Number("1")
		},
		"requests as a string": func(d map[string]any) { phase0(d)["summary"].(map[string]any)["requests"] = "100" },
		"a negative min_ns": func(d map[string]any) {
			phase0(d)["summary"].(map[string]any)["response"].(map[string]any)["min_ns"] = json.Number("-1")
		},
		"sum_sq_ns2 as a number": func(d map[string]any) {
			phase0(d)["summary"].(map[string]any)["response"].(map[string]any)["sum_sq_ns2"] = json.Number("12")
		},
		"a status out of the enum": func(d map[string]any) { d["verdict"].(map[string]any)["status"] = "passed" },
		"started not a time":       func(d map[string]any) { d["started"] = "yesterday" },
		"a rate without unit": func(d map[string]any) {
			d["scenario"].(map[string]any)["phases"].([]any)[1].(map[string]any)["open"].(map[string]any)["rate"] = "100"
		},
	} {
		d := decode()
		edit(d)
		if err := sch.Validate(any(d)); err == nil {
			t.Errorf("%s: the schema accepts it", name)
		}
	}
}

// TestFormatVersionFollowsTheSchema: the shape of result.schema.json
// (every key's path, types, whether it is required, its enumeration;
// descriptions aside) is recorded in testdata/result-format.txt with the
// FormatVersion it belongs to. A change of shape without a new
// FormatVersion fails; a removed or changed key needs a new major number,
// an added one a new minor. `go test ./reports -run
// TestFormatVersionFollowsTheSchema -update` records the new shape once
// FormatVersion is raised.
func TestFormatVersionFollowsTheSchema(t *testing.T) {
	b, err := os.ReadFile(resultSchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	shape, err := schemaShape(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(shape) < 100 {
		t.Fatalf("the schema's shape has %d keys: not the result schema", len(shape))
	}
	recorded, err := os.ReadFile(formatFile)
	if err != nil {
		t.Fatal(err)
	}
	version, rest, _ := strings.Cut(string(recorded), "\n")
	version = strings.TrimPrefix(version, "format_version ")
	old := strings.Split(strings.TrimSuffix(rest, "\n"), "\n")
	var removed, added []string
	for _, l := range old {
		if !slices.Contains(shape, l) {
			removed = append(removed, l)
		}
	}
	for _, l := range shape {
		if !slices.Contains(old, l) {
			added = append(added, l)
		}
	}
	if len(removed)+len(added) == 0 {
		if version != FormatVersion {
			t.Errorf("%s records format_version %s for this shape, FormatVersion is %s: the version changed without the format (run with -update)", formatFile, version, FormatVersion)
			if *update {
				writeShape(t, shape)
			}
		}
		return
	}
	oldMajor, err1 := formatMajor(version)
	newMajor, err2 := formatMajor(FormatVersion)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	switch {
	case version == FormatVersion:
		t.Errorf("result.schema.json changed shape (%d lines gone, %d new: %.300q … %.300q) but FormatVersion is still %s: raise it (minor for added keys, major for removed or changed ones), then run with -update",
			len(removed), len(added), removed, added, FormatVersion)
		return
	case len(removed) > 0 && newMajor == oldMajor:
		t.Errorf("result.schema.json removed or changed %d keys (%.300q), which a reader of %s would misread: FormatVersion %s must have a new major number", len(removed), removed, version, FormatVersion)
		return
	}
	if !*update {
		t.Errorf("result.schema.json changed shape with FormatVersion %s (was %s): record it with -update", FormatVersion, version)
		return
	}
	writeShape(t, shape)
}

func writeShape(t *testing.T, shape []string) {
	t.Helper()
	out := "format_version " + FormatVersion + "\n" + strings.Join(shape, "\n") + "\n"
	if err := os.WriteFile(formatFile, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// schemaShape lists, sorted, one line per key path of the document the
// schema b describes ("result.phases[].summary.requests integer
// required"), its $refs followed, its descriptions left out.
func schemaShape(b []byte) ([]string, error) {
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		return nil, err
	}
	defs, _ := root["$defs"].(map[string]any)
	var lines []string
	var walk func(path string, s map[string]any, inRef []string) error
	resolve := func(s map[string]any, inRef []string) (map[string]any, []string, error) {
		for {
			ref, ok := s["$ref"].(string)
			if !ok {
				return s, inRef, nil
			}
			name := strings.TrimPrefix(ref, "#/$defs/")
			if slices.Contains(inRef, name) {
				return nil, nil, fmt.Errorf("recursive definition %s", name)
			}
			d, ok := defs[name].(map[string]any)
			if !ok {
				return nil, nil, fmt.Errorf("no definition %s", ref)
			}
			s, inRef = d, append(slices.Clip(inRef), name)
		}
	}
	// branches is s and the schemas of its anyOf/oneOf, resolved.
	var branches func(s map[string]any, inRef []string) ([]map[string]any, []string, error)
	branches = func(s map[string]any, inRef []string) ([]map[string]any, []string, error) {
		s, inRef, err := resolve(s, inRef)
		if err != nil {
			return nil, nil, err
		}
		out := []map[string]any{s}
		for _, k := range []string{"anyOf", "oneOf"} {
			list, _ := s[k].([]any)
			for _, x := range list {
				sub, _, err := branches(x.(map[string]any), inRef)
				if err != nil {
					return nil, nil, err
				}
				out = append(out, sub...)
			}
		}
		return out, inRef, nil
	}
	walk = func(path string, s map[string]any, inRef []string) error {
		all, inRef, err := branches(s, inRef)
		if err != nil {
			return err
		}
		var types []string
		for _, br := range all {
			if ty, ok := br["type"].(string); ok && !slices.Contains(types, ty) {
				types = append(types, ty)
			}
			if e, ok := br["enum"]; ok {
				types = append(types, fmt.Sprintf("enum%v", e))
			}
			if p, ok := br["pattern"].(string); ok {
				types = append(types, "pattern "+p)
			}
		}
		slices.Sort(types)
		line := path + " " + strings.Join(types, "|")
		if path != "" {
			lines = append(lines, line)
		}
		for _, br := range all {
			props, _ := br["properties"].(map[string]any)
			req, _ := br["required"].([]any)
			for k, v := range props {
				p := strings.TrimPrefix(path+"."+k, ".")
				if slices.Contains(req, any(k)) {
					lines = append(lines, p+" required")
				}
				if err := walk(p, v.(map[string]any), inRef); err != nil {
					return err
				}
			}
			if items, ok := br["items"].(map[string]any); ok {
				if err := walk(path+"[]", items, inRef); err != nil {
					return err
				}
			}
			if add, ok := br["additionalProperties"].(map[string]any); ok {
				if err := walk(path+"{}", add, inRef); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk("", root, nil); err != nil {
		return nil, err
	}
	slices.Sort(lines)
	return slices.Compact(lines), nil
}
