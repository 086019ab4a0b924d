package rules

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/metric"
)

// stepSummary has ok requests with response times spread evenly over
// (0, top] (uniformSummary) and then failed ones answered 503 at fail
// each, over 10 s.
func stepSummary(ok int, top time.Duration, failed int, fail time.Duration) *measure.Summary {
	rec := measure.NewRecorder(1, measure.Options{})
	for i := 1; i <= ok; i++ {
		rec.AddArrivals(1)
		rec.Record(0, &measure.Result{Done: top * time.Duration(i) / time.Duration(ok), Outcome: ok200})
	}
	for range failed {
		rec.AddArrivals(1)
		rec.Record(0, &measure.Result{Done: fail, Outcome: drivers.Outcome{Class: drivers.Status, Code: "503", Responded: true}})
	}
	return rec.Summary(10 * time.Second)
}

// shopEnv is a phase of 500 iterations (the phase's own figures) whose
// flow ran three steps: login 2000 ok requests within 40 ms (p99 at
// rank 1980: 39.6 ms), items 1000 ok within 1 s and 2 that failed with
// a 503 after 2 s, and cart 999 ok within 10 ms (too few for a p99).
func shopEnv() Env {
	return NewEnv(uniformSummary(500, 3*time.Second, 10*time.Second), Extras{
		Connections: 10,
		Server:      map[string]float64{"login": 2000, "items": 1001},
	}).WithSteps(map[string]*metric.Phase{
		"login": metric.StepPhase(stepSummary(2000, 40*time.Millisecond, 0, 0)),
		"items": metric.StepPhase(stepSummary(1000, time.Second, 2, 2*time.Second)),
		"cart":  metric.StepPhase(stepSummary(999, 10*time.Millisecond, 0, 0)),
	})
}

// Rules read each flow step's metrics with known values; a step's
// figures are its own, not the phase's (whose p99 is about 3 s and whose
// requests are 500).
func TestStepMetrics(t *testing.T) {
	checkEval(t, shopEnv(), []evalCase{
		{"step.login.p99 < 50ms", Pass, "", ""},
		{"step.login.p99 > 39ms and step.login.p99 < 40ms", Pass, "", ""},
		{"step.login.p99 < 39ms", Fail, "", "step.login.p99 < 39ms is false"},
		{"step.login.requests == 2000 and step.login.ok == 2000 and step.login.errors == 0", Pass, "step.login.requests=2000 step.login.ok=2000 step.login.errors=0", ""},
		{"requests == 500 and step.login.requests == 2000", Pass, "", ""},
		{"p95 > 2s and step.login.p99 < 50ms", Pass, "", ""},
		{"step.items.errors == 0", Fail, "step.items.errors=2", "step.items.errors == 0 is false: 2 vs 0, difference 2"},
		{"step.items.error_rate < 0.01", Pass, "", ""}, // 2 / 1002
		{"step.items.error_rate < 0.001", Fail, "", ""},
		{"step.items.failed.max == 2s and step.items.failed.min == 2s", Pass, "", ""},
		{"step.items.max == 1s", Pass, "", ""},
		{"step.items.samples == 1000 and step.items.arrivals == 1002", Pass, "", ""},
		// ok / 10 s.
		{"step.login.throughput ≈ 200 and step.items.throughput ≈ 100", Pass, "", ""},
		{"step.login.service.p99 < 50ms", Pass, "", ""},
		{"step.login.p75 < 31ms and step.login.p75 >= 30ms", Pass, "", ""}, // rank 1500: 30 ms
		{"step.login.p(99.9) < 50ms", Inconclusive, "", "step.login.p999: 2000 samples, needs ≥ 10000"},
		{`step["login"].p99 < 50ms`, Pass, "", ""},
		// Reconciliation with the target's counters, per path.
		{"server.login == step.login.requests", Pass, "server.login=2000 step.login.requests=2000", ""},
		{"server.items == step.items.requests", Fail, "", "server.items == step.items.requests is false: 1001 vs 1002, difference -1"},
		// The same sample guards, naming the step.
		{"step.cart.p99 < 1s", Inconclusive, "", "step.cart.p99: 999 samples, needs ≥ 1000"},
		{"step.cart.p95 < 1s", Pass, "", ""},
		{"step.cart.p99 < 1s and step.items.errors == 0", Fail, "", "whatever step.cart.p99: 999 samples"},
		// A step the phase did not run.
		{"step.checkout.errors == 0", Inconclusive, "", `step.checkout.errors: no step "checkout" in this phase`},
		{"let l = step.login.p99; l < 50ms", Pass, "", ""},
	})
}

