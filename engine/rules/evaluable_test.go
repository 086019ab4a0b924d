package rules

import (
	"strings"
	"testing"
	"time"
)

// TestRejectedAtValidation: everything that could not be evaluated
// deterministically and finitely is a compile error that points at the
// rule, so `runner validate` catches it before any traffic.
func TestRejectedAtValidation(t *testing.T) {
	for _, c := range []struct {
		src  string
		col  int
		want string
	}{
		// A sequence would be judged on its last statement only.
		{"let x = p99 < 1ns; errors == 0", 9, "let x is never used"},
		{"p99 < 1ns; errors == 0", 12, "one rule per entry: split this into 2 rules, `p99 < 1ns` and `errors == 0`"},
		{"errors == 0; p99 < 1ns; ok > 0", 14, "split this into 3 rules"},
		// Constant zero divisors.
		{"errors % 0 == 0", 10, "division by zero: the divisor is always 0"},
		{"p99 / 0 < 1s", 7, "division by zero"},
		{"ok / 0 > 1", 6, "division by zero"},
		{"ok / 0.0 > 1", 6, "division by zero"},
		{"p99 / 0s > 1", 7, "division by zero"},
		{"ok % -0 == 0", 6, "division by zero"},
		// Non-boolean results, ternaries included.
		{"p99 < 1s ? 1 : 2", 1, "a rule must be true or false"},
		{"errors > 0 ? p99 : 1s", 1, "this one is a duration"},
		{"errors > 0 ? true : 1", 1, "not known to be true or false"},
		{"errors ?? 1", 1, "this one is a number"},
		{"errors and true", 1, "and joins conditions (true or false); this is a number"},
		// Builtins outside the allow-list: environment, encoding, unbounded.
		{"now() > now()", 1, "now() is not available in rules: a rule reads only the phase's metrics"},
		{`fromJSON("1") == 1`, 1, "fromJSON() is not available in rules; rules can call abs, ceil, floor"},
		{`toBase64("a") == "YQ=="`, 1, "toBase64() is not available"},
		{`date("2020-01-01") > date("2019-01-01")`, 1, "date() is not available"},
		{`len(repeat("a", 1000000000)) > 0`, 5, "repeat() is not available"},
		{"all([1, 2], # > 0)", 1, "all() is not available"},
		{"frob(p99) < 1s", 1, "unknown function frob (rules can call"},
		{"abz(errors) < 1", 1, "unknown function abz; did you mean abs?"},
		// Ranges only of written-out bounds, and small.
		{"len(1..1000000000) > 0", 6, "a range holds at most 1000 numbers"},
		{"errors in 0..ok", 12, "a range is between two whole numbers written out"},
		// Indexing and literals that could fail or allocate at run time.
		{"[1, 2][ok] > 0", 7, "only errors_by, closes_by and server are read by key"},
		{"[1, 2, 3][0:ok] == [1]", 10, "slices are not part of the rule language"},
		{`{"a": 1}.a == 1`, 10, "only errors_by, closes_by and server are read by key"},
		{`"a" in {"a": 1}`, 8, "map literals are not part of the rule language"},
		{"let x = [1, 2]; x[5] > 0", 9, "let holds a number"},
		{`"a" matches "(" + "x"`, 13, "matches takes a string literal pattern"},
		// Arithmetic only on numbers and durations.
		{"(true + 1) > 0", 2, "+ computes with numbers or durations; this is a bool"},
		{`"a" * 2 == "aa"`, 1, "* computes with numbers or durations; this is a string"},
		{"-(errors > 0)", 1, "- applies to a number; this is a bool"},
		{"ceil(p99) > 1s", 1, "ceil is not defined for durations; make a number first, e.g. ceil(p99 / 1ms)"},
		{`approx("a", 1)`, 8, "approx compares numbers or durations; this is a string"},
		// Percentile-like names that are not metrics still get a hint.
		{"p9999 < 5ms", 1, `unknown metric "p9999": for the 99.99th percentile write p99.99 (p999 stays p99.9)`},
	} {
		wantCompileError(t, c.src, c.col, c.want)
	}
}

