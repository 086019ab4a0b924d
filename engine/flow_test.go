package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/fake"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/schema"
)

// shop is the flow "log in → list → open one": login takes 5 ms, items
// 2 ms after 100 ms of thought, item 3 ms after 50 ms.
var shop = drivers.Flow{Name: "shop", Weight: 1, Steps: []drivers.Step{
	{Name: "login"}, {Name: "items", Think: 100 * time.Millisecond}, {Name: "item", Think: 50 * time.Millisecond},
}}

var shopService = []time.Duration{5 * time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond}

func shopDriver() *fake.Flows {
	return &fake.Flows{Driver: &fake.Driver{StepService: func(r drivers.Request) time.Duration { return shopService[r.Step] }}, List: []drivers.Flow{shop}}
}

// loMin and loMax read a distribution's exact extremes (0 when empty).
func loMin(d measure.Dist) time.Duration { v, _ := d.Min(); return v }
func loMax(d measure.Dist) time.Duration { v, _ := d.Max(); return v }

// shopAt10PerSecond runs d for 1 s of open-model arrivals at 10/s on
// conns connections.
func shopAt10PerSecond(t *testing.T, d drivers.Driver, conns int) *PhaseResult {
	t.Helper()
	pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(10), Connections: conns}, Duration: dur("1s")}, 10*time.Second)
	return run(t, d, pl, 10*time.Second).Phases[0]
}

func stepNamed(t *testing.T, pr *PhaseResult, name string) StepResult {
	t.Helper()
	for _, s := range pr.Steps {
		if s.Name == name {
			if err := s.Summary.Check(); err != nil {
				t.Fatalf("step %s: %v", name, err)
			}
			return s
		}
	}
	t.Fatalf("no step %q in %d steps", name, len(pr.Steps))
	return StepResult{}
}

// TestFlow_IterationIsTheSumOfItsSteps: the truth of a flow whose steps
// take known service times: every iteration's response time is exactly
// 5 + 100 + 2 + 50 + 3 = 160 ms (think times included), each step's is
// its own service time, and every count reconciles: 10 iterations, 10
// requests per step.
func TestFlow_IterationIsTheSumOfItsSteps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := shopDriver()
		pr := shopAt10PerSecond(t, d, 4)
		s := pr.Summary
		if s.Arrivals != 10 || s.Requests != 10 || s.OK != 10 || d.Requests() != 30 {
			t.Fatalf("iterations: arrivals %d requests %d ok %d, target saw %d requests; want 10/10/10 and 30", s.Arrivals, s.Requests, s.OK, d.Requests())
		}
		if loMin(s.Response) != 160*time.Millisecond || loMax(s.Response) != 160*time.Millisecond {
			t.Errorf("iteration response time [%s, %s], want exactly 160ms", loMin(s.Response), loMax(s.Response))
		}
		for i, name := range []string{"login", "items", "item"} {
			st := stepNamed(t, pr, name).Summary
			if st.Requests != 10 || st.OK != 10 || st.Errors != 0 {
				t.Errorf("step %s: requests %d ok %d errors %d, want 10/10/0", name, st.Requests, st.OK, st.Errors)
			}
			if loMin(st.Response) != shopService[i] || loMax(st.Response) != shopService[i] {
				t.Errorf("step %s response time [%s, %s], want %s", name, loMin(st.Response), loMax(st.Response), shopService[i])
			}
		}
		// Little's law on iterations: 10 iterations of 160 ms over the
		// completion window, the last done at 0.9 + 0.16 s.
		if l, want := s.LittleL(), 1.6/1.06; l < want-0.001 || l > want+0.001 {
			t.Errorf("λ·W = %.4f, want %.4f", l, want)
		}
	})
}

