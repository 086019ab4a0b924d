package execute

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/rules"
	"github.com/runner-dev/runner/internal/clock"
	"github.com/runner-dev/runner/internal/limits"
	"github.com/runner-dev/runner/internal/procstat"
	"github.com/runner-dev/runner/internal/redact"
	"github.com/runner-dev/runner/internal/sysinfo"
	"github.com/runner-dev/runner/reports"
	"github.com/runner-dev/runner/targets"
)

// Options are what Run needs from its caller. The zero value runs quietly,
// finds the runner executable with targets.Self, and judges without a
// baseline or a calibration.
type Options struct {
	// Executable is the runner executable that spawns a reference target
	// (`runner serve KIND`); "" means targets.Self.
	Executable string
	// TargetStderr receives a spawned target's stderr; nil discards it.
	TargetStderr io.Writer
	// Log is the engine's logger (connection events, retries).
	Log zerolog.Logger
	// Progress, when set, is called by the engine about once a second.
	Progress func(engine.Progress)
	// OnPhase, when set, is called after each phase ended, once the
	// report holds it (its outcome then Incomplete, or Interrupted): the
	// caller appends its rows and writes a snapshot of the report.
	OnPhase func(*engine.PhaseResult)
	// Baseline is a saved result whose phases rules may read as
	// baseline.<metric>; BaselineRef says which run it was (the report
	// records it, and a mismatching scenario name warns).
	Baseline    *engine.Result
	BaselineRef *reports.BaselineRef
	// Calibration, when set, gives the client ceiling of the machine
	// whose environment the run recorded (LoadCalibration does, from the
	// saved calibration); nil when there is none. Phases near it warn
	// client-ceiling.
	Calibration func(sysinfo.Env) *Calibration
	// AfterSpawn, when set, is called with a spawned target's URL before
	// the first phase (tests move its counters there).
	AfterSpawn func(url string)
	// Segment, when not whole, runs that segment of the plan for a
	// scale-out (engine.Segment): rep.Segment must be set (NewSegment),
	// the run is not judged, and its outcome is Ran when it ran.
	Segment engine.Segment
	// StartAt, when not zero, starts the first phase at that instant and
	// every later one on the plan's timetable (engine.Runner.StartAt),
	// with PhaseGap (0: engine.DefaultPhaseGap) after each drain bound.
	StartAt  time.Time
	PhaseGap time.Duration
	// NoEventLoop keeps closed phases on a goroutine per connection
	// (engine.Runner.NoEventLoop).
	NoEventLoop bool
	// Hold, when set, is called at named points of the run: "after-run"
	// when the last phase has ended, before judging. A test holds the run
	// there to send it a signal.
	Hold func(ctx context.Context, point string)
}

// TimerSamples is how many 1 ms sleeps measure each clock's resolution
// (internal/clock.Measure), once per run.
const TimerSamples = 25

// NewReport starts the report of one run of a compiled plan, with a new
// run ID (UTC time plus random bits: sortable, and unique across
// concurrent runs) and the redactor of the scenario's secrets.
func NewReport(pl *engine.Plan) *reports.Run {
	var b [3]byte
	rand.Read(b[:])
	return &reports.Run{
		RunID:    time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:]),
		Tool:     "runner",
		Scenario: pl.Scenario,
		Plan:     pl,
		Result:   &engine.Result{},
		Redact:   redact.New(pl.Scenario.Secrets),
	}
}

