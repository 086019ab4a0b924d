package execute

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/rules"
	"github.com/runner-dev/runner/reports"
	"github.com/runner-dev/runner/targets/httptarget"
	"github.com/runner-dev/runner/targets/targettest"
)

// compileText compiles a scenario's text, named s.yaml, with no
// environment variables.
func compileText(t *testing.T, yaml string) *engine.Plan {
	t.Helper()
	_, pl, err := CompileData(filepath.Join(t.TempDir(), "s.yaml"), []byte(yaml), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// A scenario runs from the library alone: the report comes back as a
// value, each phase is handed to OnPhase as it ends (marked incomplete
// until the run is judged), and the figures are the reference target's:
// every request served with at least its fixed 2 ms delay.
func TestRunReturnsTheJudgedReport(t *testing.T) {
	addr, _ := targettest.Start(t, func(ctx context.Context, ready func(string)) error {
		return httptarget.Serve(ctx, httptarget.Config{Listen: "127.0.0.1:0", Delay: 2 * time.Millisecond}, ready)
	})
	pl := compileText(t, `version: 1
name: lib
target: {url: "http://`+addr+`"}
driver: {http: {path: /x, timeout: 5s}}
phases:
  - {name: warm, warmup: true, closed: {connections: 2}, requests: 20}
  - {name: steady, closed: {connections: 2}, requests: 200}
assert:
  - errors == 0
  - min >= 2ms
`)
	rep := NewReport(pl)
	var seen []string
	err := Run(context.Background(), rep, Options{Log: zerolog.Nop(), OnPhase: func(pr *engine.PhaseResult) {
		seen = append(seen, pr.Phase.Name+":"+rep.Outcome)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0] != "warm:"+Incomplete || seen[1] != "steady:"+Incomplete {
		t.Errorf("OnPhase saw %v, want each phase once, while the run was incomplete", seen)
	}
	steady := rep.Result.Phases[1]
	if n := steady.Summary.OK; n != 200 {
		t.Errorf("steady: %d ok requests, want the 200 the plan bounds it to", n)
	}
	if rep.Verdict == nil || len(rep.Verdict.Rules) != 2 {
		t.Fatalf("verdict %+v, want both rules judged", rep.Verdict)
	}
	for _, r := range rep.Verdict.Rules {
		if r.Status != rules.Pass {
			t.Errorf("rule %s: %s (%s), want pass: every response took at least the target's 2 ms", r.Source, r.Status, r.Reason)
		}
	}
	if rep.Outcome != Pass && rep.Outcome != Inconclusive { // inconclusive: a busy machine stalled the generator
		t.Errorf("outcome %s (exit %d), error %q", rep.Outcome, rep.ExitCode, rep.Error)
	}
	if rep.Env.Timer == nil || rep.Env.Timer.Samples != TimerSamples {
		t.Errorf("timer resolution %+v, want %d samples recorded", rep.Env.Timer, TimerSamples)
	}
}

// Judging depends only on what a report records: the report saved as
// JSON, loaded back and judged again gives the same verdict, the same
// warnings and the same outcome.
func TestJudgeAgainFromTheSavedReport(t *testing.T) {
	addr, _ := targettest.Start(t, func(ctx context.Context, ready func(string)) error {
		return httptarget.Serve(ctx, httptarget.Config{Listen: "127.0.0.1:0", ErrorEvery: 10, ErrorStatus: 503}, ready)
	})
	pl := compileText(t, `version: 1
name: again
target: {url: "http://`+addr+`"}
driver: {http: {path: /x, timeout: 5s}}
phases:
  - {name: steady, closed: {connections: 1}, requests: 100}
assert:
  - errors == 0
  - p99 < 1s
`)
	rep := NewReport(pl)
	if err := Run(context.Background(), rep, Options{Log: zerolog.Nop()}); err != nil {
		t.Fatal(err)
	}
	if rep.Outcome != Fail {
		t.Fatalf("outcome %s, want fail: one request in ten answers 503", rep.Outcome)
	}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := reports.WriteJSON(path, rep); err != nil {
		t.Fatal(err)
	}
	saved, err := reports.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	saved.Verdict, saved.Warnings, saved.Outcome, saved.ExitCode = nil, nil, "", 0
	Judge(saved, nil, nil)
	Decide(saved)
	if saved.Outcome != rep.Outcome || saved.ExitCode != rep.ExitCode {
		t.Errorf("judged again: %s (exit %d), want %s (exit %d)", saved.Outcome, saved.ExitCode, rep.Outcome, rep.ExitCode)
	}
	for i, r := range rep.Verdict.Rules {
		got := saved.Verdict.Rules[i]
		if got.Status != r.Status || len(got.Repeats) != len(r.Repeats) || got.Repeats[0].Observed != r.Repeats[0].Observed {
			t.Errorf("rule %s judged again: %s %+v, want %s %+v", r.Source, got.Status, got.Repeats, r.Status, r.Repeats)
		}
	}
	if len(saved.Warnings) != len(rep.Warnings) {
		t.Errorf("judged again: %d warnings, want the run's %d", len(saved.Warnings), len(rep.Warnings))
	}
}

// Nothing is sent when the run cannot start: Run says why, the outcome is
// could-not-run (or interrupted, for a cancelled context), never judged.
func TestRunThatCannotStart(t *testing.T) {
	pl := compileText(t, `version: 1
name: spawn
target: {serve: http}
driver: {http: {path: /x}}
phases:
  - {name: steady, closed: {connections: 1}, requests: 10}
`)
	rep := NewReport(pl)
	err := Run(context.Background(), rep, Options{Executable: filepath.Join(t.TempDir(), "no-such-runner"), Log: zerolog.Nop()})
	if err == nil || rep.Outcome != CouldNotRun || rep.ExitCode != ExitCouldNotRun || rep.Error == "" || rep.Verdict != nil {
		t.Errorf("err %v, outcome %s, exit %d, error %q, verdict %v: want could-not-run, unjudged", err, rep.Outcome, rep.ExitCode, rep.Error, rep.Verdict)
	}
	if len(rep.Result.Phases) != 0 {
		t.Errorf("%d phases measured, want none", len(rep.Result.Phases))
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("interrupted by SIGINT"))
	rep = NewReport(pl)
	err = Run(ctx, rep, Options{Executable: filepath.Join(t.TempDir(), "no-such-runner"), Log: zerolog.Nop()})
	if err == nil || err.Error() != "interrupted by SIGINT" || rep.Outcome != Interrupted || rep.ExitCode != ExitCouldNotRun || rep.Error != "" {
		t.Errorf("cancelled: err %v, outcome %s, exit %d, error %q: want interrupted by its cause", err, rep.Outcome, rep.ExitCode, rep.Error)
	}
}

// Decide never passes a run that could not complete, was interrupted,
// was never judged, or whose generator was the bottleneck; a failed rule
// wins over an inconclusive one.
func TestDecide(t *testing.T) {
	pass := &engine.Verdict{Status: rules.Pass}
	for _, c := range []struct {
		name    string
		rep     reports.Run
		outcome string
		exit    int
	}{
		{"pass", reports.Run{Verdict: pass}, Pass, ExitPass},
		{"error", reports.Run{Verdict: pass, Error: "the spawned target exited during the run"}, CouldNotRun, ExitCouldNotRun},
		{"interrupted", reports.Run{Verdict: pass, Result: &engine.Result{Interrupted: true}}, Interrupted, ExitCouldNotRun},
		{"unjudged", reports.Run{}, Inconclusive, ExitInconclusive},
		{"fail", reports.Run{Verdict: &engine.Verdict{Status: rules.Fail}}, Fail, ExitFail},
		{"inconclusive", reports.Run{Verdict: &engine.Verdict{Status: rules.Inconclusive}}, Inconclusive, ExitInconclusive},
		{"generator-bound", reports.Run{Verdict: pass, Warnings: []engine.Warning{{Code: "client-cpu", Invalidates: true}}}, Inconclusive, ExitInconclusive},
		{"generator-bound fail", reports.Run{Verdict: &engine.Verdict{Status: rules.Fail}, Warnings: []engine.Warning{{Code: "client-cpu", Invalidates: true}}}, Fail, ExitFail},
	} {
		rep := c.rep
		if rep.Result == nil {
			rep.Result = &engine.Result{}
		}
		Decide(&rep)
		if rep.Outcome != c.outcome || rep.ExitCode != c.exit {
			t.Errorf("%s: %s (exit %d), want %s (exit %d)", c.name, rep.Outcome, rep.ExitCode, c.outcome, c.exit)
		}
	}
}

// Every shipped scenario compiles, and its driver is built from the one
// table of driver kinds under the key of the section the scenario names.
func TestShippedScenariosBuildTheirDriver(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped scenarios (%v)", err)
	}
	seen := map[string]bool{}
	for _, file := range files {
		sc, pl, err := Compile(file)
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if pl.Scenario != sc {
			t.Errorf("%s: the plan holds another scenario", file)
		}
		d, err := NewDriver(sc, placeholderURL(sc))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		want := map[bool]string{sc.Driver.HTTP != nil: "driver.http", sc.Driver.WebSocket != nil: "driver.websocket", sc.Driver.Frame != nil: "driver.frame"}[true]
		if d.Key != want || d.Driver == nil || d.Timeout <= 0 || d.MaxInflight < 1 {
			t.Errorf("%s: driver %q (timeout %s, in-flight %d), want %q built", file, d.Key, d.Timeout, d.MaxInflight, want)
		}
		seen[d.Key] = true
	}
	if len(seen) != len(kinds) {
		t.Errorf("shipped scenarios use %v: want every driver kind (%d) exercised", seen, len(kinds))
	}
}

// The arguments of every reference target a scenario can spawn are
// checked when it is compiled, as the target will parse them: a bad one
// is a located problem before anything is sent (frame and ws-gateway used
// to pass validation and fail only once a run had started the target).
func TestTargetArgsCheckedForEveryKind(t *testing.T) {
	for _, c := range []struct{ serve, driver, args string }{
		{"http", "{http: {path: /}}", `["--dealy", "1ms"]`},
		{"frame", "{frame: {preset: lkdf}}", `["--handler", "echoo"]`},
		{"ws-gateway", `{websocket: {message: '{"id": {{seq}}}'}}`, `["--bogus"]`},
	} {
		yaml := `version: 1
name: args
target: {serve: ` + c.serve + `, args: ` + c.args + `}
driver: ` + c.driver + `
phases:
  - {name: steady, closed: {connections: 1}, requests: 1}
`
		_, pl, err := CompileData(filepath.Join(t.TempDir(), "s.yaml"), []byte(yaml), func(string) (string, bool) { return "", false })
		if err == nil || pl != nil {
			t.Errorf("%s %s: compiled; want its arguments refused", c.serve, c.args)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "s.yaml:3:") || !strings.Contains(msg, "runner serve "+c.serve+" --help") {
			t.Errorf("%s %s: %q; want a problem on line 3 naming runner serve %s --help", c.serve, c.args, msg, c.serve)
		}
	}
}

// phaseOf is a finished phase result of pl's phase i, repeat rep: n
// arrivals, each answered ok after rt, one every 10 ms over 1 s, and
// flow steps named steps (each with the same n answers), none when nil.
func phaseOf(pl *engine.Plan, i, rep, n int, rt time.Duration, steps ...string) *engine.PhaseResult {
	record := func() *measure.Summary {
		rec := measure.NewRecorder(1, measure.Options{Duration: 2 * time.Second})
		for k := range n {
			due := time.Duration(k) * 10 * time.Millisecond
			rec.AddArrivals(1)
			rec.Record(0, &measure.Result{Seq: uint64(k + 1), Intended: due, Sent: due, Done: due + rt, Outcome: drivers.Outcome{Class: drivers.OK, Responded: true}})
		}
		return rec.Summary(time.Second)
	}
	pr := &engine.PhaseResult{Repeat: rep, Phase: &pl.Phases[i], Summary: record(), Wall: time.Second,
		ConnectionsRequested: pl.Phases[i].Connections, ConnectionsEstablished: pl.Phases[i].Connections}
	for _, st := range steps {
		pr.Steps = append(pr.Steps, engine.StepResult{Flow: "shop", Name: st, Summary: record()})
	}
	pr.Metrics = engine.MetricsOf(pr)
	return pr
}

// TestJudge_BaselineOfSingleRequests: a flow run judged against a
// baseline of single requests (the reviewer's base2.yaml). Every rule of
// the phase that reads baseline.* (not only the first) is INCONCLUSIVE in
// every repeat, a would-be FAIL too, each saying why; a rule of the
// baseline's step figures and one without the baseline keep their
// verdicts; the warning names both rules; the run is inconclusive, and
// its reason is the baseline, not the load generator.
func TestJudge_BaselineOfSingleRequests(t *testing.T) {
	const flow = `version: 1
name: f
target: {url: "http://127.0.0.1:1"}
driver: {http: {path: /x, timeout: 2s}}
phases:
  - {name: steady, open: {rate: 100/s, connections: 4}, duration: 1s}
repeats: 2
assert:
  - {rule: "median(errors) <= baseline.errors", phase: steady}
  - {rule: "p50 < baseline.p50", phase: steady}
  - errors == 0
`
	pl := compileText(t, flow)
	base := compileText(t, strings.Replace(flow, "repeats: 2", "repeats: 1", 1))
	rep := NewReport(pl)
	rep.Result.Phases = []*engine.PhaseResult{
		phaseOf(pl, 0, 1, 100, 50*time.Millisecond, "login", "items"),
		phaseOf(pl, 0, 2, 100, 50*time.Millisecond, "login", "items"),
	}
	baseline := &engine.Result{Phases: []*engine.PhaseResult{phaseOf(base, 0, 1, 100, 2*time.Millisecond)}}
	Judge(rep, baseline, nil)
	Decide(rep)
	if rep.Outcome != Inconclusive || rep.Verdict.Status != rules.Inconclusive {
		t.Errorf("outcome %s, verdict %s; want inconclusive, inconclusive", rep.Outcome, rep.Verdict.Status)
	}
	for _, rr := range rep.Verdict.Rules {
		want := rules.Inconclusive
		if rr.Source == "errors == 0" {
			want = rules.Pass
		}
		if rr.Status != want || len(rr.Repeats) != 2 {
			t.Errorf("rule %s: %s over %d repeats, want %s over 2", rr.Source, rr.Status, len(rr.Repeats), want)
		}
		for k, v := range rr.Repeats {
			if v.Status != want {
				t.Errorf("rule %s, repeat %d: %s, want %s", rr.Source, k+1, v.Status, want)
			}
			if want == rules.Inconclusive && (!strings.Contains(v.Reason, "ran single requests, this run flows") || !strings.Contains(v.Reason, "baseline.*")) {
				t.Errorf("rule %s, repeat %d: reason %q does not say why", rr.Source, k+1, v.Reason)
			}
		}
	}
	found := false
	for _, w := range rep.Warnings {
		if w.Code == "baseline-flows" {
			found = true
			for _, want := range []string{`"median(errors) <= baseline.errors"`, `"p50 < baseline.p50"`} {
				if !strings.Contains(w.Message, want) || !w.Invalidates {
					t.Errorf("warning (invalidates %v) does not name %s: %s", w.Invalidates, want, w.Message)
				}
			}
		}
	}
	if !found {
		t.Fatalf("no baseline-flows warning: %+v", rep.Warnings)
	}
	var console, junit bytes.Buffer
	reports.Console(&console, rep, true)
	if err := reports.JUnit(&junit, rep); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"console": console.String(), "junit": junit.String()} {
		if strings.Contains(out, "generator was the bottleneck") {
			t.Errorf("%s blames the load generator:\n%s", name, out)
		}
		if !strings.Contains(out, "ran single requests, this run flows") {
			t.Errorf("%s does not say why the baseline rules are inconclusive:\n%s", name, out)
		}
	}
}
