package engine

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/rules"
	"github.com/runner-dev/runner/schema"
)

// withStepRules gives pl the flow steps steps and the rules srcs (which
// Compile would reject until the scenario format has flows), checked
// against them.
func withStepRules(t *testing.T, pl *Plan, steps []string, srcs ...string) {
	t.Helper()
	pl.FlowSteps = steps
	pl.Rules = nil
	for _, src := range srcs {
		r, err := rules.Compile(src)
		if err != nil {
			t.Fatalf("Compile(%q): %v", src, err)
		}
		pl.Rules = append(pl.Rules, &ScopedRule{Source: src, Rule: r})
	}
	if err := pl.CheckRuleSteps(); err != nil {
		t.Fatal(err)
	}
}

// Rules judge the steps of a flow that ran: the shop flow's steps take
// 5, 2 and 3 ms (TestFlow_IterationIsTheSumOfItsSteps), 10 iterations,
// so 10 requests per step; the iteration takes 160 ms.
func TestStepRulesOnAFlowThatRan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(10), Connections: 4}, Duration: dur("1s")}, 10*time.Second)
		res := run(t, shopDriver(), pl, 10*time.Second)
		withStepRules(t, pl, []string{"login", "items", "item"},
			"step.login.max == 5ms and step.items.max == 2ms and step.item.min == 3ms",
			"step.login.requests == 10 and step.items.ok == 10 and step.item.errors == 0 and requests == 10",
			"max == 160ms and step.login.max < max",
			"step.login.max < 5ms",
			"step.login.p99 < 1s")
		want := map[string]rules.Status{
			"step.login.max == 5ms and step.items.max == 2ms and step.item.min == 3ms":                       rules.Pass,
			"step.login.requests == 10 and step.items.ok == 10 and step.item.errors == 0 and requests == 10": rules.Pass,
			"max == 160ms and step.login.max < max":                                                          rules.Pass,
			"step.login.max < 5ms":                                                                           rules.Fail,
			"step.login.p99 < 1s":                                                                            rules.Inconclusive,
		}
		v := Judge(pl, res)
		got := statuses(v)
		for src, w := range want {
			if got[src] != w {
				t.Errorf("%s: %s, want %s", src, got[src], w)
			}
		}
		if r := v.Rules[4]; !strings.Contains(r.Reason, "step.login.p99: 10 samples, needs ≥ 1000") {
			t.Errorf("thin step percentile: reason %q does not name the step and its samples", r.Reason)
		}
	})
}

// stepResult is a step whose n requests took d each (failed ones
// answered 503), over 10 s.
func stepResult(name string, ok, failed int, d time.Duration) StepResult {
	rec := measure.NewRecorder(1, measure.Options{})
	for i := range ok + failed {
		out := drivers.Outcome{Class: drivers.OK, Responded: true}
		if i >= ok {
			out = drivers.Outcome{Class: drivers.Status, Code: "503", Responded: true}
		}
		rec.AddArrivals(1)
		rec.Record(0, &measure.Result{Done: d, Outcome: out})
	}
	return StepResult{Flow: "shop", Name: name, Summary: rec.Summary(10 * time.Second)}
}

// stepRepeats is a phase of three repeats with two flow steps: login's
// 20 requests take 30, 10 and 50 ms (p50 needs 20 samples), items has 19
// ok requests and 0, 1 and 2 failed ones; the target counted 20 logins
// and 19 items.
func stepRepeats(t *testing.T) (*Plan, *Result) {
	t.Helper()
	pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(10), Connections: 4}, Duration: dur("10s")}, time.Second)
	pl.Repeats = 3
	res := &Result{}
	for i, d := range []time.Duration{30 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond} {
		pr := &PhaseResult{Phase: &pl.Phases[0], Repeat: i + 1, Summary: stepResult("iteration", 20, 0, time.Second).Summary,
			Steps:  []StepResult{stepResult("login", 20, 0, d), stepResult("items", 19, i, time.Millisecond)},
			Server: map[string]float64{"login": 20, "items": 19}}
		res.Phases = append(res.Phases, pr)
	}
	return pl, res
}

// The repeat summary has each step's median and range: login's max is
// 30 ms in the middle repeat, 10 and 50 ms at the ends; items' errors
// 0, 1 and 2.
func TestAcrossSteps(t *testing.T) {
	_, res := stepRepeats(t)
	a := Across(res)
	if len(a) != 1 || len(a[0].Steps) != 2 {
		t.Fatalf("%+v: want one phase with two steps", a)
	}
	login, items := a[0].Steps[0], a[0].Steps[1]
	if login.Name != "login" || login.Flow != "shop" || items.Name != "items" {
		t.Fatalf("steps %s/%s, %s: want shop/login then items", login.Flow, login.Name, items.Name)
	}
	if got, want := login.Metrics["max_ms"], (Spread{Median: 30, Min: 10, Max: 50, N: 3}); got != want {
		t.Errorf("login max_ms %+v, want %+v", got, want)
	}
	if got, want := items.Metrics["errors"], (Spread{Median: 1, Min: 0, Max: 2, N: 3}); got != want {
		t.Errorf("items errors %+v, want %+v", got, want)
	}
	if _, ok := items.Metrics["dropped"]; ok {
		t.Error("dropped is not a step's metric")
	}
	if p := a[0].Metrics["errors"]; p.Max != 0 {
		t.Errorf("the phase's own errors %+v: the iterations had none", p)
	}
}

