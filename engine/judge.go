package engine

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/runner-dev/runner/engine/rules"
)

// RuleResult is one rule judged on one phase across the repeats.
type RuleResult struct {
	// Source is the rule as written; Phase the phase it was judged on.
	Source string `json:"rule"`
	Phase  string `json:"phase"`
	// Status is the worst over the repeats: a rule holds only if it holds
	// in every repeat.
	Status rules.Status `json:"status"`
	// Repeats holds the verdict of each repeat that finished the phase,
	// RepeatNumbers their 1-based numbers.
	Repeats       []rules.Verdict `json:"repeats"`
	RepeatNumbers []int           `json:"repeat_numbers"`
	// Reason says why the rule did not pass.
	Reason string `json:"reason,omitempty"`
}

// Verdict is a judged run.
type Verdict struct {
	// Status is the worst of all rules and reconciliation checks; Pass
	// when there are none.
	Status rules.Status `json:"status"`
	// Rules are the `assert` rules, per phase judged.
	Rules []RuleResult `json:"rules"`
	// Expect are the `reconcile.expect` rules, per phase judged.
	Expect []RuleResult `json:"expect,omitempty"`
}

// RuleEnv builds the rule environment of one measured (repeat, phase): the
// catalogue's metrics read from it (MetricPhase), the target's counter
// deltas, and its flow steps' metrics (StepPhases: step.NAME.*).
func RuleEnv(pr *PhaseResult) rules.Env {
	return rules.EnvOf(pr.MetricPhase(), pr.Server, nil).Uncertain(pr.ServerUncertain).Unknown(pr.ServerUnknown).WithSteps(pr.StepPhases())
}

// Judge judges every rule of the plan. An unscoped rule is judged on every
// non-warmup phase, a scoped one on its phase; each on the repeats that
// finished that phase (an interrupted phase is never judged). A phase that
// no repeat finished makes its rules inconclusive, and so does passing on
// fewer repeats than planned (the run was interrupted or failed).
func Judge(pl *Plan, res *Result) *Verdict {
	return JudgeAgainst(pl, res, nil)
}

// JudgeAgainst is Judge with a baseline run: `baseline.<metric>` in a
// rule reads the baseline's phase of the same name, in its median repeat
// by response-time p99 (the higher of the two middle ones for an even
// count), so that every metric a rule compares comes from one measured
// repeat, never an average. A phase the baseline lacks leaves
// baseline.* unavailable (INCONCLUSIVE). base nil is Judge.
func JudgeAgainst(pl *Plan, res, base *Result) *Verdict {
	bases := BaselineEnvs(base)
	v := &Verdict{}
	v.Rules = judgeAll(pl, res, pl.Rules, bases, true)
	// Reconciliation compares the client's counts with the target's: a
	// late generator or left-over arrivals do not make those unequal.
	v.Expect = judgeAll(pl, res, pl.Expect, bases, false)
	var all []rules.Status
	for _, r := range append(append([]RuleResult(nil), v.Rules...), v.Expect...) {
		all = append(all, r.Status)
	}
	v.Status = rules.Worst(all...)
	return v
}

// BaselineEnvs maps each judged phase of a baseline run to the rule
// environment of its median repeat by p99 (see JudgeAgainst); nil for nil.
func BaselineEnvs(base *Result) map[string]*rules.Env {
	if base == nil {
		return nil
	}
	byPhase := map[string][]*PhaseResult{}
	var names []string
	for _, pr := range base.Phases {
		if pr.Phase == nil || pr.Phase.Warmup || pr.Interrupted || pr.Summary == nil {
			continue
		}
		if _, ok := byPhase[pr.Phase.Name]; !ok {
			names = append(names, pr.Phase.Name)
		}
		byPhase[pr.Phase.Name] = append(byPhase[pr.Phase.Name], pr)
	}
	out := map[string]*rules.Env{}
	for _, name := range names {
		prs := byPhase[name]
		p99 := func(pr *PhaseResult) time.Duration {
			v, _ := pr.Summary.Response.Percentile(99)
			return v
		}
		sort.SliceStable(prs, func(i, j int) bool { return p99(prs[i]) < p99(prs[j]) })
		e := RuleEnv(prs[len(prs)/2])
		out[name] = &e
	}
	return out
}