// TestFlow_LaterStepsCountFromWhenTheyCameDue: one connection, arrivals
// every 100 ms, iterations of 160 ms: the iterations queue for the
// connection, and that wait is in step 1's response time and the
// iteration's (both from the intended start), never in the later steps',
// which count from their due instant.
func TestFlow_LaterStepsCountFromWhenTheyCameDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := shopDriver()
		pr := shopAt10PerSecond(t, d, 1)
		s := pr.Summary
		if s.OK != 10 {
			t.Fatalf("ok %d, want 10", s.OK)
		}
		// Iteration i (0-based) is intended at 100i ms and starts at
		// 160i ms: its response time is 160 + 60i ms, the last 700 ms.
		if loMin(s.Response) != 160*time.Millisecond || loMax(s.Response) != 700*time.Millisecond {
			t.Errorf("iteration response time [%s, %s], want [160ms, 700ms]", loMin(s.Response), loMax(s.Response))
		}
		login := stepNamed(t, pr, "login").Summary
		if loMax(login.Response) != 545*time.Millisecond || loMax(login.Service) != 5*time.Millisecond {
			t.Errorf("login response max %s service max %s, want 545ms (540 waited) and 5ms", loMax(login.Response), loMax(login.Service))
		}
		for i, name := range []string{"items", "item"} {
			st := stepNamed(t, pr, name).Summary
			if loMax(st.Response) != shopService[i+1] {
				t.Errorf("step %s response max %s, want %s: a later step counts from when it came due", name, loMax(st.Response), shopService[i+1])
			}
		}
	})
}

// TestFlow_FailedStepEndsTheIteration: iteration 3's items step answers
// 503: the iteration counts one error of that class and code, its item
// step is never sent, and every identity holds.
func TestFlow_FailedStepEndsTheIteration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := shopDriver()
		d.StepFail = func(r drivers.Request) (drivers.Class, string) {
			if r.Seq == 3 && r.Step == 1 {
				return drivers.Status, "503"
			}
			return drivers.OK, ""
		}
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(10), Connections: 4}, Duration: dur("1s")}, 10*time.Second)
		pr := run(t, d, pl, 10*time.Second).Phases[0]
		s := pr.Summary
		if s.Requests != 10 || s.OK != 9 || s.Errors != 1 || s.ErrorsByCode["503"] != 1 || d.Requests() != 29 {
			t.Fatalf("iterations: requests %d ok %d errors %d (503: %d), target saw %d; want 10/9/1/1 and 29", s.Requests, s.OK, s.Errors, s.ErrorsByCode["503"], d.Requests())
		}
		want := map[string][3]int64{"login": {10, 10, 0}, "items": {10, 9, 1}, "item": {9, 9, 0}}
		for name, w := range want {
			st := stepNamed(t, pr, name).Summary
			if st.Requests != w[0] || st.OK != w[1] || st.Errors != w[2] {
				t.Errorf("step %s: requests %d ok %d errors %d, want %v", name, st.Requests, st.OK, st.Errors, w)
			}
		}
	})
}

// TestFlow_VarsCarryFromStepToStep: what step 1 captures, later steps of
// the same iteration read, and no other iteration sees it.
func TestFlow_VarsCarryFromStepToStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := shopDriver()
		bad := make(chan string, 100)
		d.Capture = func(r drivers.Request) {
			want := fmt.Sprint("token-", r.Seq)
			switch {
			case r.Vars == nil:
				bad <- "nil vars"
			case r.Step == 0 && len(r.Vars) != 0:
				bad <- fmt.Sprintf("iteration %d starts with %v", r.Seq, r.Vars)
			case r.Step == 0:
				r.Vars["token"] = want
			case r.Vars["token"] != want:
				bad <- fmt.Sprintf("iteration %d step %d sees token %q", r.Seq, r.Step, r.Vars["token"])
			}
		}
		pl := onePhase(t, schema.Phase{Closed: &schema.Closed{Connections: 3}, Requests: 12}, 10*time.Second)
		s := run(t, d, pl, 10*time.Second).Phases[0].Summary
		close(bad)
		for b := range bad {
			t.Error(b)
		}
		if s.OK != 12 || d.Requests() != 36 {
			t.Errorf("ok %d, target saw %d; want 12 iterations of 3 steps", s.OK, d.Requests())
		}
	})
}