// A phase without flows leaves every step metric unavailable.
func TestStepMetricsWithoutSteps(t *testing.T) {
	env := NewEnv(uniformSummary(500, 3*time.Second, 10*time.Second), Extras{})
	checkEval(t, env, []evalCase{
		{"step.login.requests == 0", Inconclusive, `step.login.requests=n/a (no step "login" in this phase)`, ""},
	})
}

// median(step.X.m) and worst(step.X.m) are taken across repeats like any
// metric's: the middle repeat, the worse middle one of an even count.
func TestStepMedianAcrossRepeats(t *testing.T) {
	var envs []Env
	// Three repeats whose login p99 is 39.6 ms, 19.8 ms and 79.2 ms.
	for _, top := range []time.Duration{40 * time.Millisecond, 20 * time.Millisecond, 80 * time.Millisecond} {
		envs = append(envs, NewEnv(uniformSummary(100, time.Second, 10*time.Second), Extras{}).WithSteps(map[string]*metric.Phase{
			"login": metric.StepPhase(stepSummary(2000, top, 0, 0)),
		}))
	}
	for _, c := range []struct {
		src  string
		want Status
	}{
		{"median(step.login.p99) < 40ms", Pass},
		{"median(step.login.p99) > 39ms", Pass},
		{"step.login.p99 < 40ms", Fail}, // the third repeat
		{"worst(step.login.p99) > 79ms and worst(step.login.p99) < 80ms", Pass},
		{"worst(step.login.requests) == 2000", Pass},
		{"median(step.login.p999) < 1s", Inconclusive},
	} {
		r, err := Compile(c.src)
		if err != nil {
			t.Fatalf("Compile(%q): %v", c.src, err)
		}
		if res := Judge(r, envs); res.Status != c.want {
			t.Errorf("%s: %v (%s), want %v", c.src, res.Status, res.Reason, c.want)
		}
	}
	// An even count: the worse (higher) of 19.8 ms and 39.6 ms.
	r, _ := Compile("median(step.login.p99) > 30ms")
	if res := Judge(r, envs[:2]); res.Status != Pass {
		t.Errorf("even median: %v (%s)", res.Status, res.Reason)
	}
	r, _ = Compile("median(step.login.p999) < 1s")
	if res := Judge(r, envs); !strings.Contains(res.Reason, "step.login.p999") {
		t.Errorf("median of a thin step metric: reason %q does not name the step", res.Reason)
	}
}

