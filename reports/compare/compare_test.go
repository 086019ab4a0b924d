package compare

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/internal/sysinfo"
	"github.com/runner-dev/runner/reports"
	"github.com/runner-dev/runner/schema"
)

// The Mann–Whitney U test cannot reach α = 0.05 with 3 values a side:
// complete separation gives its smallest p, 2/C(6,3) = 0.1. benchmath
// says so too (it warns that 4 a side are needed).
func TestMannWhitneyThreeVsThreeNeverSignificant(t *testing.T) {
	tt := MannWhitney([]float64{1, 2, 3}, []float64{10, 11, 12})
	if math.Abs(tt.P-0.1) > 1e-9 {
		t.Errorf("p = %v, want 0.1 (2/C(6,3))", tt.P)
	}
	if tt.Significant {
		t.Error("3 vs 3 called significant at α = 0.05")
	}
	if math.Abs(tt.MinP-0.1) > 1e-9 {
		t.Errorf("MinP = %v, want 0.1", tt.MinP)
	}
	if len(tt.Warnings) == 0 || !strings.Contains(tt.Warnings[0], "need >= 4 samples") {
		t.Errorf("benchmath warnings = %q, want the need-4-samples warning", tt.Warnings)
	}
}

func TestMannWhitneyFiveVsFive(t *testing.T) {
	tt := MannWhitney([]float64{1, 2, 3, 4, 5}, []float64{10, 11, 12, 13, 14})
	if want := 2.0 / 252; math.Abs(tt.P-want) > 1e-9 || !tt.Significant {
		t.Errorf("separated 5 vs 5: p = %v significant %v, want p = %v significant", tt.P, tt.Significant, want)
	}
	// Interleaved samples: no difference.
	tt = MannWhitney([]float64{1, 3, 5, 7, 9}, []float64{2, 4, 6, 8, 10})
	if tt.Significant || tt.P < 0.5 {
		t.Errorf("interleaved 5 vs 5: p = %v significant %v, want p ≥ 0.5, not significant", tt.P, tt.Significant)
	}
	// Identical values on both sides (all ties): not significant.
	if tt := MannWhitney([]float64{2, 2, 2}, []float64{2, 2, 2}); tt.Significant {
		t.Errorf("all ties: p = %v called significant", tt.P)
	}
}

func TestMinP(t *testing.T) {
	for _, c := range []struct {
		n1, n2 int
		want   float64
	}{{3, 3, 0.1}, {4, 4, 2.0 / 70}, {5, 5, 2.0 / 252}, {3, 4, 2.0 / 35}, {3, 5, 2.0 / 56}, {1, 1, 1}, {2, 2, 1.0 / 3}, {0, 5, 1}} {
		if got := MinP(c.n1, c.n2); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("MinP(%d, %d) = %v, want %v", c.n1, c.n2, got, c.want)
		}
	}
}

// The median of an even count is the worse middle value, as in
// engine.Across; the input is not reordered.
func TestSpreadOf(t *testing.T) {
	in := []float64{4, 1, 3, 2}
	if s := spreadOf(in, true); s.Median != 3 || s.Min != 1 || s.Max != 4 || s.N() != 4 {
		t.Errorf("higher is worse: %+v, want median 3 [1 – 4]", s)
	}
	if s := spreadOf(in, false); s.Median != 2 {
		t.Errorf("lower is worse: median %v, want 2", s.Median)
	}
	if s := spreadOf([]float64{5, 1, 9}, true); s.Median != 5 {
		t.Errorf("odd count: median %v, want 5", s.Median)
	}
	if in[0] != 4 {
		t.Error("spreadOf reordered its input")
	}
}

// fakeRun builds a report whose phase "main" has the given latency (all
// percentiles alike) per repeat, plus a warmup phase that must be
// ignored; delay is the target's flag, cores the machine's.
func fakeRun(delay string, cores int, p99 ...float64) *reports.Run {
	sc := &schema.Scenario{Version: 1, Name: "fake", Description: "d-" + delay,
		Target: schema.Target{Serve: "http", Args: []string{"--delay", delay}},
		Phases: []schema.Phase{{Name: "main"}}, Repeats: len(p99)}
	r := &reports.Run{RunID: "x", Scenario: sc, TargetSpawned: "runner serve http --delay " + delay,
		Env:    sysinfo.Env{OS: "linux", Arch: "amd64", Kernel: "6.1", CPUModel: "cpu", Cores: cores, GOMAXPROCS: 8, GoVersion: "go1.26", Runner: "dev"},
		Result: &engine.Result{}}
	for i, v := range p99 {
		v := v
		er := 0.0
		r.Result.Phases = append(r.Result.Phases,
			&engine.PhaseResult{Repeat: i + 1, Phase: &engine.PhasePlan{Name: "warm", Warmup: true}, Metrics: &engine.Metrics{Throughput: 1}},
			&engine.PhaseResult{Repeat: i + 1, Phase: &engine.PhasePlan{Name: "main"}, Metrics: &engine.Metrics{
				Throughput: 1000 / v, AchievedRate: 1000 / v, ErrorRate: &er, LittleL: 2,
				Response: engine.Latency{Samples: 20000, P50: &v, P90: &v, P99: &v, P999: &v, Mean: &v}}})
	}
	return r
}

