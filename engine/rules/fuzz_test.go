package rules

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/runner-dev/runner/engine/metric"
)

// FuzzCompile feeds arbitrary text to the rewriting front end and expr:
// compiling must never panic, errors must point inside the rule, and a
// compiled rule must evaluate without an internal error.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		"p99 < 20ms", "p99 < 20", "littleL ≈ connections and errors == 0", "(p99 ≈ p50) || errors > 0",
		"ok + 1 ≈ requests * 2", `errors_by["503"] == 0`, "median(p99) < 1h30m", "worst(throughput) > 1.5",
		"approx(p99, 20ms, 0.1)", "not (p999 < 5s)", `server.x == ok // 5ms ≈ "`, "p99 < 20mss", "1..5",
		"10ms < p50 < 3s", "let x = p99; x < 5ms", `"≈" ≈ '20ms'`, "-5ms < p99 / p50", "0x1Fms", "1e3ms",
		"p99 * p50", "baseline.service.p99 > 0s", "p99 < 250µs", "/* 3ms", `"unterminated`, "≈≈≈", "",
		"p99.Hours() < 1", "median(p99).Seconds() > 1", "p99 ≈≈ 1ms", "p99 <≈ 1ms", "1ms.x", "errors ?? 1 ≈ 2",
		"step.login.p99 < 50ms", "median(step.login.p75) < 1s", `step["a b"].errors == 0`, "baseline.step.login.p99 > 0s",
		"step.login.service.p99.99 < 1s", "step.login", "step.login.step.login.p99", "step[x].p99", "server.login == step.login.requests",
	} {
		f.Add(s)
	}
	env := NewEnv(b19Summary(), Extras{Connections: 8, OfferedRate: 100, Server: map[string]float64{"x": 1}}).
		WithSteps(map[string]*metric.Phase{"login": metric.StepPhase(b19Summary()), "a b": metric.StepPhase(nil)})
	thin := NewEnv(uniformSummary(10, time.Second, time.Second), Extras{})
	f.Fuzz(func(t *testing.T, src string) {
		r, err := compile(src)
		if err != nil {
			n := utf8.RuneCountInString(src)
			if err.Offset < 0 || err.Offset > n || err.Line < 1 || err.Column < 1 || err.Msg == "" {
				t.Fatalf("Compile(%q): bad error position %+v", src, err)
			}
			return
		}
		for _, v := range []Verdict{r.Eval(env), r.Eval(thin), r.Eval(Env{})} {
			if strings.HasPrefix(v.Reason, "internal error") {
				t.Fatalf("Eval(%q): %s", src, v.Reason)
			}
		}
		_ = Judge(r, []Env{env, thin, env})
	})
}
