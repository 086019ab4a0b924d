package rules

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/metric"
)

var ok200 = drivers.Outcome{Class: drivers.OK, Responded: true}

// b19Summary is the phase of B19 (percentiles that report a latency no
// request had; docs/design.md, "Field cases"): 1006 ok requests whose response
// time is 4·n ms, plus one 503, over 10 s.
func b19Summary() *measure.Summary {
	rec := measure.NewRecorder(2, measure.Options{})
	for n := 1; n <= 1006; n++ {
		rec.AddArrivals(1)
		rec.Record(n, &measure.Result{Done: time.Duration(4*n) * time.Millisecond, Outcome: ok200})
	}
	rec.AddArrivals(1)
	rec.Record(0, &measure.Result{Done: time.Second, Outcome: drivers.Outcome{Class: drivers.Status, Code: "503", Responded: true}})
	return rec.Summary(10 * time.Second)
}

// uniformSummary has n ok requests with response times spread evenly
// over (0, top] and the given elapsed time.
func uniformSummary(n int, top, elapsed time.Duration) *measure.Summary {
	rec := measure.NewRecorder(1, measure.Options{})
	for i := 1; i <= n; i++ {
		rec.AddArrivals(1)
		rec.Record(0, &measure.Result{Done: top * time.Duration(i) / time.Duration(n), Outcome: ok200})
	}
	return rec.Summary(elapsed)
}

func TestCompileErrors(t *testing.T) {
	for _, c := range []struct {
		src  string
		col  int
		want string
	}{
		// The unit is missing: the number is pointed at.
		{"p99 < 20", 7, "p99 is a duration: write the unit, e.g. 20ms"},
		{"20 > p99", 1, "p99 is a duration: write the unit, e.g. 20ms"},
		{"p99 ≈ 20", 7, "p99 is a duration: write the unit, e.g. 20ms"},
		{"approx(p99, 0.5)", 13, "p99 is a duration: write the unit, e.g. 0.5ms"},
		{"p99 + 5 > 1s", 7, "e.g. 5ms"},
		{"median(p99) < 20", 15, "median(p99) is a duration"},
		{"service.p99 >= 3", 16, "service.p99 is a duration"},
		{"p99 < errors", 5, "p99 is a duration and errors is a number"},
		{"max(p99, 1s) < 2s", 1, "max is a metric, not a function"},
		{"(errors > 0 ? p99 : 5) < 1s", 21, "p99 is a duration: write the unit, e.g. 5ms"},
		// Unknown names, with what is known and the nearest name.
		{"p99x < 5ms", 1, `unknown metric "p99x"; did you mean p99 or p999? (known metrics: p50 p90`},
		{"errorRate < 0.1", 1, "did you mean error_rate?"},
		{"P99 < 1s", 1, "did you mean p99?"},
		{"service.p99x < 1s", 9, `unknown metric "service.p99x"; did you mean service.p99 or service.p999? (service.* has p50`},
		{"servce.errors > 0", 1, "did you mean service?"},
		{"frobnicate > 0", 1, `unknown metric "frobnicate" (known metrics:`},
		{"service < 1s", 1, "service is a group, not a metric: write e.g. service.p99"},
		{"p99.x < 1s", 5, "p99 is a metric, it has no member"},
		// Duration literals.
		{"p99 < 20mss", 7, `unknown unit "mss" in "20mss"`},
		{"p99 < 1h30", 7, `missing unit after 30 in "1h30"`},
		{"p99 < 1e3ms", 7, "plain decimals with a unit"},
		{"p99 < 20ms5", 7, `missing unit after 5 in "20ms5"`},
		// Types and units.
		{"p99", 1, "a rule must be true or false, e.g. p99 < 20ms; this one is a duration"},
		{"errors + 1", 1, "this one is a number"},
		{"p99 * p50 < 1s", 5, "cannot multiply two durations (p99 * p50)"},
		{"1 / p99 > 0", 3, "cannot divide a number by a duration"},
		{"p99 % 2ms == 0s", 5, "% is not defined for durations"},
		{"-p99 < 0s", 1, "a duration cannot be negated; write 0s - p99"},
		{`"a" ≈ "b"`, 5, "≈ compares numbers or durations, not a string"},
		{"not p99 ≈ p50", 9, "not binds tighter than ≈"},
		{"approx(1, 2, -0.1)", 14, "tolerance of approx must be ≥ 0"},
		{"approx(1)", 1, "approx takes 2 or 3 arguments"},
		// median and worst.
		{"worst(offered_rate) > 1", 1, "offered_rate has no better or worse direction"},
		{"worst(server.x) > 1", 1, "server.x has no better or worse direction"},
		{"median(p99 + 1ms) < 1s", 8, "median takes one metric, e.g. median(p99), not an expression"},
		{"median(baseline.p99) < 1s", 8, "median takes a metric of this run"},
		{"median(service) < 1s", 8, "service is a group"},
		{"median(p99, p50) < 1s", 1, "median takes one metric"},
		// expr's own errors, at the user's column despite the rewriting.
		{"p99 <", 5, "unexpected token EOF"},
		{"p99 < 20ms and foo > 1", 16, `unknown metric "foo"`},
		{"p99 ≈ p50 and foo > 1", 15, `unknown metric "foo"`},
		{"errors == 0 and\n  p99 < 20", 9, "line 2, column 9: p99 is a duration"},
		{"   ", 1, "empty rule"},
		{`errors_by[1] > 0`, 11, `errors_by is read by a string key, e.g. errors_by["503"]`},
		// expr's messages quote the tokens the user wrote, not what the
		// front end rewrote them to (`==`, nanoseconds).
		{"p99 ≈≈ 1ms", 6, `unexpected token Operator("≈")`},
		{"p99 <≈ 1ms", 6, `unexpected token Operator("≈")`},
		{"p99 < 1ms 2ms", 11, `unexpected token Number("2ms")`},
		{"1ms.x > 0s", 5, `bad number syntax: "1ms.x"`},
		{"errors ?? 1 ≈ 2", 13, "Operator (≈) and coalesce expressions (??) cannot be mixed"},
		// A metric is a value, with no members or methods.
		{"p99.Hours() < 1", 5, "p99 is a metric, it has no method Hours(); for the number of hours write p99 / 1h"},
		{"service.p99.Foo() < 1", 13, "service.p99 is a metric, it has no method Foo(); compare it with a duration (service.p99 < 20ms), or divide it by one for a number (service.p99 / 1ms)"},
		{"median(p99).Seconds() > 1", 13, "median(p99) is a metric, it has no method Seconds(); for the number of seconds write median(p99) / 1s"},
		{"errors.Foo() > 1", 8, "errors is a metric, it has no method Foo(); compare it as it is, e.g. errors > 0"},
		{"p99[0] > 1ms", 4, "p99 is a metric, it has no members"},
		{"baseline.Hours() > 0s", 10, "baseline needs a constant name, e.g. baseline.p99"},
		{"server.Hours() > 0", 8, "server needs a constant name, e.g. server.<counter>"},
	} {
		wantCompileError(t, c.src, c.col, c.want)
	}
}