// Hand-made step summaries over three repeats: the rule holds only if
// it holds in each, median(x) is the middle repeat's, and the target's
// counters reconcile with a step's requests.
func TestStepRulesAcrossRepeats(t *testing.T) {
	pl, res := stepRepeats(t)
	withStepRules(t, pl, []string{"login", "items"},
		"median(step.login.p50) < 40ms",
		"median(step.login.p50) >= 30ms",
		"step.login.p50 < 40ms",
		"worst(step.login.p50) >= 50ms",
		"server.login == step.login.requests",
		"server.items == step.items.requests",
		"step.items.errors == 0",
	)
	want := map[string]rules.Status{
		"median(step.login.p50) < 40ms":       rules.Pass,
		"median(step.login.p50) >= 30ms":      rules.Pass,
		"step.login.p50 < 40ms":               rules.Fail, // the third repeat: 50 ms
		"worst(step.login.p50) >= 50ms":       rules.Pass,
		"server.login == step.login.requests": rules.Pass,
		"server.items == step.items.requests": rules.Fail, // repeats 2 and 3: 20 and 21 requests
		"step.items.errors == 0":              rules.Fail,
	}
	v := Judge(pl, res)
	for src, w := range want {
		if got := statuses(v)[src]; got != w {
			t.Errorf("%s: %s, want %s", src, got, w)
		}
	}
	for _, r := range v.Rules {
		if r.Source == "server.items == step.items.requests" && !strings.Contains(r.Reason, "repeat 3: fail: server.items == step.items.requests is false: 19 vs 21, difference -2") {
			t.Errorf("reconciliation reason %q", r.Reason)
		}
	}
}

// A rule naming a step the flows do not have is a positioned problem of
// the plan, with the nearest names; on a scenario without flows (all of
// them, until the format has flows) Compile rejects every step rule.
func TestStepRulesCheckedAgainstThePlan(t *testing.T) {
	sc := &schema.Scenario{Version: 1, Name: "p", File: "p.yaml", Phases: []schema.Phase{
		{Name: "steady", Closed: &schema.Closed{Connections: 1}, Requests: 10},
	}, Assert: []schema.Rule{{Expr: "errors == 0", Line: 8, Col: 5}, {Expr: "step.login.p99 < 50ms", Line: 9, Col: 5}}}
	_, err := Compile(sc, Limits{Timeout: time.Second})
	var pe *schema.Error
	if !errors.As(err, &pe) || pe.Path != "assert[1]" || pe.Line != 9 || !strings.Contains(pe.Msg, "step.login: the scenario has no flows") {
		t.Fatalf("%v: want assert[1] at line 9: the scenario has no flows", err)
	}

	sc.Assert = sc.Assert[:1]
	pl, err := Compile(sc, Limits{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := rules.Compile("step.logn.p99 < 50ms")
	pl.Rules = append(pl.Rules, &ScopedRule{Source: "step.logn.p99 < 50ms", Rule: r})
	pl.FlowSteps = []string{"login", "items"}
	err = pl.CheckRuleSteps()
	if !errors.As(err, &pe) || pe.Path != "assert[1]" || !strings.Contains(pe.Msg, `column 6: unknown step "logn"; did you mean login? (the flows' steps: login items)`) {
		t.Errorf("%v: want assert[1], column 6, did you mean login", err)
	}
}

// A step's latency statistics are as time-sensitive as the phase's: a
// stalled generator or timed-out requests overlay their PASS.
func TestStepMetricsAreTimeSensitive(t *testing.T) {
	for m, want := range map[string]bool{
		"step.login.p99": true, "median(step.login.p75)": true, `step["log-in"].max`: true,
		"step.login.service.p99": true, "step.login.throughput": true, "step.login.errors": false,
		`step["a\"].b"].p99`: true, "step.login.requests": false,
	} {
		if got := timeSensitive(m); got != want {
			t.Errorf("timeSensitive(%s) = %v, want %v", m, got, want)
		}
	}
	if !latencyStat("step.login.p99") || latencyStat("step.login.throughput") {
		t.Error("latencyStat: step.login.p99 is a latency statistic, step.login.throughput is not")
	}
}