func side(label string, runs ...*reports.Run) *Side {
	s := &Side{Label: label, Arg: label + ".json", Runs: runs}
	for range runs {
		s.Files = append(s.Files, s.Arg)
	}
	return s
}

func TestCompareOneDifference(t *testing.T) {
	res, err := Compare(side("BASE", fakeRun("1ms", 8, 1, 1.1, 1.2, 1.05, 1.15)), side("NEW", fakeRun("5ms", 8, 5, 5.1, 5.2, 5.05, 5.15)))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Diffs) != 1 || res.Diffs[0].Param != "target" {
		t.Fatalf("diffs = %+v, want only the target (description is ignored)", res.Diffs)
	}
	if len(res.Phases) != 1 || res.Phases[0].Phase != "main" || res.Phases[0].NBase != 5 {
		t.Fatalf("phases = %+v, want main only (warmup left out) with 5 repeats", res.Phases)
	}
	var p99 *MetricComparison
	for _, m := range res.Phases[0].Metrics {
		if m.Metric.Name == "p99" {
			p99 = m
		}
	}
	if p99.Base.Median != 1.1 || p99.New.Median != 5.1 || math.Abs(p99.Delta-4) > 1e-9 || !p99.Test.Significant || !p99.Worse() {
		t.Errorf("p99 = %+v test %+v", p99, p99.Test)
	}
	var b bytes.Buffer
	res.WriteText(&b)
	out := b.String()
	for _, want := range []string{"Setup differences: 1", "Exactly one parameter differs", "p=0.008 significant (higher, worse)", "error_rate", "p=1.000 no significant change"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	res.WriteMarkdown(&b)
	if !strings.Contains(b.String(), "| p99 (ms) | 1.100 | [1.000 – 1.200] | 5.100 | [5.000 – 5.200] | +4.000 (+363.6%) | p=0.008 significant (higher, worse) |") {
		t.Errorf("markdown p99 row missing:\n%s", b.String())
	}
}

func TestCompareTwoDifferencesAndFewRepeats(t *testing.T) {
	res, err := Compare(side("BASE", fakeRun("1ms", 8, 1, 2)), side("NEW", fakeRun("5ms", 16, 5, 6, 7)))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Diffs) != 2 {
		t.Fatalf("diffs = %+v, want 2", res.Diffs)
	}
	var b bytes.Buffer
	res.WriteText(&b)
	out := b.String()
	for _, want := range []string{"WARNING: 2 parameters differ", "Not statistically summarized", "not summarized"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "p=") {
		t.Errorf("a p-value printed with 2 repeats:\n%s", out)
	}
}