// TestFlow_WeightedMixIsExact: weights 3 and 1 over 40 iterations run the
// first flow exactly 30 times and the second 10, and the per-step counts
// say so.
func TestFlow_WeightedMixIsExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Flows{Driver: &fake.Driver{}, List: []drivers.Flow{
			{Name: "browse", Weight: 3, Steps: []drivers.Step{{Name: "home"}, {Name: "search"}}},
			{Name: "health", Weight: 1, Steps: []drivers.Step{{Name: "healthz"}}},
		}}
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(40), Connections: 2}, Duration: dur("1s")}, 10*time.Second)
		pr := run(t, d, pl, 10*time.Second).Phases[0]
		if pr.Summary.OK != 40 {
			t.Fatalf("ok %d, want 40", pr.Summary.OK)
		}
		for name, want := range map[string]int64{"home": 30, "search": 30, "healthz": 10} {
			if got := stepNamed(t, pr, name).Summary.Requests; got != want {
				t.Errorf("step %s: %d requests, want %d", name, got, want)
			}
		}
	})
}

// TestFlowMix: the cycle of smooth weighted round-robin runs each flow
// its weight in every cycle, spread (no flow of weight w < W/2 twice in a
// row), and the mix refuses what it cannot run.
func TestFlowMix(t *testing.T) {
	flows := []drivers.Flow{
		{Name: "a", Weight: 5, Steps: []drivers.Step{{Name: "a1"}}},
		{Name: "b", Weight: 2, Steps: []drivers.Step{{Name: "b1"}}},
		{Name: "c", Weight: 1, Steps: []drivers.Step{{Name: "c1"}}},
	}
	m, err := newFlowMix(flows)
	if err != nil {
		t.Fatal(err)
	}
	// Every block of Σweights iterations runs each flow its weight,
	// spread: within a block only the heaviest runs twice in a row.
	for start := uint64(1); start <= 8*100; start += 8 {
		count := make([]int, 3)
		for seq := start; seq < start+8; seq++ {
			count[m.pick(seq)]++
			if f := m.pick(seq); seq+1 < start+8 && f != 0 && f == m.pick(seq+1) {
				t.Errorf("flow %d runs twice in a row at %d", f, seq)
			}
		}
		if count[0] != 5 || count[1] != 2 || count[2] != 1 {
			t.Errorf("iterations %d…%d run %v, want [5 2 1]", start, start+7, count)
		}
	}
	// A scale-out segment K of N runs the global numbers K+1, K+1+N, …:
	// whatever N, over its 800 iterations each flow runs close to its
	// share (without the rotation, N = 8 would run one flow only).
	for n := uint64(2); n <= 8; n++ {
		for k := uint64(0); k < n; k++ {
			count := make([]int, 3)
			for i := uint64(0); i < 800; i++ {
				count[m.pick(i*n+k+1)]++
			}
			for f, w := range []int{5, 2, 1} {
				if want := 100 * w; count[f] < want*6/10 || count[f] > want*14/10 {
					t.Errorf("segment %d/%d ran %v of 800, want about [500 200 100]", k, n, count)
					break
				}
			}
		}
	}
	bad := map[string][]drivers.Flow{
		"no flow":        nil,
		"weight 0":       {{Name: "a", Weight: 0, Steps: []drivers.Step{{Name: "x"}}}},
		"no step":        {{Name: "a", Weight: 1}},
		"unnamed step":   {{Name: "a", Weight: 1, Steps: []drivers.Step{{}}}},
		"same step name": {{Name: "a", Weight: 1, Steps: []drivers.Step{{Name: "x"}}}, {Name: "b", Weight: 1, Steps: []drivers.Step{{Name: "x"}}}},
		"too heavy":      {{Name: "a", Weight: MaxMixWeight, Steps: []drivers.Step{{Name: "x"}}}, {Name: "b", Weight: 1, Steps: []drivers.Step{{Name: "y"}}}},
	}
	for name, fs := range bad {
		if _, err := newFlowMix(fs); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestFlow_CutWhileThinking: a think time longer than the phase and its
// drain: every iteration sent its first step and was still thinking when
// the drain ran out, so it is left over (never ok, never the target's
// error), its second step never came due, and the counts reconcile.
func TestFlow_CutWhileThinking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Flows{Driver: &fake.Driver{Service: constService(5 * time.Millisecond)}, List: []drivers.Flow{
			{Name: "slow", Weight: 1, Steps: []drivers.Step{{Name: "first"}, {Name: "second", Think: time.Hour}}},
		}}
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(10), Connections: 10}, Duration: dur("1s")}, 2*time.Second)
		pr := run(t, d, pl, 2*time.Second).Phases[0]
		s := pr.Summary
		if s.OK != 0 || s.Errors != 0 || s.LeftOver() != 10 || s.Arrivals != 10 {
			t.Errorf("ok %d errors %d left over %d arrivals %d, want 0/0/10/10", s.OK, s.Errors, s.LeftOver(), s.Arrivals)
		}
		if first := stepNamed(t, pr, "first").Summary; first.OK != 10 {
			t.Errorf("first step ok %d, want 10", first.OK)
		}
		if second := stepNamed(t, pr, "second").Summary; second.Arrivals != 0 || second.Requests != 0 {
			t.Errorf("second step: arrivals %d requests %d, want none", second.Arrivals, second.Requests)
		}
		// Cut between steps, not in flight (the defect: "10 cut in
		// flight"): counted apart and said so.
		if s.CancelledAtEnd != 10 || s.CancelledThinking != 10 {
			t.Errorf("cut %d, of which thinking %d; want 10, 10", s.CancelledAtEnd, s.CancelledThinking)
		}
		if got, want := LeftOverCut(s), "10 cut between steps (thinking)"; got != want {
			t.Errorf("LeftOverCut %q, want %q", got, want)
		}
		if first := stepNamed(t, pr, "first").Summary; first.CancelledThinking != 0 {
			t.Errorf("step first: %d cut thinking; a step's own request is never", first.CancelledThinking)
		}
	})
}