// TestSequenceNeverPasses pins the bug: `p99 < 1ns; errors == 0` used to
// pass on errors alone.
func TestSequenceNeverPasses(t *testing.T) {
	for _, src := range []string{"p99 < 1ns; errors == 0", "p99 < 1ns;errors == 0", "false; true", "let x = 1; false; x == 1"} {
		if r, err := Compile(src); err == nil {
			t.Errorf("%q compiles (to %v on a clean phase)", src, r.Eval(envOf(func(*metrics) {})).Status)
		}
	}
}

// TestUndefinedValues: what validates evaluates to a defined status. A
// value without a defined number (a division by a runtime zero, an
// overflow) leaves its condition open: never a pass on +Inf, NaN or a
// wrapped integer, never an evaluation error.
func TestUndefinedValues(t *testing.T) {
	zero := func(m *metrics) { m.OK, m.Requests = 1000, 1000 }
	some := func(m *metrics) { m.OK, m.Errors, m.Requests = 990, 10, 1000 }
	for _, c := range []struct {
		src    string
		env    func(m *metrics)
		want   Status
		reason string
	}{
		{"ok / errors > 10", zero, Inconclusive, "division by zero: errors is 0"},
		{"ok / errors > 10", some, Pass, ""},
		{"ok / errors < 10", some, Fail, "ok / errors < 10 is false: 99 vs 10"},
		// Decided whatever the undefined ratio is: Kleene logic.
		{"ok / errors > 10 or errors == 0", zero, Pass, "holds whatever division by zero: errors is 0"},
		{"errors == 0 or ok / errors > 10", zero, Pass, ""},
		{"ok / errors > 10 and errors > 0", zero, Fail, "errors > 0 is false: 0 vs 0, difference 0 (whatever division by zero: errors is 0)"},
		{"not (ok / errors > 10)", zero, Inconclusive, "division by zero: errors is 0"},
		{"ok % errors == 0", zero, Inconclusive, "division by zero: errors is 0"},
		{"p99 / p50 < 2", func(m *metrics) { m.P99 = time.Second }, Inconclusive, "division by zero: p50 is 0"},
		{"p99 / (errors * 1ms) < 2", zero, Inconclusive, "division by zero: errors * 1ms is 0"},
		{"p99 / errors < 1s", zero, Inconclusive, "division by zero: errors is 0"},
		{"approx(ok, requests, errors - 1)", zero, Inconclusive, "approx tolerance below 0"},
		// Integer overflow never wraps.
		{"requests * 9223372036854775807 > 0", zero, Inconclusive, "integer overflow: requests * 9223372036854775807"},
		{"requests + 9223372036854775807 < 0", zero, Inconclusive, "integer overflow"},
		{"0 - requests - 9223372036854775807 < 0", zero, Inconclusive, "integer overflow"},
		{"-(-9223372036854775807 - 1) > 0", zero, Inconclusive, "integer overflow: -(-9223372036854775807 - 1)"},
		{"abs(-9223372036854775807 - 1) > 0", zero, Inconclusive, "integer overflow: abs(-9223372036854775807 - 1)"},
		{"9223372036854775807 + 0 > 0", zero, Pass, ""},
		// Floats and durations stay finite.
		{"1e300 * 1e300 > 0", zero, Inconclusive, "not a finite number: 1e300 * 1e300"},
		{"10.0 ** 400 > 0", zero, Inconclusive, "not a finite number"},
		{"0.0 ** -1 > 0", zero, Inconclusive, "not a finite number"},
		{"p99 * 1e300 > 1s", func(m *metrics) { m.P99 = time.Second }, Inconclusive, "duration overflow"},
		{"2562047h + 2562047h > 0s", zero, Inconclusive, "duration overflow"},
		// duration / 1s is a number of seconds.
		{"duration / 1s ≈ 60", func(m *metrics) { m.Duration = time.Minute }, Pass, ""},
		{"1s / duration > 0", func(m *metrics) { m.Duration = time.Minute }, Pass, ""},
		{"1s / duration > 0", zero, Inconclusive, "division by zero: duration is 0"},
		// Mixed ternaries compute exactly.
		{"(errors > 0 ? 1 : 2.5) + 1 == 3.5", zero, Pass, ""},
		{`closes_by["10" + "06"] == 0`, zero, Pass, ""},
		{"errors in 0..5 and -errors == 0", zero, Pass, ""},
		{"let r = ok / errors; r > 10", zero, Inconclusive, "division by zero: errors is 0"},
	} {
		r, err := Compile(c.src)
		if err != nil {
			t.Errorf("Compile(%q): %v", c.src, err)
			continue
		}
		v := r.Eval(envOf(c.env))
		if v.Status != c.want || !strings.Contains(v.Reason, c.reason) {
			t.Errorf("%s\n got %v reason %q\nwant %v reason %q", c.src, v.Status, v.Reason, c.want, c.reason)
		}
	}
}

