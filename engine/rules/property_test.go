package rules

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/metric"
)

// ruleGen builds random rules from a small grammar over the metric names,
// operators, literals and functions, to check that a rule that compiles
// is always judged to a defined status.
type ruleGen struct{ r *rand.Rand }

var (
	genNumbers   = []string{"requests", "ok", "errors", "error_rate", "timeouts", "dropped", "throughput", "samples", "littleL", `errors_by["503"]`, "server.x", "client.cpu", "target.rss", "median(ok)", "worst(errors)", "baseline.errors", "step.login.errors", "step.login.error_rate", "median(step.login.ok)", "0", "1", "-1", "2.5", "1e300", "9223372036854775807", "len(errors_by)"}
	genDurations = []string{"p50", "p75", "p99", "p999", "p99.99", "p(80)", "max", "min", "mean", "stddev", "duration", "service.p99", "failed.p75", "corrected.p50", "median(p99)", "worst(p99.9)", "baseline.p99", "step.login.p99", "step.login.p75", "step.empty.service.p99", "worst(step.login.p99)", "0s", "1ms", "20ms", "1h", "2562047h"}
	genArith     = []string{"+", "-", "*", "/", "%", "**"}
	genCompare   = []string{"<", "<=", ">", ">=", "==", "!=", "≈"}
)

func (g ruleGen) pick(s []string) string { return s[g.r.IntN(len(s))] }

// number is a numeric expression of depth at most d.
func (g ruleGen) number(d int) string {
	if d <= 0 || g.r.IntN(3) == 0 {
		return g.pick(genNumbers)
	}
	switch g.r.IntN(8) {
	case 0:
		return g.duration(d-1) + " / " + g.duration(d-1)
	case 1:
		return g.pick([]string{"abs", "ceil", "floor", "round"}) + "(" + g.number(d-1) + ")"
	case 2:
		return "abs(" + g.number(d-1) + " - " + g.number(d-1) + ")"
	case 3:
		return "(" + g.boolean(d-1) + " ? " + g.number(d-1) + " : " + g.number(d-1) + ")"
	case 4:
		return "-(" + g.number(d-1) + ")"
	}
	return "(" + g.number(d-1) + " " + g.pick(genArith) + " " + g.number(d-1) + ")"
}

// duration is a duration expression of depth at most d.
func (g ruleGen) duration(d int) string {
	if d <= 0 || g.r.IntN(3) == 0 {
		return g.pick(genDurations)
	}
	switch g.r.IntN(4) {
	case 0:
		return "(" + g.duration(d-1) + " " + g.pick([]string{"+", "-"}) + " " + g.duration(d-1) + ")"
	case 1:
		return "(" + g.duration(d-1) + " * " + g.number(d-1) + ")"
	case 2:
		return "(" + g.duration(d-1) + " / " + g.number(d-1) + ")"
	}
	return "(" + g.duration(d-1) + " / 2)"
}

// boolean is a condition of depth at most d.
func (g ruleGen) boolean(d int) string {
	if d > 0 {
		switch g.r.IntN(6) {
		case 0:
			return "(" + g.boolean(d-1) + " " + g.pick([]string{"and", "or", "&&", "||"}) + " " + g.boolean(d-1) + ")"
		case 1:
			return "not (" + g.boolean(d-1) + ")"
		case 2:
			return "approx(" + g.number(d-1) + ", " + g.number(d-1) + ", " + g.number(d-1) + ")"
		case 3:
			return "let v = " + g.number(d-1) + "; v " + g.pick(genCompare) + " " + g.number(d-1)
		}
	}
	if g.r.IntN(2) == 0 {
		return g.duration(d) + " " + g.pick(genCompare) + " " + g.duration(d)
	}
	return g.number(d) + " " + g.pick(genCompare) + " " + g.number(d)
}

// propertyEnvs are phases to judge generated rules on: empty, thin,
// with errors and failures, with a baseline and server counters, and
// with zero counts where a ratio divides by zero.
func propertyEnvs() []Env {
	fail := drivers.Outcome{Class: drivers.Status, Code: "503", Responded: true}
	rec := measure.NewRecorder(1, measure.Options{ExpectedInterval: time.Millisecond})
	for i := 1; i <= 3000; i++ {
		rec.AddArrivals(1)
		o := ok200
		if i%100 == 0 {
			o = fail
		}
		rec.Record(0, &measure.Result{Done: time.Duration(i) * 10 * time.Microsecond, Outcome: o})
	}
	busy := NewEnv(rec.Summary(3*time.Second), Extras{Connections: 4, OfferedRate: 1000,
		Server: map[string]float64{"x": 3000}, Client: &ClientUsage{CPU: 0.5}, Target: &TargetUsage{RSS: 1 << 20}})
	// Flow steps: login with samples and errors, empty with none, and
	// (in the other phases) neither.
	busy = busy.WithSteps(map[string]*metric.Phase{"login": metric.StepPhase(b19Summary()), "empty": metric.StepPhase(nil)})
	base := NewEnv(b19Summary(), Extras{}).WithSteps(map[string]*metric.Phase{"login": metric.StepPhase(nil)})
	busy = busy.WithBaseline(&base)
	return []Env{
		NewEnv(nil, Extras{}),
		NewEnv(&measure.Summary{}, Extras{Server: map[string]float64{"x": 0}}),
		NewEnv(uniformSummary(10, time.Second, time.Second), Extras{}),
		busy,
		NewEnv(b19Summary(), Extras{Connections: 8}),
	}
}

// judgeNeverErrors judges a compiled rule on the phases as repeats (each
// judged on its own, median and worst across them) and reports any
// Error.
func judgeNeverErrors(t *testing.T, src string, r *Rule, envs []Env) {
	t.Helper()
	if res := Judge(r, envs); res.Status == Error {
		t.Fatalf("rule %q compiles but errors across repeats: %s", src, res.Reason)
	}
}

// TestPropertyValidRulesNeverError: 5000 random rules; every one that
// compiles is judged Pass, Fail or Inconclusive on every phase, never
// Error. A fixed seed keeps it deterministic.
func TestPropertyValidRulesNeverError(t *testing.T) {
	envs := propertyEnvs()
	g := ruleGen{rand.New(rand.NewPCG(1, 2))}
	compiled := 0
	for range 5000 {
		src := g.boolean(2)
		r, err := Compile(src)
		if err != nil {
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("Compile(%q): %v", src, err)
			}
			continue
		}
		compiled++
		judgeNeverErrors(t, src, r, envs)
	}
	// The grammar is meant to compile mostly; a change that rejects most
	// of it would make this test vacuous.
	if compiled < 1500 {
		t.Errorf("only %d of 5000 generated rules compile", compiled)
	}
}

// FuzzValidRulesNeverError: any text that compiles is judged to a defined
// status on every phase of propertyEnvs, never Error.
func FuzzValidRulesNeverError(f *testing.F) {
	g := ruleGen{rand.New(rand.NewPCG(3, 4))}
	for range 20 {
		f.Add(g.boolean(3))
	}
	envs := propertyEnvs()
	f.Fuzz(func(t *testing.T, src string) {
		r, err := compile(src)
		if err != nil {
			return
		}
		judgeNeverErrors(t, src, r, envs)
	})
}