// TestLeftOverCut: the words for each mix of the drain's cuts.
func TestLeftOverCut(t *testing.T) {
	for _, c := range []struct {
		atEnd, thinking int64
		want            string
	}{
		{0, 0, "0 cut in flight"},                                 // as before flows
		{3, 0, "3 cut in flight"},                                 // single requests, or a step's request
		{3, 3, "3 cut between steps (thinking)"},                  // every one thinking
		{5, 2, "3 cut in flight, 2 cut between steps (thinking)"}, // both
	} {
		s := &measure.Summary{CancelledAtEnd: c.atEnd, CancelledThinking: c.thinking}
		if got := LeftOverCut(s); got != c.want {
			t.Errorf("LeftOverCut(at end %d, thinking %d) = %q, want %q", c.atEnd, c.thinking, got, c.want)
		}
	}
}

// TestFlow_SegmentsMergeStepByStep: a flow mix run in N segments and
// merged has the whole run's iterations and, step by step, its requests
// and response times: iteration numbers are global, so the mix is too.
func TestFlow_SegmentsMergeStepByStep(t *testing.T) {
	list := []drivers.Flow{
		{Name: "browse", Weight: 3, Steps: []drivers.Step{{Name: "home"}, {Name: "search", Think: 20 * time.Millisecond}}},
		{Name: "health", Weight: 1, Steps: []drivers.Step{{Name: "healthz"}}},
	}
	service := func(r drivers.Request) time.Duration { return time.Duration(r.Flow*10+r.Step+1) * time.Millisecond }
	runWith := func(t *testing.T, pl *Plan, s Segment) *Result {
		d := &fake.Flows{Driver: &fake.Driver{StepService: service}, List: list}
		res, err := (&Runner{Driver: d, Timeout: time.Second, NewSleeper: NewTimerSleeper, Segment: s}).Run(t.Context(), pl)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, n := range []int{2, 3} {
		synctest.Test(t, func(t *testing.T) {
			pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(60), Connections: 6}, Duration: dur("2s")}, time.Second)
			whole := runWith(t, pl, Segment{}).Phases[0]
			var parts []*Result
			for k := range n {
				parts = append(parts, runWith(t, pl, Segment{K: k, N: n}))
			}
			merged, err := MergeResults(pl, parts)
			if err != nil {
				t.Fatal(err)
			}
			m := merged.Phases[0]
			if m.Summary.OK != whole.Summary.OK || m.Summary.OK != 120 {
				t.Fatalf("N=%d: merged ok %d, one generator %d, want 120", n, m.Summary.OK, whole.Summary.OK)
			}
			for i, ws := range whole.Steps {
				ms := m.Steps[i]
				if ms.Name != ws.Name || ms.Summary.Requests != ws.Summary.Requests || loMax(ms.Summary.Response) != loMax(ws.Summary.Response) {
					t.Errorf("N=%d: step %s: %d requests, max %s; one generator %s: %d, max %s", n, ms.Name, ms.Summary.Requests, loMax(ms.Summary.Response), ws.Name, ws.Summary.Requests, loMax(ws.Summary.Response))
				}
			}
			if got := stepNamed(t, m, "healthz").Summary.Requests; got != 30 {
				t.Errorf("N=%d: healthz ran %d times, want 30 (a quarter of 120)", n, got)
			}
		})
	}
	if err := mergeSteps([]StepResult{{Flow: "a", Name: "x"}}, []StepResult{{Flow: "a", Name: "y"}}); err == nil {
		t.Error("steps of different names merged")
	}
	for name, pr := range map[string]*PhaseResult{
		"no name":    {Steps: []StepResult{{Summary: &measure.Summary{}}}},
		"no summary": {Steps: []StepResult{{Name: "x"}}},
		"bad counts": {Steps: []StepResult{{Name: "x", Summary: &measure.Summary{Arrivals: 1}}}},
	} {
		if pr.CheckSteps() == nil {
			t.Errorf("%s: CheckSteps passed", name)
		}
	}
}