// Run runs the plan of rep (started by NewReport) and fills rep: the
// environment and timer resolution, the target (spawned from the
// scenario's target.serve, and stopped at the end, or its URL), every
// phase's result, then the verdict, the repeat summary, the warnings and
// the outcome (Judge, Decide). It writes no file: the caller writes the
// reports (OnPhase for the snapshots after each phase).
//
// It returns nil when the plan ran, whatever the outcome; an error of a
// run that started (the target crashed, ports ran out, a fetch failed) is
// in rep.Error and makes the outcome CouldNotRun. It returns an error when
// nothing was sent: ctx was cancelled before the first phase (rep's
// outcome Interrupted; the error is ctx's cause) or the run could not
// start (client limits, the target would not start or cannot be metered,
// the driver refused its configuration: outcome CouldNotRun, the error is
// rep.Error).
func Run(ctx context.Context, rep *reports.Run, o Options) error {
	pl := rep.Plan
	sc := pl.Scenario
	rep.Env = sysinfo.Collect()
	// The sleep resolution of this machine, once per run (~60 ms).
	timer := clock.Measure(TimerSamples, time.Millisecond)
	rep.Env.Timer = &timer
	rep.Started = time.Now()

	fail := func(format string, a ...any) error {
		if ctx.Err() != nil {
			// A signal before the first phase (while the spawned target
			// was starting, say) is what stopped the run: interrupted,
			// not a failure of the target's ("context canceled").
			rep.Result.Interrupted = true
			rep.Outcome, rep.ExitCode = Interrupted, ExitCouldNotRun
			return context.Cause(ctx)
		}
		rep.Error = fmt.Sprintf(format, a...)
		rep.Outcome, rep.ExitCode = CouldNotRun, ExitCouldNotRun
		return errors.New(rep.Error)
	}

	if err := CheckSegment(pl, o.Segment); err != nil {
		return fail("%s: %v", sc.File, err)
	}
	if seg := rep.Segment; seg != nil {
		seg.Clock = clock.SyncState()
	}
	// Client limits come before any traffic: a segment's share of them.
	conns := o.Segment.Connections(pl.MaxConnections)
	if _, err := limits.Descriptors(conns); err != nil {
		return fail("%s: %v", sc.File, err)
	}
	if err := limits.Ports(conns); err != nil {
		return fail("%s: %v", sc.File, err)
	}

	base := sc.Target.URL
	var proc *targets.Process
	if sc.Target.Serve != "" {
		exe := o.Executable
		if exe == "" {
			var err error
			if exe, err = targets.Self(); err != nil {
				return fail("find the runner executable to spawn the target: %v", err)
			}
		}
		var err error
		proc, err = targets.Spawn(ctx, exe, sc.Target.Serve, sc.Target.Args, orDiscard(o.TargetStderr), 10*time.Second)
		if err != nil {
			return fail("%s: target: %v", sc.File, err)
		}
		defer proc.Stop()
		base = proc.URL
		if o.AfterSpawn != nil {
			o.AfterSpawn(base)
		}
		rep.TargetSpawned = "runner serve " + sc.Target.Serve + " " + strings.Join(sc.Target.Args, " ")
	}
	rep.Target = base

	d, err := NewDriver(sc, base)
	if err != nil {
		return fail("%s: %s: %v", sc.File, d.Key, err)
	}
	rep.Insecure = d.Insecure
	r := &engine.Runner{
		Driver:   d.Driver,
		Timeout:  d.Timeout,
		Progress: o.Progress,
		Log:      o.Log,
		Redact:   rep.Redact.String,
		Segment:  o.Segment,
		StartAt:  o.StartAt,
		PhaseGap: o.PhaseGap,

		NoEventLoop: o.NoEventLoop,
	}
	if sc.Reconcile != nil {
		tlsConf, err := fetchTLS(d, fetchURL(base, sc.Reconcile.Fetch))
		if err != nil {
			return fail("%s: reconcile.fetch: %v", sc.File, err)
		}
		r.Counters = fetchCounters(base, sc.Reconcile.Fetch, d.Driver, tlsConf, pl.ServerCounters())
	}
	switch {
	case proc != nil:
		r.TargetMeter = meterProcess(proc.Pid())
	case sc.Target.Pid > 0:
		// Checked before any traffic: a wrong pid is a scenario error,
		// not a phase without target figures.
		if _, err := procstat.Take(sc.Target.Pid); err != nil {
			return fail("%s: target.pid: cannot read process %d: %v", sc.File, sc.Target.Pid, err)
		}
		r.TargetMeter = meterProcess(sc.Target.Pid)
	}
	r.OnPhase = func(pr *engine.PhaseResult) {
		rep.Result.Phases = append(rep.Result.Phases, pr)
		// A snapshot until the final write replaces it.
		rep.Outcome, rep.ExitCode = Incomplete, ExitCouldNotRun
		if pr.Interrupted {
			// Marked now, not only at the end: a second signal may force
			// the process out before the final write.
			rep.Result.Interrupted = true
			rep.Outcome = Interrupted
		}
		if o.OnPhase != nil {
			o.OnPhase(pr)
		}
	}
	res, runErr := r.Run(ctx, pl)
	rep.Result.Interrupted = res.Interrupted
	rep.Result.ServerAtStart = res.ServerAtStart
	rep.Ended = time.Now()
	if o.Hold != nil {
		o.Hold(ctx, "after-run")
	}
	// A signal after the last phase (in its counters' fetch, while
	// judging) interrupts the run all the same: every phase was measured
	// and is judged, but the outcome is interrupted (exit 3).
	SignalledLate(ctx, rep)
	if proc != nil && proc.Exited() {
		runErr = errors.Join(runErr, errors.New("the spawned target exited during the run"))
	}
	if msg := engine.ClientFailure(rep.Result); msg != "" {
		// Ports or descriptors ran out mid-run: the client's failure,
		// never a pass and never the target's (exit 3).
		runErr = errors.Join(runErr, errors.New(msg))
	}
	if rep.Segment != nil {
		// A segment is not judged: the merge of every segment is. Its
		// self-checks are still shown to whoever runs it.
		rep.Segment.Arrivals = fingerprints(pl, o.Segment)
		rep.Warnings = segmentChecks(pl, rep.Result)
		if runErr != nil {
			rep.Error = runErr.Error()
		}
		Decide(rep)
		return nil
	}
	rep.Baseline = o.BaselineRef
	var cal *Calibration
	if o.Calibration != nil {
		cal = o.Calibration(rep.Env)
	}
	Judge(rep, o.Baseline, cal)
	if runErr != nil {
		rep.Error = runErr.Error()
	}
	Decide(rep)
	return nil
}

