package main

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/internal/execute"
	"github.com/runner-dev/runner/schema"
)

// maxFuzzInput bounds a fuzzed scenario: larger inputs only slow the
// fuzzer down (the loader's own bound, 1 MiB, is tested apart).
const maxFuzzInput = 64 << 10

// fuzzEnv is the environment fuzzed scenarios interpolate from: fixed,
// so that a crasher reproduces whatever the process's environment is.
func fuzzEnv(name string) (string, bool) {
	v, ok := map[string]string{
		"RATE":     "100/s",
		"DURATION": "2s",
		"HOST":     "127.0.0.1",
		"EMPTY":    "",
	}[name]
	return v, ok
}

// FuzzScenarioPipeline: the loader, the validator, the driver's
// configuration and the plan compiler together (compileData, as `runner
// validate`, `plan` and `run` use them) never panic or hang on any bytes.
// A scenario is either refused with problems that each name the file and
// a line or a key path, or compiled into a plan that keeps its invariants
// (checkPlan). The seed corpus is every file of scenarios/ and of the
// starters, read at test time, plus the crashers in testdata/fuzz.
//
// The scenario's directory holds a small data file of each kind and a
// payload file, so that the data-file paths are exercised; a data file is
// read only if it is a regular file, and at most a bounded size.
func FuzzScenarioPipeline(f *testing.F) {
	for _, glob := range []string{"../../scenarios/*.yaml", "starters/*.yaml"} {
		files, err := filepath.Glob(glob)
		if err != nil || len(files) == 0 {
			f.Fatalf("seed corpus %s: %v (no files)", glob, err)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	dir := f.TempDir()
	for name, content := range map[string]string{
		"data.csv":    "user,id\nann,1\nbob,2\n",
		"data.json":   `[{"user":"ann","id":1},{"user":"bob"}]`,
		"payload.bin": "\x00\x01payload",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	file := filepath.Join(dir, "fuzz.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			t.Skip()
		}
		sc, pl, err := execute.CompileData(file, data, fuzzEnv)
		if err != nil {
			if pl != nil {
				t.Fatal("a plan returned with an error")
			}
			problems := execute.Problems(err)
			if len(problems) == 0 {
				t.Fatalf("error %v without problems", err)
			}
			for _, e := range problems {
				if msg := e.Error(); strings.Contains(msg, "internal error") || !located(file, e) {
					t.Fatalf("problem without a location (file:line or key path): %q", msg)
				}
			}
			return
		}
		if sc == nil || pl == nil {
			t.Fatalf("no error, scenario %v, plan %v", sc, pl)
		}
		checkPlan(t, sc, pl)
	})
}

// keyAt matches a problem's location after its file name: a line
// (":12:" or ":12:3:") or a key path (": phases[0].open: ").
var keyAt = regexp.MustCompile(`^(:\d+(:\d+)?: |: [a-z_]+(\[\d+\])?(\.[a-z_]+(\[\d+\])?)*: )`)

// wholeFile are the problems of a file as a whole, which have no line
// or key path to point at: the file is their location.
var wholeFile = []string{"empty file;", "file larger than ", "too many problems;"}

// located reports whether problem e names file and a line or key path
// (or is a problem of the whole file, which names the file alone).
func located(file string, e error) bool {
	var se *schema.Error
	if errors.As(e, &se) {
		whole := se.Line == 0 && se.Path == "" && slices.ContainsFunc(wholeFile, func(p string) bool { return strings.HasPrefix(se.Msg, p) })
		return se.File == file && (se.Line > 0 || se.Path != "" || whole) && se.Msg != ""
	}
	rest, ok := strings.CutPrefix(e.Error(), file)
	return ok && keyAt.MatchString(rest)
}

// checkPlan checks the invariants of a compiled plan that the generator,
// the recorder and the reports rely on: at least one phase, each as
// scenario sc says; every length within [0, engine.MaxTime]; rates
// finite and non-negative; every rule compiled; a plan that renders and
// marshals.
func checkPlan(t *testing.T, sc *schema.Scenario, pl *engine.Plan) {
	t.Helper()
	if pl.Scenario != sc || pl.Repeats < 1 || len(pl.Phases) == 0 || len(pl.Phases) != len(sc.Phases) {
		t.Fatalf("plan: repeats %d, %d phases for %d", pl.Repeats, len(pl.Phases), len(sc.Phases))
	}
	length := func(i int, what string, d time.Duration) {
		if d < 0 || d > engine.MaxTime {
			t.Fatalf("phases[%d].%s %v: outside [0, %v]", i, what, d, engine.MaxTime)
		}
	}
	rate := func(i int, what string, r float64) {
		if math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
			t.Fatalf("phases[%d].%s %v: not a finite non-negative rate", i, what, r)
		}
	}
	maxConns := 0
	for i, p := range pl.Phases {
		if p.Index != i || p.Name != sc.Phases[i].Name || p.Name == "" {
			t.Fatalf("phases[%d]: index %d, name %q", i, p.Index, p.Name)
		}
		length(i, "duration", p.Duration)
		length(i, "think_time", p.ThinkTime)
		length(i, "grace", p.Grace)
		length(i, "expected_interval", p.ExpectedInterval)
		length(i, "rate.over", p.Rate.Over)
		rate(i, "rate.from", p.Rate.From)
		rate(i, "rate.to", p.Rate.To)
		rate(i, "offered rate", p.PlannedOfferedRate())
		if p.Duration == 0 && p.Requests <= 0 && len(p.Steps) == 0 || p.Requests < 0 {
			t.Fatalf("phases[%d]: unbounded: duration %v, requests %d", i, p.Duration, p.Requests)
		}
		if p.Connections < 1 || p.Inflight < 1 {
			t.Fatalf("phases[%d]: %d connections, in-flight %d", i, p.Connections, p.Inflight)
		}
		switch p.Model {
		case engine.Open:
			if slots := int64(p.Connections) * int64(p.Inflight); slots > engine.MaxInflightSlots {
				t.Fatalf("phases[%d]: %d in-flight slots", i, slots)
			}
			if p.Arrivals != "uniform" && p.Arrivals != "poisson" {
				t.Fatalf("phases[%d]: arrivals %q", i, p.Arrivals)
			}
			// The first arrivals: non-decreasing, never negative.
			s, last := p.Schedule(1), time.Duration(0)
			for n := int64(0); n < 100; n++ {
				at := s.At(n)
				if at < last {
					t.Fatalf("phases[%d]: arrival %d at %v, before %v", i, n, at, last)
				}
				last = at
			}
		case engine.Closed:
		default:
			t.Fatalf("phases[%d]: model %q", i, p.Model)
		}
		prev := time.Duration(-1)
		for _, st := range p.Steps {
			if st.At <= prev || st.Connections < 0 || st.Connections > p.Connections {
				t.Fatalf("phases[%d]: staircase %+v", i, p.Steps)
			}
			prev = st.At
		}
		length(i, "staircase", max(prev, 0))
		if p.ExpectedRequests < -1 || p.ExpectedDuration < -1 {
			t.Fatalf("phases[%d]: expected %d requests, %v", i, p.ExpectedRequests, p.ExpectedDuration)
		}
		maxConns = max(maxConns, p.Connections)
	}
	if pl.MaxConnections != maxConns {
		t.Fatalf("max connections %d, phases' largest %d", pl.MaxConnections, maxConns)
	}
	if repeat, total := pl.ExpectedTotal(); repeat < -1 || total < -1 || (repeat < 0) != (total < 0) {
		t.Fatalf("expected total: repeat %v, run %v", repeat, total)
	}
	if len(pl.Rules) != len(sc.Assert) {
		t.Fatalf("%d rules compiled of %d", len(pl.Rules), len(sc.Assert))
	}
	for _, r := range append(pl.Rules, pl.Expect...) {
		if r.Rule == nil {
			t.Fatalf("rule %q not compiled", r.Source)
		}
	}
	if pl.Describe() == "" {
		t.Fatal("empty plan description")
	}
	if _, err := json.Marshal(pl); err != nil {
		t.Fatalf("marshal the plan: %v", err)
	}
}
