package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/runner-dev/runner/engine/rules"
	"github.com/runner-dev/runner/schema"
)

// Compile's problems are positioned values (*schema.Error: file, line,
// column, key path), never text a caller must parse back: each points at
// the key it is about, as the loader's own problems do.
func TestCompileProblemsArePositioned(t *testing.T) {
	sc, err := schema.Parse("s.yaml", []byte(`version: 1
name: p
target: {url: "http://127.0.0.1:1"}
driver: {http: {path: /}}
phases:
  - {name: fine, open: {rate: 10/s}, duration: 1s}
  - name: many
    closed:
      connections: 2000000
    duration: 1s
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(sc, Limits{Timeout: time.Second})
	var pe *schema.Error
	if !errors.As(err, &pe) {
		t.Fatalf("%v (%T): want a *schema.Error", err, err)
	}
	if pe.Line != 7 || pe.Col != 5 || pe.Path != "phases[1]" {
		t.Errorf("%+v: want line 7, column 5 (the phase), path phases[1]", pe)
	}
	if want := "s.yaml:7:5: phases[1]: 2000000 connections: at most 1000000 (each is a socket and a file descriptor of this machine)"; err.Error() != want {
		t.Errorf("printed %q, want %q", err, want)
	}
}

// A rule the loader compiled is not compiled again: the plan holds the
// very rule it was given.
func TestCompileTakesTheLoadersRules(t *testing.T) {
	sc := &schema.Scenario{Version: 1, Name: "p", File: "p.yaml", Phases: []schema.Phase{
		{Name: "steady", Closed: &schema.Closed{Connections: 1}, Requests: 10},
	}, Assert: []schema.Rule{{Expr: "errors == 0"}}}
	r, err := rules.Compile("errors == 0")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := Compile(sc, Limits{Timeout: time.Second, Compiled: map[string]*rules.Rule{"errors == 0": r}})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Rules) != 1 || pl.Rules[0].Rule != r {
		t.Errorf("plan rules %v: want the loader's compiled rule itself", pl.Rules)
	}
	if pl, err = Compile(sc, Limits{Timeout: time.Second}); err != nil || pl.Rules[0].Rule == nil || pl.Rules[0].Rule == r {
		t.Errorf("without the loader's rules: %v, %v: want one compiled here", pl, err)
	}
}

// A driver timeout beyond MaxTime is positioned at the key the caller
// names (Limits.TimeoutKey), as every other problem of the plan.
func TestCompileTimeoutProblemPositioned(t *testing.T) {
	sc, err := schema.Parse("s.yaml", []byte(`version: 1
name: p
target: {url: "http://127.0.0.1:1"}
driver:
  http: {path: /, timeout: 60001m}
phases:
  - {name: steady, closed: {connections: 1}, requests: 1}
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(sc, Limits{Timeout: 60001 * time.Minute, TimeoutKey: "driver.http.timeout"})
	if want := "s.yaml:5:28: driver.http.timeout: driver timeout 1000h1m0s: at most 1000h0m0s (it also bounds each phase's drain)"; err == nil || err.Error() != want {
		t.Errorf("%v, want %s", err, want)
	}
}