// Judge judges a run from what its report records, and nothing else: it
// sets the verdict of the plan's rules (against base, a saved result, for
// baseline.<metric>; nil when there is none), the repeat summary (median
// and range) and the warnings: run-wide ones first (stale or moved
// counters, timer granularity from the recorded resolution), then each
// phase's self-checks (engine.Checks), then the client ceiling (cal, nil
// when none) and a baseline of another scenario (rep.Baseline). A saved
// or merged result is judged again the same way.
func Judge(rep *reports.Run, base *engine.Result, cal *Calibration) {
	pl, res := rep.Plan, rep.Result
	rep.Verdict = engine.JudgeAgainst(pl, res, base)
	rep.Across = engine.Across(res)
	fetchers := 1
	if rep.Merged != nil {
		fetchers = rep.Merged.N // every segment fetched
	}
	rep.Warnings = append(engine.StaleCounters(res, rep.TargetSpawned != ""), engine.CountersMoved(res, fetchers, pl.ServerCounters())...)
	if t := rep.Env.Timer; t != nil {
		rep.Warnings = append(rep.Warnings, engine.TimerGranularity(pl, *t)...)
	}
	rep.Warnings = append(rep.Warnings, engine.Checks(pl, res)...)
	rep.Warnings = append(rep.Warnings, ceilingWarnings(rep, cal)...)
	if b := rep.Baseline; b != nil && rep.Scenario != nil && b.Scenario != rep.Scenario.Name {
		rep.Warnings = append(rep.Warnings, engine.Warning{Code: "baseline-mismatch",
			Message: fmt.Sprintf("the baseline %s is scenario %q (run %s), not %q: baseline.* compares phases of another experiment", b.File, b.Scenario, b.RunID, rep.Scenario.Name)})
	}
	var mismatches []reports.FlowMismatch
	if base != nil && res != nil {
		mismatches = reports.FlowMismatches(base.Phases, res.Phases)
	}
	rep.Warnings = append(rep.Warnings, baselineFlowWarnings(pl, mismatches)...)
	baselineFlowRules(rep.Verdict, pl, mismatches)
}