// wantCompileError checks that src does not compile, with want in its
// message at column col (any column when want names a line).
func wantCompileError(t *testing.T, src string, col int, want string) {
	t.Helper()
	_, err := Compile(src)
	ce, ok := err.(*CompileError)
	if !ok {
		t.Errorf("Compile(%q) = %v, want a *CompileError", src, err)
		return
	}
	if !strings.Contains(err.Error(), want) || ce.Column != col && !strings.Contains(want, "line") {
		t.Errorf("Compile(%q):\n got %v (column %d)\nwant %q at column %d", src, err, ce.Column, want, col)
	}
}

func TestEvalConcurrent(t *testing.T) {
	r, err := Compile("median(p99) < 5s and p999 < 5s or errors == 1")
	if err != nil {
		t.Fatal(err)
	}
	env := NewEnv(b19Summary(), Extras{})
	done := make(chan Status)
	for range 8 {
		go func() {
			var s Status
			for range 50 {
				s = Worst(s, Judge(r, []Env{env, env}).Status)
			}
			done <- s
		}()
	}
	for range 8 {
		if s := <-done; s != Pass {
			t.Errorf("status %v", s)
		}
	}
}

func TestCompileErrorSnippet(t *testing.T) {
	_, err := Compile("p99 < 20")
	want := "p99 < 20\n      ^"
	if got := err.(*CompileError).Snippet(); got != want {
		t.Errorf("snippet\n%s\nwant\n%s", got, want)
	}
	if got := err.Error(); got != "column 7: p99 is a duration: write the unit, e.g. 20ms" {
		t.Errorf("error text %q", got)
	}
}

