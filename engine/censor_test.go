package engine

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/fake"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/rules"
	"github.com/runner-dev/runner/schema"
)

// withRules compiles one phase with the given rules.
func withRules(t *testing.T, ph schema.Phase, timeout time.Duration, srcs ...string) *Plan {
	t.Helper()
	sc := &schema.Scenario{Version: 1, Name: "t", File: "t.yaml", Phases: []schema.Phase{ph}, Repeats: 1}
	for _, s := range srcs {
		sc.Assert = append(sc.Assert, schema.Rule{Expr: s})
	}
	pl, err := Compile(sc, Limits{MaxInflight: 64, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func statuses(v *Verdict) map[string]rules.Status {
	out := map[string]rules.Status{}
	for _, r := range v.Rules {
		out[r.Source] = r.Status
	}
	return out
}

// No PASS on censored data: the single-worker overload of
// TestOpenQueueDrainBound leaves 55 arrivals over. A rule that holds on
// the 145 measured ones is INCONCLUSIVE, a rule that fails on them stays
// FAIL, and the run carries an invalidating `censored` warning; a rule
// that reads left_over accepts them explicitly.
func TestNoPassOnCensoredData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ph := schema.Phase{Name: "steady", Open: &schema.Open{Rate: constRate(200), Connections: 1}, Duration: dur("1s")}
		d := &fake.Driver{Service: constService(9 * time.Millisecond), Serial: true}
		pl := withRules(t, ph, 300*time.Millisecond, "p50 < 1h", "errors == 0", "p50 > 1h")
		res := run(t, d, pl, 300*time.Millisecond)
		got := statuses(Judge(pl, res))
		want := map[string]rules.Status{"p50 < 1h": rules.Inconclusive, "errors == 0": rules.Inconclusive, "p50 > 1h": rules.Fail}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: %s, want %s", k, got[k], w)
			}
		}
		v := Judge(pl, res)
		if r := v.Rules[0]; !strings.Contains(r.Reason, "55 of 200 arrivals were left over") || r.Repeats[0].Status != rules.Inconclusive {
			t.Errorf("reason %q, repeat %+v", r.Reason, r.Repeats[0])
		}
		if st, _ := PhaseStatus(pl, res.Phases[0]); st != rules.Fail {
			t.Errorf("TSV verdict %s, want fail", st)
		}
		ws := Checks(pl, res)
		if !hasWarning(ws, "censored") || !Invalidating(ws) {
			t.Errorf("no invalidating censored warning: %+v", ws)
		}

		// Accepted explicitly: a rule of the phase reads left_over.
		d = &fake.Driver{Service: constService(9 * time.Millisecond), Serial: true}
		pl = withRules(t, ph, 300*time.Millisecond, "p50 < 1h", "left_over < 100")
		res = run(t, d, pl, 300*time.Millisecond)
		if got := statuses(Judge(pl, res)); got["p50 < 1h"] != rules.Pass || got["left_over < 100"] != rules.Pass {
			t.Errorf("accepted left-overs: %v, want both PASS", got)
		}
		if hasWarning(Checks(pl, res), "censored") {
			t.Error("censored warning although a rule reads left_over")
		}

		// A rule that merely mentions left_over accepts nothing: it can
		// pass whatever the count.
		d = &fake.Driver{Service: constService(9 * time.Millisecond), Serial: true}
		pl = withRules(t, ph, 300*time.Millisecond, "p50 < 1h or left_over == 0")
		res = run(t, d, pl, 300*time.Millisecond)
		if got := statuses(Judge(pl, res)); got["p50 < 1h or left_over == 0"] != rules.Inconclusive {
			t.Errorf("a rule mentioning left_over among others: %v, want INCONCLUSIVE", got)
		}
	})
}

func hasWarning(ws []Warning, code string) bool {
	for _, w := range ws {
		if w.Code == code {
			return true
		}
	}
	return false
}

// A generator that fell behind its schedule: a PASS is INCONCLUSIVE, and
// so is a FAIL of a rule on times or rates (the generator's delay is in
// them: it would be blamed on the target); a FAIL on counts stays.
func TestGeneratorFaultIsTheGenerators(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ph := schema.Phase{Name: "steady", Open: &schema.Open{Rate: constRate(100), Connections: 2}, Duration: dur("2s")}
		d := &fake.Driver{Service: constService(5 * time.Millisecond)}
		pl := withRules(t, ph, time.Second, "p50 < 1h", "p50 < 1ns", "errors == 1", "median(throughput) > 1000")
		res := run(t, d, pl, time.Second)
		if got := statuses(Judge(pl, res)); got["p50 < 1h"] != rules.Pass || got["errors == 1"] != rules.Fail {
			t.Fatalf("healthy run: %v", got)
		}
		// The pacer was late for 10 % of the arrivals (as the engine
		// books it when the process is descheduled).
		pr := res.Phases[0]
		pr.LateArrivals, pr.LatenessMax = 20, 80*time.Millisecond
		if GeneratorFault(pr) == "" {
			t.Fatal("no generator fault for 20 of 200 late arrivals")
		}
		got := statuses(Judge(pl, res))
		want := map[string]rules.Status{"p50 < 1h": rules.Inconclusive, "p50 < 1ns": rules.Inconclusive,
			"errors == 1": rules.Fail, "median(throughput) > 1000": rules.Inconclusive}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: %s, want %s", k, got[k], w)
			}
		}
		// Drop mode: drops after a late dispatch are the generator's.
		pr.LateArrivals, pr.LatenessMax = 0, 0
		pr.Summary.Dropped, pr.Summary.DroppedLate = 1, 1
		if why := GeneratorFault(pr); !strings.Contains(why, "dropped after a late dispatch") {
			t.Errorf("generator fault %q", why)
		}
	})
}

