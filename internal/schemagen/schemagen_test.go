package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSchemasInSync: every checked-in schema is what its generator writes
// from today's Go types and doc comments.
func TestSchemasInSync(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	for name, file := range map[string]string{
		"scenario": "schema/scenario.schema.json",
		"result":   "reports/result.schema.json",
	} {
		want, err := generators[name](root)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is out of date with the Go types; regenerate it with `go generate ./%s/` and commit it", file, filepath.Dir(file))
		}
	}
}

// TestRunWritesTheSchema: `schemagen scenario -o FILE` writes what
// Scenario returns; bad arguments are errors, never a default.
func TestRunWritesTheSchema(t *testing.T) {
	out := filepath.Join(t.TempDir(), "s.json")
	if err := run([]string{"scenario", "-o", out}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, []byte("{\n")) || !bytes.Contains(got, []byte(`"title": "runner scenario"`)) {
		t.Errorf("schemagen scenario wrote %.200q, not the scenario schema", got)
	}
	for _, args := range [][]string{nil, {"senario", "-o", out}, {"scenario"}, {"result", "-o", out, "extra"}} {
		if err := run(args); err == nil {
			t.Errorf("schemagen %q: no error", args)
		}
	}
}

// TestRunnerDoesNotLinkTheGenerator: the runner binary's dependencies hold
// neither this command nor invopop/jsonschema and the YAML library it
// brings (issue 15: they were linked for go generate's sake only).
func TestRunnerDoesNotLinkTheGenerator(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", "../../cmd/runner").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), out)
	}
	for _, d := range deps {
		if strings.Contains(d, "invopop") || strings.HasPrefix(d, "go.yaml.in/yaml/v4") || strings.HasSuffix(d, "/schemagen") {
			t.Errorf("cmd/runner links %s", d)
		}
	}
}