// envOf builds an Env whose latency distributions have plenty of samples,
// with metrics set by f.
func envOf(f func(m *metrics)) Env {
	e := Env{samples: map[string]int64{"": 1e6, "service": 1e6, "failed": 1e6}, fetched: map[string]bool{},
		requests: 1e6, answered: 1e6, elapsed: time.Minute}
	e.m.ErrorsBy = map[string]int64{}
	e.m.Server = map[string]float64{}
	f(&e.m)
	return e
}

func TestApproxPrecedence(t *testing.T) {
	for _, c := range []struct {
		src  string
		top  string // the boolean skeleton the rule must parse to
		env  func(m *metrics)
		want Status
	}{
		// ≈ binds tighter than and: (littleL ≈ connections) and (errors == 0).
		{"littleL ≈ connections and errors == 0", "littleL ≈ connections and errors == 0",
			func(m *metrics) { m.LittleL, m.Connections = 97, 100 }, Pass},
		{"littleL ≈ connections and errors == 0", "littleL ≈ connections and errors == 0",
			func(m *metrics) { m.LittleL, m.Connections, m.Errors = 97, 100, 1 }, Fail},
		{"littleL ≈ connections && errors == 0", "littleL ≈ connections and errors == 0",
			func(m *metrics) { m.LittleL, m.Connections = 90, 100 }, Fail},
		// Parentheses group as usual; or is looser still.
		{"(p99 ≈ p50) || errors > 0", "p99 ≈ p50 or errors > 0",
			func(m *metrics) { m.P99, m.P50, m.Errors = 100*time.Millisecond, 50*time.Millisecond, 1 }, Pass},
		{"p99 ≈ p50 or errors > 0", "p99 ≈ p50 or errors > 0",
			func(m *metrics) { m.P99, m.P50 = 104*time.Millisecond, 100*time.Millisecond }, Pass},
		// Arithmetic binds tighter: (ok + 1) ≈ (requests * 2).
		{"ok + 1 ≈ requests * 2", "ok + 1 ≈ requests * 2",
			func(m *metrics) { m.OK, m.Requests = 99, 50 }, Pass},
		{"ok + 1 ≈ requests * 2", "ok + 1 ≈ requests * 2",
			func(m *metrics) { m.OK, m.Requests = 99, 60 }, Fail},
		// ≈ is left-associative with == at the same level: (a ≈ b) == true.
		{"p99 ≈ p50 == true", "p99 ≈ p50 == true",
			func(m *metrics) { m.P99, m.P50 = time.Second, time.Second }, Pass},
		// not binds tighter than ≈, so it needs parentheses.
		{"not (throughput ≈ offered_rate)", "not throughput ≈ offered_rate",
			func(m *metrics) { m.Throughput, m.OfferedRate = 50, 100 }, Pass},
		// Durations on both sides, with arithmetic.
		{"p99 - p50 ≈ 10ms", "p99 - p50 ≈ 10ms",
			func(m *metrics) { m.P99, m.P50 = 30*time.Millisecond, 20400*time.Microsecond }, Pass},
		{"approx(throughput, offered_rate, 0.01)", "approx(throughput, offered_rate, 0.01)",
			func(m *metrics) { m.Throughput, m.OfferedRate = 98, 100 }, Fail},
	} {
		r, err := Compile(c.src)
		if err != nil {
			t.Errorf("Compile(%q): %v", c.src, err)
			continue
		}
		if got := r.top.describe(); got != c.top {
			t.Errorf("%q parses as %q, want %q", c.src, got, c.top)
		}
		if v := r.Eval(envOf(c.env)); v.Status != c.want {
			t.Errorf("%q: %v (%s; %s), want %v", c.src, v.Status, v.Observed, v.Reason, c.want)
		}
	}
}

func TestApprox(t *testing.T) {
	for _, c := range []struct {
		a, b, tol float64
		want      bool
	}{
		{100, 105, 0.05, true},  // |5| ≤ 0.05·105 = 5.25
		{100, 106, 0.05, false}, // |6| > 5.3
		{105, 100, 0.05, true},  // symmetric
		{0, 0, 0.05, true},      // 0 ≈ 0
		{0, 1e-12, 0.05, false}, // relative: nothing is near 0 but 0
		{-1, 1, 0.05, false},    // opposite signs
		{-100, -96, 0.05, true}, // negative values
		{1, 2, 1, true},         // tol 1: anything of the same sign
		{1, 1, 0, true},         // tol 0 is equality
		{math.NaN(), 1, 1, false},
		{math.Inf(1), math.Inf(1), 0.05, true},
		{math.Inf(1), 1e300, 0.05, false},
	} {
		if got := Approx(c.a, c.b, c.tol); got != c.want {
			t.Errorf("Approx(%v, %v, %v) = %v, want %v", c.a, c.b, c.tol, got, c.want)
		}
	}
}