func TestTimeSensitive(t *testing.T) {
	for _, c := range []struct {
		m    string
		want bool
	}{
		{"p99", true}, {"p99.99", true}, {"p(99.9)", true}, {"median(p99)", true}, {"service.p75", true},
		{"max", true}, {"throughput", true}, {"worst(littleL)", true}, {"baseline.p99", true},
		{"errors", false}, {"ok", false}, {`errors_by["503"]`, false}, {"left_over", false},
		{"client.cpu", false}, {"server.ok", false}, {"connections", false}, {"dropped", false},
	} {
		if got := timeSensitive(c.m); got != c.want {
			t.Errorf("timeSensitive(%q) = %v, want %v", c.m, got, c.want)
		}
	}
	for _, c := range []struct {
		m    string
		want bool
	}{{"p99", true}, {"p99.99", true}, {"service.max", true}, {"median(mean)", true},
		{"throughput", false}, {"baseline.p99", false}, {"errors", false}} {
		if got := latencyStat(c.m); got != c.want {
			t.Errorf("latencyStat(%q) = %v, want %v", c.m, got, c.want)
		}
	}
}

// Timeouts censor latency: a rule on p50 holds on the requests that were
// fast enough, while the ones that timed out are in no latency figure; it
// is INCONCLUSIVE unless a rule bounds errors, timeouts or error_rate.
func TestTimeoutsCensorLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ph := schema.Phase{Name: "steady", Closed: &schema.Closed{Connections: 2}, Duration: dur("1s")}
		slow := func(seq uint64) time.Duration {
			if seq%5 == 0 {
				return time.Hour // times out
			}
			return 10 * time.Millisecond
		}
		pl := withRules(t, ph, 100*time.Millisecond, "p50 < 1h", "requests > 0")
		res := run(t, &fake.Driver{Service: slow}, pl, 100*time.Millisecond)
		if res.Phases[0].Summary.Timeouts == 0 {
			t.Fatal("no timeouts")
		}
		if got := statuses(Judge(pl, res)); got["p50 < 1h"] != rules.Inconclusive || got["requests > 0"] != rules.Pass {
			t.Errorf("with timeouts: %v, want p50 INCONCLUSIVE, requests PASS", got)
		}
		pl = withRules(t, ph, 100*time.Millisecond, "p50 < 1h", "timeouts < 1000")
		res = run(t, &fake.Driver{Service: slow}, pl, 100*time.Millisecond)
		if got := statuses(Judge(pl, res)); got["p50 < 1h"] != rules.Pass {
			t.Errorf("timeouts judged explicitly: %v, want p50 PASS", got)
		}
	})
}

// Client-side failures in any phase make the run the client's failure.
func TestClientFailure(t *testing.T) {
	ok := &PhaseResult{Summary: &measure.Summary{Requests: 10, ErrorsByCode: map[string]int64{"503": 3}}}
	if got := ClientFailure(&Result{Phases: []*PhaseResult{ok}}); got != "" {
		t.Errorf("target errors reported as the client's: %q", got)
	}
	bad := &PhaseResult{Summary: &measure.Summary{Requests: 100, ErrorsByCode: map[string]int64{drivers.CodeAddrNotAvail: 42}}}
	got := ClientFailure(&Result{Phases: []*PhaseResult{ok, bad}})
	for _, want := range []string{"42 requests failed with EADDRNOTAVAIL", "of 110 requests", "not the target"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}

// A Poisson phase bounded by its count lasts as long as its own draw:
// all n arrivals come, whichever seed, even where the draw runs past the
// plan's expected span Λ⁻¹(n) by more than the drain.
func TestPoissonCountBoundSendsEveryArrival(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for seed := int64(1); seed <= 6; seed++ {
			ph := schema.Phase{Open: &schema.Open{Rate: constRate(20), Connections: 2, Arrivals: "poisson", Seed: seed}, Requests: 40}
			d := &fake.Driver{Service: constService(time.Millisecond)}
			pl := onePhase(t, ph, 50*time.Millisecond)
			s := run(t, d, pl, 50*time.Millisecond).Phases[0].Summary
			last := pl.Phases[0].Schedule(1).At(39)
			if s.Arrivals != 40 || s.OK != 40 || s.LeftOver() != 0 || s.Elapsed != last+1 {
				t.Errorf("seed %d: arrivals %d ok %d left over %d elapsed %s; want 40/40/0 over %s", seed, s.Arrivals, s.OK, s.LeftOver(), s.Elapsed, last+1)
			}
		}
	})
}