// TestFlow_CompileKnowsTheSteps: a scenario's flows name the steps its
// rules may read; a misspelt one is refused with the flows' steps.
func TestFlow_CompileKnowsTheSteps(t *testing.T) {
	sc := &schema.Scenario{Version: 1, Name: "t", File: "t.yaml", Repeats: 1,
		Driver: schema.Driver{HTTP: &schema.HTTP{Flows: []schema.Flow{
			{Name: "shop", Weight: 1, Steps: []schema.FlowStep{{Name: "login"}, {Name: "items"}}},
			{Name: "health", Weight: 1, Steps: []schema.FlowStep{{Name: "healthz"}}},
		}}},
		Phases: []schema.Phase{{Open: &schema.Open{Rate: constRate(10), Connections: 1}, Duration: dur("1s")}},
		Assert: []schema.Rule{{Expr: "step.login.p99 < 50ms"}, {Expr: "step.healthz.errors == 0"}},
	}
	pl, err := Compile(sc, Limits{MaxInflight: 1, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(pl.FlowSteps) != "[login items healthz]" {
		t.Errorf("FlowSteps %v, want [login items healthz]", pl.FlowSteps)
	}
	sc.Assert = []schema.Rule{{Expr: "step.logn.p99 < 50ms"}}
	if _, err := Compile(sc, Limits{MaxInflight: 1, Timeout: time.Second}); err == nil || !strings.Contains(err.Error(), "did you mean login") {
		t.Errorf("a misspelt step: %v, want did you mean login", err)
	}
}

// TestFlow_NoStepAfterTheDrain, from the breaker: a think time longer
// than the drain let an iteration send its next step after the drain's
// bound (the request then cut by the hard stop, breaking the step's
// identities). A step that comes due after the drain is never sent: the
// iteration is left over, its bound running to the cut.
func TestFlow_NoStepAfterTheDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Flows{Driver: &fake.Driver{Service: constService(5 * time.Millisecond)}, List: []drivers.Flow{
			{Name: "f", Weight: 1, Steps: []drivers.Step{{Name: "a"}, {Name: "b", Think: 1500 * time.Millisecond}}},
		}}
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(10), Connections: 10}, Duration: dur("1s")}, time.Second)
		pr := run(t, d, pl, time.Second).Phases[0]
		s := pr.Summary
		// Arrivals at 0, 0.1 … 0.9 s; step b comes due 1.505 s later: for
		// the first five before the drain's bound (1 s + 1 s grace), for
		// the last five after it.
		if b := stepNamed(t, pr, "b").Summary; b.Requests != 5 || b.LastSent > 2*time.Second {
			t.Errorf("step b sent %d requests, the last at %s; want 5, none after the drain's bound 2s", b.Requests, b.LastSent)
		}
		if s.LeftOver() != 5 || s.OK != 5 || s.Errors != 0 {
			t.Fatalf("left over %d, ok %d, errors %d; want 5, 5, 0", s.LeftOver(), s.OK, s.Errors)
		}
		if lo, _ := s.LeftOverBound.Min(); lo < time.Second {
			t.Errorf("left-over bound min %s: an iteration cut at the drain's end had been running over 1s", lo)
		}
		if s.CancelledThinking != 5 {
			t.Errorf("%d of the 5 left over cut while thinking, want all: their next step never came due", s.CancelledThinking)
		}
	})
}