// TestEvalCorrected: corrected.* reads the coordinated-omission-corrected
// distribution. One connection expected to send every 10 ms whose 99
// responses took 1 ms and whose 100th took 1 s: the corrected histogram
// adds the 99 requests the stall held back (990 ms, 980 ms, … 10 ms), so
// of its 199 samples 100 are ≥ 10 ms and its p90 (rank 180) is 810 ms,
// while the plain p90 stays 1 ms.
func TestEvalCorrected(t *testing.T) {
	rec := measure.NewRecorder(1, measure.Options{ExpectedInterval: 10 * time.Millisecond})
	for i := 1; i <= 100; i++ {
		rec.AddArrivals(1)
		d := time.Millisecond
		if i == 100 {
			d = time.Second
		}
		rec.Record(0, &measure.Result{Done: d, Outcome: ok200})
	}
	env := NewEnv(rec.Summary(2*time.Second), Extras{})
	// Bounds: a percentile is its HdrHistogram bucket's top (3
	// significant digits: at most 0.1 % above the value).
	for _, src := range []string{
		"810ms <= corrected.p90 and corrected.p90 <= 811ms",
		"1ms <= p90 and p90 <= 1001us",
		"corrected.max == max and max == 1s",
		// rank 100 of 199: past the 99 fast samples, the first corrected one.
		"10ms <= corrected.p50 and corrected.p50 <= 10010us",
	} {
		r, err := Compile(src)
		if err != nil {
			t.Fatalf("Compile(%q): %v", src, err)
		}
		if v := r.Eval(env); v.Status != Pass {
			t.Errorf("%s: %v, observed %s; %s", src, v.Status, v.Observed, v.Reason)
		}
	}
}

func TestEval(t *testing.T) {
	env := NewEnv(b19Summary(), Extras{Connections: 200, OfferedRate: 100,
		Server: map[string]float64{"echoed": 1006, "limited": 0}})
	checkEval(t, env, []evalCase{
		{"p99 < 5s", Pass, "p99=3.985408s", ""},
		{"p99 < 20ms", Fail, "p99=3.985408s", "p99 < 20ms is false: 3.985408s vs 20ms, difference 3.965408s"},
		// A reconciliation mismatch shows both sides and their difference.
		{"server.echoed == ok + 1", Fail, "server.echoed=1006 ok=1006", "server.echoed == ok + 1 is false: 1006 vs 1007, difference -1"},
		{"errors == 0 and throughput ≈ 50", Fail, "", "errors == 0 is false: 1 vs 0, difference 1; throughput ≈ 50 is false: 100.6 vs 50, difference 50.6"},
		{"min == 4ms and max == 4024ms", Pass, "min=4ms max=4.024s", ""},
		// B19: p99.9 of 1006 samples cannot be judged.
		{"p999 < 5s", Inconclusive, "p999=4.020224s (1006 samples, needs ≥ 10000)", "p999: 1006 samples, needs ≥ 10000"},
		// Three-valued logic: false (or true) whatever p999 is.
		{"p999 < 5s and errors == 0", Fail, "", "errors == 0 is false: 1 vs 0, difference 1 (whatever p999: 1006 samples, needs ≥ 10000)"},
		{"p999 < 5s or errors == 1", Pass, "", "holds whatever p999"},
		{"p999 < 5s and errors == 1", Inconclusive, "", ""},
		{"not (p999 < 5s)", Inconclusive, "", ""},
		{"errors == 1 && errors_by[\"503\"] == 1 && errors_by[\"RATE_LIMITED\"] == 0", Pass, `errors=1 errors_by["503"]=1 errors_by["RATE_LIMITED"]=0`, ""},
		{"error_rate < 0.001", Pass, "error_rate=0.000993049", ""},
		{"throughput ≈ 100", Pass, "throughput=100.6", ""},
		{"achieved_rate ≈ offered_rate", Pass, "achieved_rate=100.7 offered_rate=100", ""},
		{"completed_rate > throughput", Pass, "", ""},
		{"samples == 1006 and requests == 1007 and arrivals == requests + dropped", Pass, "", ""},
		{"server.echoed == ok and server.limited == errors_by[\"RATE_LIMITED\"]", Pass, `server.echoed=1006 ok=1006 server.limited=0 errors_by["RATE_LIMITED"]=0`, ""},
		{"server.echoes == 0", Inconclusive, "", `server.echoes: the target has no counter "echoes"; did you mean echoed? (its counters: echoed limited)`},
		{"service.p99 < 5s", Pass, "service.p99=3.985408s", ""},
		{"failed.max < 2s", Pass, "failed.max=1s", ""},
		{"failed.p50 < 2s", Inconclusive, "failed.p50=1s (1 sample, needs ≥ 20)", ""},
		// No expected_rate: the corrected distribution is empty.
		{"corrected.p99 < 5s", Inconclusive, "corrected.p99=n/a (0 samples)", ""},
		{"server.x == 0", Inconclusive, "", ""},
		{`closes_by["1006"] == 0 and unknown_id == 0 and duplicate_id == 0`, Pass, `closes_by["1006"]=0 unknown_id=0 duplicate_id=0`, ""},
		{`closes_by["10" + "00"] == 0`, Pass, "", ""},
		{"client.cpu < 0.9", Inconclusive, "client.cpu=n/a (not measured)", ""},
		{"target.rss < 1e9", Inconclusive, "", ""},
		{"baseline.p99 > 1s", Inconclusive, "baseline.p99=n/a (no baseline)", ""},
		{"duration == 10s and connections == 200", Pass, "", ""},
		{"p99 * 1.5 > 5s and p99 / 2 < 2s and p99 / p50 < 2", Pass, "", ""},
		{"10ms < p50 < 3s", Pass, "", ""},
		{"p99 - p50 ≈ 2s", Pass, "", ""},
		{"median(p99) < 5s and worst(p99) < 5s", Pass, "median(p99)=3.985408s worst(p99)=3.985408s", ""},
		{"stddev > 0s and mean ≈ 2012ms", Pass, "", ""},
		{"errors_by[\"5\" + \"03\"] == 1", Pass, "errors_by={503:1}", ""},
		{"let x = p99; x < 5s", Pass, "p99=3.985408s", ""},
		{"1h30m > duration", Pass, "", ""},
		{"p99 > -5ms", Pass, "", ""},
	})
}