// Left-over bounds of a Poisson draw are each arrival's own: now minus
// its intended start (the schedule walked forward, never back).
func TestPoissonLeftOverBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ph := schema.Phase{Open: &schema.Open{Rate: constRate(200), Connections: 1, Arrivals: "poisson", Seed: 3}, Duration: dur("1s")}
		d := &fake.Driver{Service: constService(20 * time.Millisecond), Serial: true}
		pl := onePhase(t, ph, 200*time.Millisecond)
		s := run(t, d, pl, 200*time.Millisecond).Phases[0].Summary
		lo, _ := s.LeftOverBound.Min()
		hi, _ := s.LeftOverBound.Max()
		if s.LeftOverUnsent < 50 || lo < 200*time.Millisecond || hi <= lo+500*time.Millisecond {
			t.Fatalf("left over %d, bounds %s … %s: want many, each ≥ the 200 ms drain, spread over the window", s.LeftOverUnsent, lo, hi)
		}
	})
}

// Lengths near the range of a time.Duration are refused by the plan, so
// that no sum of them (the recorder's phase plus drain) can overflow
// (issue 12: a timeout of 2562047h crashed the run).
func TestCompileBoundsLengths(t *testing.T) {
	ph := schema.Phase{Open: &schema.Open{Rate: constRate(1), Connections: 1}, Duration: dur("1s")}
	sc := &schema.Scenario{Version: 1, Name: "t", File: "t.yaml", Phases: []schema.Phase{ph}, Repeats: 1}
	if _, err := Compile(sc, Limits{Timeout: 2562047 * time.Hour}); err == nil || !strings.Contains(err.Error(), "driver timeout") {
		t.Errorf("huge timeout: %v", err)
	}
	sc.Phases[0].Duration = schema.Duration(MaxTime + time.Second)
	if _, err := Compile(sc, Limits{Timeout: time.Second}); err == nil || !strings.Contains(err.Error(), "phases[0].duration") {
		t.Errorf("huge duration: %v", err)
	}
	sc.Phases[0].Duration = schema.Duration(MaxTime)
	if _, err := Compile(sc, Limits{Timeout: MaxTime}); err != nil {
		t.Errorf("the longest allowed: %v", err)
	}
}

// stallingSleeper is the pacer's clock with one stall of the generator:
// the n-th wait wakes `stall` late, as a process the system stopped or
// descheduled does.
type stallingSleeper struct {
	Sleeper
	calls, n int
	stall    time.Duration
}

func (s *stallingSleeper) Until(t time.Time, done <-chan struct{}) bool {
	ok := s.Sleeper.Until(t, done)
	if s.calls++; s.calls == s.n && ok {
		time.Sleep(s.stall)
	}
	return ok
}

// TestGeneratorStallIsTheGenerators: the fresh user's experiment (a
// 300 ms stop of the runner in the middle of the quickstart) in fake time.
// The pacer wakes 300 ms late for arrival 600; the 90 arrivals that came
// due during the stall are handed out in a burst that meets busy
// connections, yet each of them is late by the generator's doing: they
// count as its lateness (not as the target keeping them waiting), so the
// run is invalidated by the generator, INCONCLUSIVE rather than a FAIL
// blamed on the target.
func TestGeneratorStallIsTheGenerators(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(2 * time.Millisecond)}
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(300), Connections: 8}, Duration: dur("4s")}, 10*time.Second)
		r := &Runner{Driver: d, Timeout: 10 * time.Second, NewSleeper: func() Sleeper {
			return &stallingSleeper{Sleeper: NewTimerSleeper(), n: 600, stall: 300 * time.Millisecond}
		}}
		res, err := r.Run(t.Context(), pl)
		if err != nil {
			t.Fatal(err)
		}
		pr := res.Phases[0]
		// Arrivals 600…689 came due in [2 s, 2.3 s); those more than
		// 10 ms before its end are late by more than the limit: 87.
		if pr.LateArrivals < 87 || pr.LateArrivals > 90 || pr.LatenessMax < 300*time.Millisecond {
			t.Fatalf("%d late arrivals (max %s), want the 87–90 the stall held back, 300ms", pr.LateArrivals, pr.LatenessMax)
		}
		if GeneratorFault(pr) == "" {
			t.Fatal("a 300 ms stall of the generator holding back 7 % of the arrivals does not make the generator the bottleneck")
		}
	})
}