// TestFlow_EverySegmentRunsTheMix, from the breaker: the mix followed the
// global iteration number, so with weights 1:1 and 2 segments one
// generator ran every shop iteration and the other every health check.
func TestFlow_EverySegmentRunsTheMix(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		list := []drivers.Flow{
			{Name: "shop", Weight: 1, Steps: []drivers.Step{{Name: "login"}}},
			{Name: "health", Weight: 1, Steps: []drivers.Step{{Name: "healthz"}}},
		}
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(40), Connections: 4}, Duration: dur("1s")}, time.Second)
		var logins, checks int64
		for k := range 2 {
			d := &fake.Flows{Driver: &fake.Driver{}, List: list}
			res, err := (&Runner{Driver: d, Timeout: time.Second, NewSleeper: NewTimerSleeper, Segment: Segment{K: k, N: 2}}).Run(t.Context(), pl)
			if err != nil {
				t.Fatal(err)
			}
			pr := res.Phases[0]
			a, b := stepNamed(t, pr, "login").Summary.Requests, stepNamed(t, pr, "healthz").Summary.Requests
			if a+b != 20 || a < 5 || b < 5 {
				t.Errorf("segment %d/2 ran login %d, healthz %d; want 20 iterations of both flows", k, a, b)
			}
			logins, checks = logins+a, checks+b
		}
		if logins != 20 || checks != 20 {
			t.Errorf("the segments ran login %d, healthz %d; want 20 each, as one generator", logins, checks)
		}
	})
}

// TestFlow_PlanSaysIterations, from the breaker: `runner plan` of a flow
// scenario said "expected 600 requests" for 600 iterations of 2–3 HTTP
// requests each, without a word of flows.
func TestFlow_PlanSaysIterations(t *testing.T) {
	sc := &schema.Scenario{Version: 1, Name: "t", File: "t.yaml", Repeats: 1,
		Driver: schema.Driver{HTTP: &schema.HTTP{Flows: []schema.Flow{
			{Name: "shop", Weight: 1, Steps: []schema.FlowStep{{Name: "login"}, {Name: "items"}}},
		}}},
		Phases: []schema.Phase{{Open: &schema.Open{Rate: constRate(10), Connections: 1}, Duration: dur("1s")}},
	}
	pl, err := Compile(sc, Limits{MaxInflight: 1, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	out := pl.Describe()
	if !strings.Contains(out, "each iteration counted above runs one flow") || !strings.Contains(out, "steps: login, items") {
		t.Errorf("plan of a flow scenario:\n%s\nwant it to say its arrivals are iterations, and name the steps", out)
	}
	// The reviewer's `runner plan`: "expected 6000 requests" for 6000
	// iterations.
	for _, want := range []string{"    expected     10 iterations; time 1s\n", "expected iterations: 10 per repeat, 10 in all\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan of a flow scenario lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, " requests") {
		t.Errorf("plan of a flow scenario counts requests:\n%s", out)
	}
	seg := pl.DescribeSegment(Segment{K: 0, N: 2}, time.Second)
	if !strings.Contains(seg, "; 5 of 10 expected iterations") {
		t.Errorf("segment of a flow scenario:\n%s\nwant its share of the expected iterations", seg)
	}
}

// TestFlow_LateWakeUpIsTheGenerators: the client wakes 30 ms late after
// every think time (a stalled or descheduled generator). The steps still
// count from when they came due, so the delay is inside their response
// times, and it is booked as the generator's: every later step is late,
// the worst by 30 ms, and a verdict on the phase would measure the
// generator (step-lateness invalidates it). With wake-ups on time there
// is no such warning.
func TestFlow_LateWakeUpIsTheGenerators(t *testing.T) {
	for _, stall := range []time.Duration{0, 30 * time.Millisecond} {
		t.Run(stall.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := shopDriver()
				pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(10), Connections: 4}, Duration: dur("2s")}, 10*time.Second)
				r := &Runner{Driver: d, Timeout: 10 * time.Second, NewSleeper: NewTimerSleeper,
					thinkFor: func(d time.Duration, ch <-chan struct{}) bool {
						return sleep(d+stall, ch)
					}}
				res, err := r.Run(t.Context(), pl)
				if err != nil {
					t.Fatal(err)
				}
				pr := res.Phases[0]
				later := int64(2 * 20) // items and item of 20 iterations
				if pr.ThinkWakeups != later {
					t.Fatalf("wake-ups after a think time %d, want %d", pr.ThinkWakeups, later)
				}
				items := stepNamed(t, pr, "items").Summary
				if got, want := loMax(items.Response), shopService[1]+stall; got != want {
					t.Errorf("items response max %s, want %s: the late wake-up counts in the step", got, want)
				}
				if got, want := loMax(pr.Summary.Response), 160*time.Millisecond+2*stall; got != want {
					t.Errorf("iteration response max %s, want %s", got, want)
				}
				ws := Checks(&Plan{Repeats: 3, Phases: []PhasePlan{*pr.Phase}}, res)
				flagged := slices.ContainsFunc(ws, func(w Warning) bool { return w.Code == "step-lateness" && w.Invalidates })
				if stall == 0 {
					if pr.LateSteps != 0 || pr.StepLatenessMax != 0 || flagged || GeneratorFault(pr) != "" {
						t.Errorf("on-time wake-ups: %d late steps (max %s), flagged %v, fault %q", pr.LateSteps, pr.StepLatenessMax, flagged, GeneratorFault(pr))
					}
					return
				}
				if pr.LateSteps != later || pr.StepLatenessMax != stall {
					t.Errorf("late steps %d (max %s), want %d (%s)", pr.LateSteps, pr.StepLatenessMax, later, stall)
				}
				if !flagged || !strings.Contains(GeneratorFault(pr), "flow steps woken") {
					t.Errorf("a generator late for every step is not the bottleneck: warnings %v, fault %q", ws, GeneratorFault(pr))
				}
			})
		})
	}
}