// evalCase is a rule, its expected status, observed values ("" not
// checked) and a part of its reason.
type evalCase struct {
	src      string
	want     Status
	observed string
	reason   string
}

// checkEval compiles and judges each case on env.
func checkEval(t *testing.T, env Env, cases []evalCase) {
	t.Helper()
	for _, c := range cases {
		r, err := Compile(c.src)
		if err != nil {
			t.Errorf("Compile(%q): %v", c.src, err)
			continue
		}
		v := r.Eval(env)
		if v.Status != c.want || c.observed != "" && v.Observed != c.observed || !strings.Contains(v.Reason, c.reason) {
			t.Errorf("%s\n got %v observed %q reason %q\nwant %v observed %q reason %q", c.src, v.Status, v.Observed, v.Reason, c.want, c.observed, c.reason)
		}
	}
}

func TestEmptyDistributionIsInconclusive(t *testing.T) {
	rec := measure.NewRecorder(1, measure.Options{})
	rec.AddArrivals(1)
	rec.Record(0, &measure.Result{Done: time.Second, Outcome: drivers.Outcome{Class: drivers.Timeout}})
	env := NewEnv(rec.Summary(time.Second), Extras{})
	for _, src := range []string{"p50 < 1s", "max < 1s", "mean < 1s", "service.min > 0s", "stddev < 1s"} {
		r, err := Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		v := r.Eval(env)
		if v.Status != Inconclusive || !strings.Contains(v.Observed, "n/a (0 samples)") {
			t.Errorf("%s: %v %q, want inconclusive with n/a (0 samples)", src, v.Status, v.Observed)
		}
	}
	// Counters with no events are a defined 0.
	r, _ := Compile(`ok == 0 and errors_by["503"] == 0 and timeouts == 1`)
	if v := r.Eval(env); v.Status != Pass {
		t.Errorf("counters: %v %s", v.Status, v.Reason)
	}
	// No requests at all: error_rate has nothing to rest on.
	r, _ = Compile("error_rate < 0.01")
	if v := r.Eval(NewEnv(nil, Extras{})); v.Status != Inconclusive {
		t.Errorf("error_rate of nothing: %v", v.Status)
	}
}