func judgeAll(pl *Plan, res *Result, rs []*ScopedRule, bases map[string]*rules.Env, measured bool) []RuleResult {
	var out []RuleResult
	for _, sr := range rs {
		for i := range pl.Phases {
			p := &pl.Phases[i]
			if p.Warmup || (sr.Phase != "" && sr.Phase != p.Name) {
				continue
			}
			var envs []rules.Env
			var reps []int
			var censored, generator, timedOut []string // per judged repeat: why, or ""
			for _, pr := range res.Phases {
				if pr.Phase.Index == p.Index && !pr.Interrupted {
					envs = append(envs, RuleEnv(pr).WithBaseline(bases[p.Name]))
					reps = append(reps, pr.Repeat)
					censored = append(censored, Censoring(pl, pr))
					generator = append(generator, GeneratorFault(pr))
					timedOut = append(timedOut, TimeoutCensoring(pl, pr))
				}
			}
			rr := RuleResult{Source: sr.Source, Phase: p.Name, RepeatNumbers: reps}
			if len(envs) == 0 {
				rr.Status = rules.Inconclusive
				rr.Reason = "the phase did not complete in any repeat"
			} else {
				j := rules.Judge(sr.Rule, envs)
				rr.Status, rr.Repeats, rr.Reason = j.Status, j.Repeats, j.Reason
				if measured && overlay(&rr, sr.Rule, censored, generator, timedOut) {
					var all []rules.Status
					var why []string
					for k, v := range rr.Repeats {
						all = append(all, v.Status)
						if v.Status != rules.Pass {
							why = append(why, fmt.Sprintf("repeat %d: %s: %s", reps[k], v.Status, v.Reason))
						}
					}
					rr.Status, rr.Reason = rules.Worst(all...), strings.Join(why, "; ")
				}
				if rr.Status == rules.Pass && len(envs) < pl.Repeats {
					// A rule holds only if it holds in every repeat; the
					// repeats that never ran (interrupted run) cannot.
					rr.Status = rules.Inconclusive
					rr.Reason = fmt.Sprintf("judged on %d of %d repeats: the run did not complete", len(envs), pl.Repeats)
				}
			}
			out = append(out, rr)
		}
	}
	return out
}

// overlay applies what the measurement itself says to the verdicts of
// each repeat (k indexes rr.Repeats, censored and generator alike):
//   - a PASS on a censored repeat (Censoring) is INCONCLUSIVE: it held on
//     the arrivals that were measured, and the missing ones are the
//     longest waits. A FAIL stays a FAIL: what was measured already
//     breaks the rule, and the missing arrivals could only add to it.
//   - a PASS of a rule on a latency statistic where requests timed out
//     (TimeoutCensoring) is INCONCLUSIVE: the slowest are missing.
//   - on a repeat whose generator was the bottleneck (GeneratorFault), a
//     PASS is INCONCLUSIVE, and so is a FAIL of a rule that reads a time
//     or a rate (timeSensitive): the generator's own delay is inside those
//     figures, and the failure would be blamed on the target. A FAIL of
//     counts (errors == 0) stays: the target answered what it answered.
//
// It reports whether it changed any verdict.
func overlay(rr *RuleResult, r *rules.Rule, censored, generator, timedOut []string) bool {
	timed, latency := false, false
	for _, m := range r.Metrics() {
		timed = timed || timeSensitive(m)
		latency = latency || latencyStat(m)
	}
	changed := false
	for k := range rr.Repeats {
		v := &rr.Repeats[k]
		switch {
		case k < len(generator) && generator[k] != "" && (v.Status == rules.Pass || (v.Status == rules.Fail && timed)):
			was := v.Status
			v.Status = rules.Inconclusive
			v.Reason = generator[k] + "; not the target's verdict"
			if was == rules.Fail {
				v.Reason = "would fail, but " + v.Reason + " (its own delay is inside the figures this rule reads)"
			}
			changed = true
		case k < len(censored) && censored[k] != "" && v.Status == rules.Pass:
			v.Status = rules.Inconclusive
			v.Reason = "censored: " + censored[k]
			changed = true
		case latency && k < len(timedOut) && timedOut[k] != "" && v.Status == rules.Pass:
			v.Status = rules.Inconclusive
			v.Reason = "censored: " + timedOut[k]
			changed = true
		}
	}
	return changed
}

// PhaseStatus judges the rules that apply to one finished (repeat,
// phase) on that repeat alone (the TSV's verdict column): the worst
// status of them, as JudgeAgainst overlays it. judged is false for a
// warmup phase, an interrupted one, or one without rules.
func PhaseStatus(pl *Plan, pr *PhaseResult) (st rules.Status, judged bool) {
	if pr.Phase.Warmup || pr.Interrupted {
		return 0, false
	}
	var all []rules.Status
	env := []rules.Env{RuleEnv(pr)}
	censored, generator, timedOut := []string{Censoring(pl, pr)}, []string{GeneratorFault(pr)}, []string{TimeoutCensoring(pl, pr)}
	for i, sr := range append(append([]*ScopedRule(nil), pl.Rules...), pl.Expect...) {
		if sr.Phase == "" || sr.Phase == pr.Phase.Name {
			j := rules.Judge(sr.Rule, env)
			rr := RuleResult{Repeats: j.Repeats}
			if i < len(pl.Rules) { // reconciliation is not overlaid (see JudgeAgainst)
				overlay(&rr, sr.Rule, censored, generator, timedOut)
			}
			for _, v := range rr.Repeats {
				all = append(all, v.Status)
			}
		}
	}
	if len(all) == 0 {
		return 0, false
	}
	return rules.Worst(all...), true
}