// baselineFlowWarnings warn of each phase whose figures count different
// things in this run and in its baseline (mismatches, of
// reports.FlowMismatches: iterations of flows against single requests,
// or flows of other steps), naming the figures that are not comparable
// and the steps only one ran. One that rules of the phase read through
// baseline.<metric> (not a step's, baseline.step.NAME.*, which compares a
// step with itself) invalidates the run, naming every such rule: each
// compares iterations with requests, so a PASS cannot stand
// (INCONCLUSIVE, baselineFlowRules). None without a plan.
func baselineFlowWarnings(pl *engine.Plan, mismatches []reports.FlowMismatch) []engine.Warning {
	if pl == nil {
		return nil
	}
	var ws []engine.Warning
	for _, m := range mismatches {
		w := engine.Warning{Code: "baseline-flows", Phase: m.Phase, Message: m.Message("the baseline", "this run")}
		if rs := readsBaselineFigures(pl, m.Phase); len(rs) > 0 {
			w.Invalidates = true
			quoted := make([]string, len(rs))
			for i, r := range rs {
				quoted[i] = strconv.Quote(r)
			}
			w.Message += fmt.Sprintf("; the rule(s) %s read them (baseline.*), so their verdicts cannot stand (INCONCLUSIVE)", strings.Join(quoted, ", "))
		}
		ws = append(ws, w)
	}
	return ws
}

// baselineFlowRules makes INCONCLUSIVE, in every repeat, each rule of v
// judged on a phase of mismatches that reads the baseline phase's own
// figures (readsBaselineFigure): a PASS or a FAIL there compares
// iterations with single requests (or iterations of other work), which
// says nothing; an ERROR stays. Each such repeat's reason says why, and
// v's status is the worst again. A nil v is left alone.
func baselineFlowRules(v *engine.Verdict, pl *engine.Plan, mismatches []reports.FlowMismatch) {
	if v == nil || pl == nil || len(mismatches) == 0 {
		return
	}
	reading := map[string]bool{}
	for _, sr := range slices.Concat(pl.Rules, pl.Expect) {
		if readsBaselineFigure(sr.Rule) {
			reading[sr.Source] = true
		}
	}
	why := map[string]string{}
	for _, m := range mismatches {
		switch {
		case m.BaseFlow && !m.NewFlow:
			why[m.Phase] = "the baseline's phase " + m.Phase + " ran flows (its figures count iterations), this run single requests"
		case !m.BaseFlow && m.NewFlow:
			why[m.Phase] = "the baseline's phase " + m.Phase + " ran single requests, this run flows (its figures count iterations)"
		default:
			why[m.Phase] = "the baseline's phase " + m.Phase + " ran flows of other steps than this run (other iterations)"
		}
	}
	var all []rules.Status
	for _, rs := range [][]engine.RuleResult{v.Rules, v.Expect} {
		for i := range rs {
			rr := &rs[i]
			if w, ok := why[rr.Phase]; ok && reading[rr.Source] {
				reason := "not comparable: " + w + ", and this rule reads the baseline phase's own figures (baseline.*; a step's, baseline.step.NAME.*, would be comparable)"
				for k := range rr.Repeats {
					if st := rr.Repeats[k].Status; st == rules.Pass || st == rules.Fail {
						rr.Repeats[k].Status, rr.Repeats[k].Reason = rules.Inconclusive, reason
					}
				}
				if rr.Status == rules.Pass || rr.Status == rules.Fail {
					rr.Status, rr.Reason = rules.Inconclusive, reason
				}
			}
			all = append(all, rr.Status)
		}
	}
	v.Status = rules.Worst(all...)
}