func TestMinSamples(t *testing.T) {
	for p, want := range map[float64]int64{50: 20, 90: 100, 95: 200, 99: 1000, 99.9: 10000, 0: 1, 99.99: 100000} {
		if got := minSamples(p); got != want {
			t.Errorf("minSamples(%v) = %d, want %d", p, got, want)
		}
	}
	// The threshold is exact: 999 samples are too few for p99, 1000 enough.
	r, _ := Compile("p99 < 1h")
	for n, want := range map[int]Status{999: Inconclusive, 1000: Pass} {
		if v := r.Eval(NewEnv(uniformSummary(n, time.Second, time.Second), Extras{})); v.Status != want {
			t.Errorf("p99 of %d samples: %v, want %v", n, v.Status, want)
		}
	}
}

func TestJudge(t *testing.T) {
	// Three repeats with p99 of about 1 s, 3 s and 2 s.
	var envs []Env
	for _, top := range []time.Duration{time.Second, 3 * time.Second, 2 * time.Second} {
		envs = append(envs, NewEnv(uniformSummary(2000, top, 10*time.Second), Extras{}))
	}
	for _, c := range []struct {
		src     string
		want    Status
		repeats []Status
	}{
		{"p99 < 2500ms", Fail, []Status{Pass, Fail, Pass}},
		{"p99 < 5s", Pass, []Status{Pass, Pass, Pass}},
		{"median(p99) < 2500ms", Pass, []Status{Pass, Pass, Pass}}, // median ≈ 2 s
		{"worst(p99) < 2500ms", Fail, []Status{Fail, Fail, Fail}},  // worst ≈ 3 s
		{"worst(throughput) == 200", Pass, nil},                    // all equal
		{"worst(samples) == 2000 and median(ok) == 2000", Pass, nil},
		{"p999 < 5s", Inconclusive, []Status{Inconclusive, Inconclusive, Inconclusive}},
		{"median(p999) < 5s", Inconclusive, nil},
	} {
		r, err := Compile(c.src)
		if err != nil {
			t.Fatalf("Compile(%q): %v", c.src, err)
		}
		res := Judge(r, envs)
		var got []Status
		for _, v := range res.Repeats {
			got = append(got, v.Status)
		}
		if res.Status != c.want || c.repeats != nil && !slices.Equal(got, c.repeats) {
			t.Errorf("%s: %v %v (%s), want %v %v", c.src, res.Status, got, res.Reason, c.want, c.repeats)
		}
	}
	r, _ := Compile("median(p99) < 1h")
	res := Judge(r, envs)
	if obs := res.Repeats[0].Observed; !strings.HasPrefix(obs, "median(p99)=1.98") {
		t.Errorf("median observed %q, want about 2s (the middle repeat)", obs)
	}
	if res := Judge(r, nil); res.Status != Inconclusive {
		t.Errorf("no repeats: %v", res.Status)
	}
	if res := Judge(nil, envs); res.Status != Error {
		t.Errorf("nil rule: %v", res.Status)
	}
}

func TestJudgeFailWinsOverInconclusive(t *testing.T) {
	thin := NewEnv(uniformSummary(10, time.Second, time.Second), Extras{})
	slow := NewEnv(uniformSummary(5000, 10*time.Second, time.Second), Extras{})
	fast := NewEnv(uniformSummary(5000, time.Second, time.Second), Extras{})
	r, _ := Compile("p99 < 2s")
	if res := Judge(r, []Env{thin, slow}); res.Status != Fail || !strings.Contains(res.Reason, "repeat 2: fail") {
		t.Errorf("thin + slow: %v %q, want fail", res.Status, res.Reason)
	}
	if res := Judge(r, []Env{fast, thin}); res.Status != Inconclusive || !strings.Contains(res.Reason, "repeat 2: inconclusive") {
		t.Errorf("fast + thin: %v %q, want inconclusive", res.Status, res.Reason)
	}
	// worst(x) over repeats where x is thin in one is inconclusive.
	r, _ = Compile("worst(p99) < 20s")
	if res := Judge(r, []Env{fast, thin}); res.Status != Inconclusive || !strings.Contains(res.Repeats[0].Observed, "repeat 2: 10 samples") {
		t.Errorf("worst over thin: %v %q", res.Status, res.Repeats[0].Observed)
	}
}