// TestNonFiniteMetricIsInconclusive: a counter a target reported as NaN
// or +Inf supports no verdict, even under not.
func TestNonFiniteMetricIsInconclusive(t *testing.T) {
	env := NewEnv(b19Summary(), Extras{Server: map[string]float64{"x": nanValue(), "y": 1}})
	for _, src := range []string{"server.x > 0", "not (server.x > 0)", `server["x" + ""] > 0`} {
		r, err := Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		if v := r.Eval(env); v.Status != Inconclusive || !strings.Contains(v.Reason, "not a finite number") {
			t.Errorf("%s: %v %q", src, v.Status, v.Reason)
		}
	}
}

func nanValue() float64 { var z float64; return z / z }

// TestConfigChecks runs expr's own consistency check of the operator
// overloads, which newConfig skips for speed.
func TestConfigChecks(t *testing.T) {
	rw, _ := rewrite("p99 < 1s")
	for _, asBool := range []bool{true, false} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("newConfig(asBool=%v): %v", asBool, p)
				}
			}()
			newConfig(rw, asBool).Check()
		}()
	}
}

// Rules are bounded in size and nesting before they are compiled: 120,000
// nested parentheses took the compiler 53 s (issue 12).
func TestRuleSizeAndDepthBounded(t *testing.T) {
	huge := strings.Repeat("(", 120000) + "p99 < 1s" + strings.Repeat(")", 120000)
	if _, err := Compile(huge); err == nil || !strings.Contains(err.Error(), "rule of 240008 bytes: at most 8192") {
		t.Errorf("huge rule: %v", err)
	}
	deep := strings.Repeat("(", 4000) + "p99 < 1s" + strings.Repeat(")", 4000)
	if _, err := Compile(deep); err == nil || !strings.Contains(err.Error(), "nested 4000 deep: at most 64") {
		t.Errorf("deep rule: %v", err)
	}
	long := "p99 < 1s" + strings.Repeat(" and errors == 0", 1000)
	if _, err := Compile(long); err == nil || !strings.Contains(err.Error(), "at most 8192") {
		t.Errorf("long rule: %v", err)
	}
	// A chain of operators is as deep a tree as it is long (2,700
	// additions took 0.6 s and 16 MB each; 128 such rules, 77 s).
	for _, chain := range []string{"p99 < " + strings.Repeat("1s+", 2700) + "1s", "errors == " + strings.Repeat("1*", 4000) + "1"} {
		if _, err := Compile(chain); err == nil || !strings.Contains(err.Error(), "operators: at most 128") {
			t.Errorf("chain of %d bytes: %v", len(chain), err)
		}
	}
	if _, err := Compile("p99 < " + strings.Repeat("1ms + ", 127) + "1ms"); err != nil {
		t.Errorf("128 operators: %v", err)
	}
	if _, err := Compile(`p99 < 1s and errors_by["a+b-c*d/e<f>g=h!i&j|k^l and or not in"] == 0`); err != nil {
		t.Errorf("operators inside a string literal counted: %v", err)
	}
	ok := strings.Repeat("(", 64) + "p99 < 1s" + strings.Repeat(")", 64)
	if _, err := Compile(ok); err != nil {
		t.Errorf("64 levels: %v", err)
	}
}