// readsBaselineFigures returns the sources of the rules judged on phase
// that read a figure of the baseline's phase itself (readsBaselineFigure),
// each once, in the plan's order; nil when none does.
func readsBaselineFigures(pl *engine.Plan, phase string) []string {
	var out []string
	for _, sr := range slices.Concat(pl.Rules, pl.Expect) {
		if (sr.Phase == "" || sr.Phase == phase) && readsBaselineFigure(sr.Rule) && !slices.Contains(out, sr.Source) {
			out = append(out, sr.Source)
		}
	}
	return out
}

// readsBaselineFigure reports whether r reads a figure of the baseline's
// phase itself (baseline.p99), not only a step's (baseline.step.login.p99).
func readsBaselineFigure(r *rules.Rule) bool {
	for _, m := range r.Metrics() {
		if strings.HasPrefix(m, "baseline.") && !strings.HasPrefix(m, "baseline.step.") && !strings.HasPrefix(m, "baseline.step[") {
			return true
		}
	}
	return false
}

// SignalledLate marks rep interrupted when ctx was cancelled (the first
// SIGINT or SIGTERM) although no phase was: the signal came after the
// last phase had ended. It reports whether it marked it now.
func SignalledLate(ctx context.Context, rep *reports.Run) bool {
	if ctx.Err() == nil || rep.Result.Interrupted {
		return false
	}
	rep.Result.Interrupted = true
	return true
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// NewSegment marks rep, just started by NewReport, as segment seg of a
// scale-out started at startAt (zero: when ready) on a timetable with
// gap (Options.PhaseGap): its report carries the segment block, and its
// output paths expand {segment}.
func NewSegment(rep *reports.Run, seg engine.Segment, startAt time.Time, gap time.Duration) error {
	hash, err := reports.PlanHash(rep)
	if err != nil {
		return err
	}
	rep.Segment = &reports.Segment{K: seg.K, N: seg.N, PlanHash: hash}
	if !startAt.IsZero() {
		at := startAt.UTC()
		rep.Segment.StartAt = &at
		rep.Segment.PhaseGap = gap
	}
	return nil
}

// CheckSegment says why pl cannot run as segment seg, before any
// traffic: a reference target the scenario spawns (every segment would
// spawn its own and load only that), or an open phase with fewer
// connections than segments (engine.Segment.Check). nil for the whole
// plan.
func CheckSegment(pl *engine.Plan, seg engine.Segment) error {
	if seg.Whole() {
		return nil
	}
	if pl.Scenario != nil && pl.Scenario.Target.Serve != "" {
		return fmt.Errorf("target.serve: a scale-out segment cannot spawn the reference target (each segment would load a target of its own): start it once (runner serve %s) and name it by target.url", pl.Scenario.Target.Serve)
	}
	return seg.Check(pl)
}

// fingerprints are the arrival fingerprints of segment seg's open phases,
// per repeat and phase (engine.ArrivalFingerprint).
func fingerprints(pl *engine.Plan, seg engine.Segment) []engine.Fingerprint {
	var out []engine.Fingerprint
	for rep := 1; rep <= pl.Repeats; rep++ {
		for i := range pl.Phases {
			if fp, ok := engine.ArrivalFingerprint(seg.Phase(&pl.Phases[i]), rep); ok {
				out = append(out, fp)
			}
		}
	}
	return out
}

// segmentChecks are the self-checks a segment shows whoever runs it: the
// run's, less those about judging (sample guards, one repeat, the closed
// model's tail), which concern the merged result, not a share of it.
func segmentChecks(pl *engine.Plan, res *engine.Result) []engine.Warning {
	var out []engine.Warning
	for _, w := range engine.Checks(pl, res) {
		switch w.Code {
		case "few-samples", "single-repeat", "closed-model":
		default:
			out = append(out, w)
		}
	}
	return out
}