func TestViewsEvenMedianPicksTheWorse(t *testing.T) {
	envs := []Env{
		envOf(func(m *metrics) { m.P99, m.Throughput = 10*time.Millisecond, 100 }),
		envOf(func(m *metrics) { m.P99, m.Throughput = 40*time.Millisecond, 400 }),
		envOf(func(m *metrics) { m.P99, m.Throughput = 20*time.Millisecond, 200 }),
		envOf(func(m *metrics) { m.P99, m.Throughput = 30*time.Millisecond, 300 }),
	}
	for src, want := range map[string]string{
		"median(p99) > 0s":       "median(p99)=30ms", // middle two 20 and 30 ms: the higher is worse
		"median(throughput) > 0": "median(throughput)=200",
		"worst(p99) > 0s":        "worst(p99)=40ms",
		"worst(throughput) > 0":  "worst(throughput)=100",
	} {
		r, err := Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		if got := Judge(r, envs).Repeats[0].Observed; got != want {
			t.Errorf("%s: observed %q, want %q", src, got, want)
		}
	}
}

func TestWorst(t *testing.T) {
	for _, c := range []struct {
		in   []Status
		want Status
	}{
		{nil, Pass},
		{[]Status{Pass, Pass}, Pass},
		{[]Status{Pass, Inconclusive}, Inconclusive},
		{[]Status{Inconclusive, Fail, Pass}, Fail}, // failed wins over inconclusive
		{[]Status{Error, Inconclusive}, Error},
		{[]Status{Error, Fail}, Fail},
	} {
		if got := Worst(c.in...); got != c.want {
			t.Errorf("Worst(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	for _, s := range []Status{Pass, Inconclusive, Error, Fail} {
		b, _ := s.MarshalText()
		var back Status
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Errorf("%v round-trips to %v, %v", s, back, err)
		}
	}
	var s Status
	if s.UnmarshalText([]byte("passed")) == nil {
		t.Error("unknown status decoded")
	}
}

// TestCatalogue keeps the metric names in step with the list in
// docs/design.md, "Metrics", and the typed environment.
func TestCatalogue(t *testing.T) {
	design := strings.Fields(`requests ok errors error_rate timeouts late dropped arrivals
		throughput completed_rate offered_rate achieved_rate duration samples
		p50 p90 p95 p99 p999 max min mean stddev connections connections_opened reconnects
		inflight_mean littleL cancelled connections_established
		unknown_id duplicate_id
		left_over fetches goaway_retries`) // unknown_id, duplicate_id: replies no request waited for (issue 4); left_over: arrivals the drain could not finish (issue 11); fetches: the runner's own counter fetches (issue 15); goaway_retries: HTTP/2 re-sends after GOAWAY (issue 17)
	for _, name := range design {
		if _, ok := topLevel[name]; !ok {
			t.Errorf("%s missing from the catalogue", name)
		}
	}
	if len(topLevel) != len(design) {
		t.Errorf("catalogue has %d names, design %d", len(topLevel), len(design))
	}
	for _, name := range topNames {
		src := name + " == " + name
		if topLevel[name].unit == durationUnit {
			src = name + " >= 0s"
		}
		if _, err := Compile(src); err != nil {
			t.Errorf("%s: %v", src, err)
		}
		r := ref{name: name}
		v := r.get(&metrics{})
		if unitOfType(reflect.TypeOf(v)) != topLevel[name].unit {
			t.Errorf("%s: unit %v of %T", name, topLevel[name].unit, v)
		}
	}
	for _, src := range []string{`errors_by["x"] >= 0`, "server.x >= 0", "client.cpu >= 0", "client.gc_pause_max >= 0s",
		"target.cpu >= 0", "target.cpu_max_thread >= 0", "target.rss >= 0", "baseline.p99 >= 0s", "baseline.service.p99 >= 0s",
		`baseline.errors_by["x"] >= 0`, "failed.stddev >= 0s"} {
		if _, err := Compile(src); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
}

func TestRuleMetrics(t *testing.T) {
	r, err := Compile(`p99 < 20ms and errors_by["503"] == 0 and median(p99) < 30ms and p99 > 0s and server.x == ok`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"p99", `errors_by["503"]`, "median(p99)", "server.x", "ok"}
	if got := r.Metrics(); !slices.Equal(got, want) {
		t.Errorf("Metrics() = %q, want %q", got, want)
	}
	if r.String() != `p99 < 20ms and errors_by["503"] == 0 and median(p99) < 30ms and p99 > 0s and server.x == ok` {
		t.Error("String() is not the source")
	}
}

func TestRewrite(t *testing.T) {
	for _, c := range []struct{ src, text string }{
		{"p99 < 20ms", "p99 < 20000000"},
		{"p99≈p50", "p99==p50"},
		{`errors_by["20ms ≈"] == 0 // 5ms ≈`, `errors_by["20ms ≈"] == 0 // 5ms ≈`},
		{"x < 1h30m + 250us + 100ns + 1.5s + 2m + 1_000ms", "x < 5400000000000 + 250000 + 100 + 1500000000 + 120000000000 + 1000000000"},
		{"a < 250µs and b < 3μs", "a < 250000 and b < 3000"},
		{"0x1F + 1e3 + 1..5 + 0s", "0x1F + 1e3 + 1..5 + 0"},
		{"p2 < 'it''s' /* 3ms */", "p2 < 'it''s' /* 3ms */"},
	} {
		rw, err := rewrite(c.src)
		if err != nil {
			t.Errorf("rewrite(%q): %v", c.src, err)
			continue
		}
		if rw.text != c.text {
			t.Errorf("rewrite(%q) = %q, want %q", c.src, rw.text, c.text)
		}
		if len(rw.start) != len([]rune(rw.text))+1 {
			t.Errorf("rewrite(%q): offset map of %d for %d runes", c.src, len(rw.start), len([]rune(rw.text)))
		}
	}
}

// Syntax errors that newcomers make say what was meant.
func TestSyntaxHints(t *testing.T) {
	for src, want := range map[string]string{
		"errors = 0":  "did you mean == (a comparison)?",
		"p99 < 50 ms": "write the unit right after the number, without a space: 50ms",
	} {
		_, err := Compile(src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
}

// A rule may write a series' labels in any order (HAProxy exposes
// {proxy="be",code="2xx"}, the fetch stores them sorted): the rule reads
// the canonical name, shows it, and a series the target lacks is
// suggested in the canonical form.
func TestServerLabelsAnyOrder(t *testing.T) {
	env := NewEnv(b19Summary(), Extras{Server: map[string]float64{
		`responses_total{code="2xx",proxy="be"}`: 1006,
		`responses_total{code="5xx",proxy="be"}`: 1,
	}})
	checkEval(t, env, []evalCase{
		{`server["responses_total{proxy=\"be\",code=\"2xx\"}"] == ok`, Pass, `server["responses_total{code=\"2xx\",proxy=\"be\"}"]=1006 ok=1006`, ""},
		{`server['responses_total{ proxy="be", code="5xx" }'] == errors`, Pass, "", ""},
		{`median(server["responses_total{proxy=\"be\",code=\"2xx\"}"]) == ok`, Pass, "", ""},
		{`server["responses_total{proxy=\"be\",code=\"4xx\"}"] == 0`, Inconclusive, "",
			`the target has no counter "responses_total{code=\"4xx\",proxy=\"be\"}"; did you mean responses_total{code="2xx",proxy="be"} or responses_total{code="5xx",proxy="be"}?`},
	})
}

// ServerCounters lists the counters rules read by name, canonical; a
// computed key means any counter.
func TestServerCounters(t *testing.T) {
	compile := func(srcs ...string) []*Rule {
		var rs []*Rule
		for _, src := range srcs {
			r, err := Compile(src)
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
		return append(rs, nil)
	}
	names, every := ServerCounters(compile(`server.b == ok`, `server["m{z=\"1\",a=\"2\"}"] - fetches == requests and server.b > 0`, `p99 < 1s`))
	if !slices.Equal(names, []string{"b", `m{a="2",z="1"}`}) || every {
		t.Errorf("names %q, every %v", names, every)
	}
	if names, every := ServerCounters(compile(`len(server) > 0`)); names != nil || !every {
		t.Errorf("len(server): names %q, every %v", names, every)
	}
	if names, every := ServerCounters(compile(`errors == 0`)); names != nil || every {
		t.Errorf("no server counter: names %q, every %v", names, every)
	}
}

// fetches is the phase's own counter fetches, to subtract from a target
// that counts its scrapes.
func TestFetches(t *testing.T) {
	env := EnvOf(&metric.Phase{Summary: b19Summary(), Fetches: 2}, map[string]float64{"requests": 1009}, nil)
	r, err := Compile(`server.requests - fetches == requests`)
	if err != nil {
		t.Fatal(err)
	}
	if v := r.Eval(env); v.Status != Pass || v.Observed != "server.requests=1009 fetches=2 requests=1007" {
		t.Errorf("%v, observed %q, %s", v.Status, v.Observed, v.Reason)
	}
}
