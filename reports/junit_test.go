package reports

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/runner-dev/runner/engine"
)

func junitOf(t *testing.T, r *Run) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := JUnit(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func parseJUnit(t *testing.T, b []byte) junitSuites {
	t.Helper()
	var doc junitSuites
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("JUnit output is not XML: %v\n%s", err, b)
	}
	return doc
}

// validateJUnit validates b with xmllint against testdata/junit-10.xsd
// and, when it has no <skipped> (which that older form cannot carry a
// message on), against testdata/junit-4.xsd. Without xmllint the test
// skips locally but fails in CI (CI set).
func validateJUnit(t *testing.T, b []byte) {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("xmllint not installed (apt-get install libxml2-utils); CI requires it")
		}
		t.Fatal("xmllint not installed: .ci/run installs libxml2-utils")
	}
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	schemas := []string{"junit-10.xsd"}
	if !bytes.Contains(b, []byte("<skipped")) {
		schemas = append(schemas, "junit-4.xsd")
	}
	for _, xsd := range schemas {
		out, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("testdata", xsd), path).CombinedOutput()
		if err != nil {
			t.Errorf("JUnit XML does not validate against %s: %v\n%s\n%s", xsd, err, out, b)
		}
	}
}

func TestJUnitGolden(t *testing.T) {
	r := richFixture(t)
	b := junitOf(t, r)
	if bytes.Contains(b, []byte("s3cr3t-token")) {
		t.Error("JUnit shows a secret")
	}
	doc := parseJUnit(t, b)
	s := doc.Suites[0]
	// errors == 0, p50 < 20ms, p999 < 50ms, and the two reconcile rules.
	if s.Name != "golden" || s.Tests != 5 || s.Failures != 2 || s.Errors != 0 || s.Skipped != 1 || s.Time != "3600.000" {
		t.Errorf("testsuite %s tests=%d failures=%d errors=%d skipped=%d time=%s", s.Name, s.Tests, s.Failures, s.Errors, s.Skipped, s.Time)
	}
	byName := map[string]junitCase{}
	var total float64
	for _, c := range s.Cases {
		byName[c.Classname+" / "+c.Name] = c
		sec, err := strconv.ParseFloat(c.Time, 64)
		if err != nil {
			t.Fatalf("case %s: time %q", c.Name, c.Time)
		}
		total += sec
	}
	// CI tools add the cases' times up: five rules on one phase must not
	// count its time five times.
	if suite, _ := strconv.ParseFloat(s.Time, 64); total > suite {
		t.Errorf("the cases' times add up to %.3f s, more than the suite's %.3f s", total, suite)
	}
	if c := byName["golden / errors == 0 [phase steady]"]; c.Failure == nil ||
		!strings.Contains(c.Failure.Message, "observed repeat 1 errors=10, repeat 2 errors=10") ||
		!strings.Contains(c.Failure.Body, "repeat 2: FAIL: errors=10 — errors == 0 is false: 10 vs 0, difference 10") {
		t.Errorf("errors == 0: %+v", c)
	}
	if c := byName["golden / p999 < 50ms [phase steady]"]; c.Skipped == nil || !strings.HasPrefix(c.Skipped.Message, "inconclusive: ") {
		t.Errorf("p999 < 50ms is not skipped as inconclusive: %+v", c)
	}
	if c := byName["golden.reconcile / server.requests == ok [phase steady]"]; c.Failure == nil || !strings.Contains(c.Failure.Message, "difference 10") {
		t.Errorf("the failed reconciliation does not say the difference: %+v", c)
	}
	if c := byName["golden.reconcile / server.requests == requests [phase steady]"]; c.Failure != nil || c.Skipped != nil || c.Error != nil {
		t.Errorf("the reconciliation that holds is not passed: %+v", c)
	}
	validateJUnit(t, b)
	golden(t, "junit.golden.xml", b)
}

func TestJUnitCouldNotRun(t *testing.T) {
	r := fixture(t)
	r.Result, r.Verdict, r.Across, r.Warnings = &engine.Result{}, nil, nil, nil
	r.Error, r.Outcome, r.ExitCode = "dial tcp 127.0.0.1:8080: connect: connection refused <&>", "could-not-run", 4
	b := junitOf(t, r)
	s := parseJUnit(t, b).Suites[0]
	if s.Tests != 1 || s.Errors != 1 || len(s.Cases) != 1 || s.Cases[0].Error == nil ||
		s.Cases[0].Error.Message != "could not run: dial tcp 127.0.0.1:8080: connect: connection refused <&>" {
		t.Errorf("want one errored testcase saying why: %+v", s)
	}
	validateJUnit(t, b)
}

func TestJUnitErroredAndInvalidated(t *testing.T) {
	r := fixture(t)
	r.Verdict.Rules[1].Status = 2 // rules.Error
	r.Verdict.Rules[1].Reason = "division by zero"
	r.Warnings = append(r.Warnings, engine.Warning{Code: "client-cpu", Message: "the client used 98 % of its cores", Invalidates: true})
	b := junitOf(t, r)
	s := parseJUnit(t, b).Suites[0]
	if s.Tests != 3 || s.Failures != 1 || s.Errors != 1 || s.Skipped != 1 {
		t.Errorf("tests=%d failures=%d errors=%d skipped=%d, want 3 1 1 1\n%s", s.Tests, s.Failures, s.Errors, s.Skipped, b)
	}
	validateJUnit(t, b)
}

// Several scenarios make one document, a testsuite each.
func TestJUnitRuns(t *testing.T) {
	a, c := fixture(t), richFixture(t)
	c.Scenario.Name = "other"
	var b bytes.Buffer
	if err := JUnitRuns(&b, []*Run{a, c}); err != nil {
		t.Fatal(err)
	}
	doc := parseJUnit(t, b.Bytes())
	if len(doc.Suites) != 2 || doc.Suites[1].Name != "other" || doc.Tests != 7 || doc.Failures != 3 {
		t.Errorf("suites %d, tests %d, failures %d", len(doc.Suites), doc.Tests, doc.Failures)
	}
	validateJUnit(t, b.Bytes())
}

// The JUnit report of an interrupted run was green (failures="0"
// errors="0"; "interrupted" only a property). It now holds an errored
// testcase "run interrupted" beside the rules judged on what was
// measured, and still validates.
func TestJUnitInterruptedRunIsNotGreen(t *testing.T) {
	r := fixture(t)
	r.Result.Phases = r.Result.Phases[:3] // repeat 2's steady never ran
	r.Result.Interrupted, r.Outcome, r.ExitCode = true, "interrupted", 130
	r.Verdict = engine.Judge(r.Plan, r.Result)
	b := junitOf(t, r)
	doc := parseJUnit(t, b)
	s := doc.Suites[0]
	var c *junitCase
	for i := range s.Cases {
		if s.Cases[i].Name == "run interrupted" {
			c = &s.Cases[i]
		}
	}
	if c == nil || c.Error == nil || c.Error.Type != "interrupted" || !strings.Contains(c.Error.Message, "3 of 4 phase results") {
		t.Errorf("no errored testcase \"run interrupted\" saying 3 of 4 phase results: %+v\n%s", c, b)
	}
	if s.Errors < 1 || doc.Errors < 1 {
		t.Errorf("suite errors=%d, document errors=%d: an interrupted run reads as green\n%s", s.Errors, doc.Errors, b)
	}
	validateJUnit(t, b)
}