func TestCompareThreeVsThreeNote(t *testing.T) {
	res, err := Compare(side("BASE", fakeRun("1ms", 8, 1, 2, 3)), side("NEW", fakeRun("1ms", 8, 10, 11, 12)))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	res.WriteText(&b)
	out := b.String()
	for _, want := range []string{"share their setup", "smallest p-value the Mann–Whitney U test can give is 0.100", "p=0.100 no significant change"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestComparePooledSideMixed(t *testing.T) {
	res, err := Compare(side("BASE", fakeRun("1ms", 8, 1, 2), fakeRun("2ms", 8, 1, 2)), side("NEW", fakeRun("1ms", 8, 1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Phases[0].NBase != 4 || len(res.BaseMixed) != 1 || res.BaseMixed[0].Param != "target" || len(res.NewMixed) != 0 {
		t.Errorf("pooled: NBase %d, BaseMixed %+v, NewMixed %+v", res.Phases[0].NBase, res.BaseMixed, res.NewMixed)
	}
}

func TestCompareNoCommonPhase(t *testing.T) {
	other := fakeRun("1ms", 8, 1, 2, 3)
	for _, pr := range other.Result.Phases {
		if !pr.Phase.Warmup {
			pr.Phase = &engine.PhasePlan{Name: "other"}
		}
	}
	_, err := Compare(side("BASE", fakeRun("1ms", 8, 1, 2, 3)), side("NEW", other))
	if !errors.Is(err, ErrNoCommonPhase) {
		t.Errorf("err = %v, want ErrNoCommonPhase", err)
	}
}

func TestScenarioDiffPaths(t *testing.T) {
	a, b := fakeRun("1ms", 8, 1), fakeRun("1ms", 8, 1)
	b.Scenario.Phases[0].Requests = 300
	b.Scenario.Name = "renamed"
	b.Scenario.Repeats = 9
	d, _, _ := setupDiffs([]*reports.Run{a}, []*reports.Run{b})
	// The name counts (another name may be another experiment: the
	// fresh user compared an http scenario with a frame one unwarned);
	// repeats do not (they are the sample size).
	if len(d) != 2 || d[0].Param != "scenario.name" || d[1].Param != "scenario.phases[0].requests" || d[1].Base != unset || d[1].New != "300" {
		t.Errorf("diffs = %+v, want scenario.name and scenario.phases[0].requests (unset → 300)", d)
	}
}

// TestCompareFlowWithRequests: BASE's phase ran flows (iterations), NEW's
// single requests. The medians are shown, but no change is called
// significant, however large: every metric is NOT COMPARABLE, the phase
// says why, and the steps only BASE ran are listed (the defect: an
// iteration's p99 compared with a request's as if one thing).
func TestCompareFlowWithRequests(t *testing.T) {
	base := fakeRun("1ms", 8, 1, 1.1, 1.2, 1.05, 1.15)
	for _, pr := range base.Result.Phases {
		if !pr.Phase.Warmup {
			pr.Steps = []engine.StepResult{{Flow: "shop", Name: "login"}, {Flow: "shop", Name: "pay"}}
		}
	}
	res, err := Compare(side("BASE", base), side("NEW", fakeRun("1ms", 8, 5, 5.1, 5.2, 5.05, 5.15)))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Flows) != 1 || res.Phases[0].Mismatch == nil {
		t.Fatalf("flows %+v, phase mismatch %v: want the phase main", res.Flows, res.Phases[0].Mismatch)
	}
	for _, m := range res.Phases[0].Metrics {
		if !m.NotComparable || m.Test != nil {
			t.Errorf("%s: not comparable %v, test %+v", m.Metric.Name, m.NotComparable, m.Test)
		}
	}
	var b bytes.Buffer
	res.WriteText(&b)
	out := b.String()
	for _, want := range []string{
		"WARNING: phase main: BASE ran flows (its figures count iterations, each over all its steps and think times), NEW single requests",
		"steps only BASE ran: login, pay.",
		"  NOT COMPARABLE: phase main:",
		"NOT COMPARABLE: the sides count different things",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "significant (") {
		t.Errorf("a change called significant between iterations and requests:\n%s", out)
	}
	b.Reset()
	res.WriteMarkdown(&b)
	if md := b.String(); !strings.Contains(md, "> **NOT COMPARABLE:** phase main:") || !strings.Contains(md, "**WARNING: phase main: BASE ran flows") {
		t.Errorf("markdown lacks the warnings:\n%s", md)
	}
}

// The dispatch window compared is the one each phase ran with (the
// breaker's 5000/s against 5001/s was reported as a change of rate alone,
// though the second ran with the default 1 ms window): a default that
// differs is a second difference, and an explicit window equal to the
// default is none.
func TestSetupComparesTheWindowRun(t *testing.T) {
	withOpen := func(rate float64, window *schema.Duration, ran time.Duration) *reports.Run {
		r := fakeRun("1ms", 8, 1)
		r.Scenario.Phases[0].Open = &schema.Open{Rate: schema.RateSpec{From: schema.Rate(rate), To: schema.Rate(rate)}, DispatchWindow: window}
		r.Plan = &engine.Plan{Phases: []engine.PhasePlan{{Name: "main", Model: engine.Open, DispatchWindow: ran, DispatchDefault: window == nil && ran > 0}}}
		return r
	}
	ms := schema.Duration(time.Millisecond)
	d, _, _ := setupDiffs([]*reports.Run{withOpen(5000, nil, 0)}, []*reports.Run{withOpen(5001, nil, time.Millisecond)})
	var params []string
	for _, x := range d {
		params = append(params, x.Param+": "+x.Base+" → "+x.New)
	}
	if len(d) != 2 || !slices.Contains(params, "plan.phases[0].dispatch_window: 0s → 1ms") {
		t.Errorf("5000/s vs 5001/s: %q, want the rate and the window the second ran with", params)
	}
	if d, _, _ := setupDiffs([]*reports.Run{withOpen(6000, &ms, time.Millisecond)}, []*reports.Run{withOpen(6000, nil, time.Millisecond)}); len(d) != 0 {
		t.Errorf("an explicit 1ms against the 1 ms default: %+v, want no difference", d)
	}
}