// TestFlow_DocsSayWhatTheMixAndIdentityAre: the design notes and the
// README state the flows' identity alike, as the engine keeps it
// (arrivals == ok + errors + dropped + left_over; the design said
// requests + dropped + left_over), and neither says the mix runs over
// "the global arrival sequence" in any Σweights consecutive arrivals: it
// runs in blocks of Σweights global iteration numbers
// (TestFlow_SegmentsRunOneGeneratorsMix).
func TestFlow_DocsSayWhatTheMixAndIdentityAre(t *testing.T) {
	for _, file := range []string{"../docs/design.md", "../README.md"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(b)), " ")
		for _, want := range []string{
			"`arrivals == ok + errors + dropped + left_over` holds for iterations",
			"blocks of Σweights",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q", file, want)
			}
		}
		for _, bad := range []string{"`arrivals == requests + dropped + left_over`", "global arrival sequence", "in any Σweights consecutive"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s says %q", file, bad)
			}
		}
	}
}

// TestFlow_SegmentsRunOneGeneratorsMix, from the breaker: a 3:1 mix of 8
// iterations run in 4 segments of 2 merged to login 8, healthz 0 (each
// segment started the cycle afresh), where one generator runs 6 and 2.
func TestFlow_SegmentsRunOneGeneratorsMix(t *testing.T) {
	list := []drivers.Flow{
		{Name: "shop", Weight: 3, Steps: []drivers.Step{{Name: "login"}}},
		{Name: "health", Weight: 1, Steps: []drivers.Step{{Name: "healthz"}}},
	}
	synctest.Test(t, func(t *testing.T) {
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(8), Connections: 4}, Duration: dur("1s")}, time.Second)
		var parts []*Result
		for k := range 4 {
			d := &fake.Flows{Driver: &fake.Driver{}, List: list}
			res, err := (&Runner{Driver: d, Timeout: time.Second, NewSleeper: NewTimerSleeper, Segment: Segment{K: k, N: 4}}).Run(t.Context(), pl)
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, res)
		}
		merged, err := MergeResults(pl, parts)
		if err != nil {
			t.Fatal(err)
		}
		m := merged.Phases[0]
		if a, b := stepNamed(t, m, "login").Summary.Requests, stepNamed(t, m, "healthz").Summary.Requests; a != 6 || b != 2 {
			t.Errorf("4 segments merged ran login %d, healthz %d; one generator runs 6 and 2", a, b)
		}
	})
}