// What a step does not have of its own, and misspellings, are compile
// errors that say what a step has.
func TestStepCompileErrors(t *testing.T) {
	for _, c := range []struct {
		src  string
		col  int
		want string
	}{
		{"step.login.connections > 0", 12, "step.login.connections is not measured per step: a step has no connections of its own (step metrics: p50"},
		{"step.login.duration > 0s", 12, "not measured per step"},
		{"step.login.client.cpu < 1", 12, "step.login.client.* is not measured per step"},
		{"step.login.corrected.p99 < 1s", 12, "step.login.corrected.* is not measured per step"},
		{"step.login.server.x > 0", 12, "step.login.server.* is not measured per step"},
		{"step.login.p98x < 1s", 12, `unknown metric "step.login.p98x"`},
		{"step.login.erors > 0", 12, "did you mean step.login.errors?"},
		{"step.login.service.p99x < 1s", 20, `unknown metric "step.login.service.p99x"; did you mean step.login.service.p99`},
		{"step.login.p100 < 1s", 12, "p100 is the maximum: write max"},
		{"step.login < 1s", 6, "step.login is a flow step, not a metric: write e.g. step.login.p99"},
		{"step < 1s", 1, "step is a group, not a metric: write e.g. step.login.p99"},
		{"step.login.service < 1s", 12, "write e.g. step.login.service.p99"},
		{"step.login.p99 < 20", 18, "step.login.p99 is a duration: write the unit, e.g. 20ms"},
		{"step.login.errors < 1ms", 19, "step.login.errors is a number"},
		{"worst(step.login.arrivals) > 0", 1, "step.login.arrivals has no better or worse direction"},
		{"median(step.login) > 0", 8, "step.login is a group, not a metric: write e.g. median(step.login.p99)"},
		{"step.login.p99.x < 1s", 16, `step.login.p99 is a metric, it has no member "x"`},
	} {
		wantCompileError(t, c.src, c.col, c.want)
	}
}

// Compile accepts any step name; the plan checks them against its flows'
// steps (CheckSteps), at the name's column.
func TestCheckSteps(t *testing.T) {
	known := []string{"login", "items", "checkout"}
	for _, c := range []struct {
		src   string
		known []string
		col   int
		want  string // "" for no error
	}{
		{"step.login.p99 < 50ms and step.items.errors == 0", known, 0, ""},
		{"errors == 0", nil, 0, ""},
		{"step.login.p99 < 50ms and step.itmes.errors == 0", known, 32, `unknown step "itmes"; did you mean items? (the flows' steps: login items checkout)`},
		{"median(step.chekout.p99) < 1s", known, 13, "did you mean checkout?"},
		{"baseline.step.logn.p99 > 0s", known, 15, "did you mean login?"},
		{"step.frobnicate.errors == 0", known, 6, `unknown step "frobnicate" (the flows' steps: login items checkout)`},
		{"step.login.errors == 0", nil, 6, "step.login: the scenario has no flows"},
	} {
		r, err := Compile(c.src)
		if err != nil {
			t.Fatalf("Compile(%q): %v", c.src, err)
		}
		err = r.CheckSteps(c.known)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.src, err)
			}
			continue
		}
		var ce *CompileError
		if !errors.As(err, &ce) || ce.Column != c.col || !strings.Contains(ce.Msg, c.want) {
			t.Errorf("%s: got %v, want column %d: %s", c.src, err, c.col, c.want)
		}
	}
	r, _ := Compile(`step.login.p99 < 1s and median(step.items.errors) == 0 and step.login.ok > 0 and step["log-in"].ok > 0`)
	if got := strings.Join(r.Steps(), " "); got != "login items log-in" {
		t.Errorf("Steps() = %q", got)
	}
	if got := strings.Join(r.Metrics(), " "); got != `step.login.p99 median(step.items.errors) step.login.ok step["log-in"].ok` {
		t.Errorf("Metrics() = %q", got)
	}
}

// Every per-step metric of the catalogue compiles as step.NAME.METRIC,
// and a metric that is not per step does not.
func TestStepCatalogue(t *testing.T) {
	for _, d := range metric.All() {
		if d.Name == "" {
			continue
		}
		src := "step.s." + d.Name + " >= 0"
		if d.Unit == metric.Duration {
			src += "s"
		}
		_, err := Compile(src)
		if d.Step && err != nil {
			t.Errorf("%s: %v", src, err)
		}
		if !d.Step && (err == nil || !strings.Contains(err.Error(), "not measured per step")) {
			t.Errorf("%s: %v, want not measured per step", src, err)
		}
	}
}