// TestFlow_InterruptWhileThinking, from the fresh user and the breaker:
// Ctrl-C caught iterations between steps, and every one was reported as
// a request in flight. Step a takes 5 ms, then 300 ms of thought, then b
// takes 100 ms; arrivals every 100 ms, interrupted at 1050 ms: the
// iteration of 700 ms has b in flight, those of 800, 900 and 1000 ms are
// thinking. Their errors name no step; a failed step's example names it.
func TestFlow_InterruptWhileThinking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Flows{Driver: &fake.Driver{StepService: func(r drivers.Request) time.Duration {
			return []time.Duration{5 * time.Millisecond, 100 * time.Millisecond}[r.Step]
		}}, List: []drivers.Flow{{Name: "f", Weight: 1, Steps: []drivers.Step{{Name: "a"}, {Name: "b", Think: 300 * time.Millisecond}}}}}
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(10), Connections: 20}, Duration: dur("10s")}, 5*time.Second)
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(1050*time.Millisecond, func() { cancel(errors.New("interrupt")) })
		res, err := (&Runner{Driver: d, Timeout: 5 * time.Second, NewSleeper: NewTimerSleeper}).Run(ctx, pl)
		if err != nil {
			t.Fatal(err)
		}
		s := res.Phases[0].Summary
		if err := s.Check(); err != nil {
			t.Fatal(err)
		}
		sent := s.Cancelled - s.CancelledUnsent - s.CancelledAtEnd
		if sent != 4 || s.InterruptedThinking != 3 || s.CancelledThinking != 0 {
			t.Errorf("cancelled sent %d, of which thinking %d (drain %d); want 4 and 3 (0)", sent, s.InterruptedThinking, s.CancelledThinking)
		}
	})
}

// TestFlow_ErrorNamesItsStep: the iteration's error example says which
// step failed.
func TestFlow_ErrorNamesItsStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Flows{Driver: &fake.Driver{Fail: func(uint64) (drivers.Class, string) { return drivers.Status, "503" }}, List: []drivers.Flow{{Name: "f", Weight: 1, Steps: []drivers.Step{{Name: "login"}}}}}
		pr := shopAt10PerSecond(t, d, 2)
		if pr.Summary.Errors != 10 {
			t.Fatalf("errors %d, want 10", pr.Summary.Errors)
		}
		for code, ex := range pr.Summary.ErrorExamples {
			if !strings.HasPrefix(ex, "step login: ") {
				t.Errorf("example of %s: %q does not name the step", code, ex)
			}
		}
		if len(pr.Summary.ErrorExamples) == 0 {
			t.Error("no error example")
		}
	})
}

// TestFlow_ProgressCountsIterations, from the fresh user: the progress
// of a flow phase said inflight=0 while a hundred users were thinking.
// At 550 ms of the shop at 10/s, the iterations of 400 and 500 ms are in
// progress, both thinking: 2 iterations, no request in flight. A phase
// without flows has no iteration count (−1).
func TestFlow_ProgressCountsIterations(t *testing.T) {
	for _, flows := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			var d drivers.Driver = shopDriver()
			if !flows {
				d = &fake.Driver{Service: constService(5 * time.Millisecond)}
			}
			pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(10), Connections: 4}, Duration: dur("1s")}, 10*time.Second)
			var seen []Progress
			r := &Runner{Driver: d, Timeout: 10 * time.Second, NewSleeper: NewTimerSleeper, ProgressEvery: 550 * time.Millisecond,
				Progress: func(p Progress) { seen = append(seen, p) }}
			if _, err := r.Run(t.Context(), pl); err != nil {
				t.Fatal(err)
			}
			if len(seen) == 0 {
				t.Fatal("no progress")
			}
			p := seen[0]
			switch {
			case flows && (p.Iterations != 2 || p.InFlight != 0):
				t.Errorf("at %s: %d iterations in progress, %d requests in flight; want 2 and 0", p.Elapsed, p.Iterations, p.InFlight)
			case !flows && p.Iterations != -1:
				t.Errorf("a phase without flows says %d iterations in progress, want −1", p.Iterations)
			}
		})
	}
}
