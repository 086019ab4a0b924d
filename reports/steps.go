package reports

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/metric"
)

// Flow steps in reports (docs/design.md, "Flows"): a phase driven by
// flows counts iterations in its own figures (an arrival runs one
// iteration of one flow; its response time runs from the intended start
// to the last step's completion, think times included), and each step
// has figures of its own (engine.StepResult), its response time counted
// from when the step came due. Every report shows the steps beside the
// iteration with the figures below.

// stepFigure is one column of the per-step tables: a figure read from a
// step's summary.
type stepFigure struct {
	// title heads the column.
	title string
	// unit says how the value reads: a count, a duration in nanoseconds
	// (a nearest-rank percentile or the max of the ok responses' response
	// times), or a rate per second.
	unit metric.Unit
	// p is the percentile of a duration figure; 0 for the max.
	p float64
	// higherIsWorse picks the worse middle value of an even count of
	// repeats as the median (as engine.Across does).
	higherIsWorse bool
	// read returns the figure of s; false when s has none (a latency of
	// no sample).
	read func(s *measure.Summary) (float64, bool)
}

// stepFigures are the per-step columns, in order: requests, ok, errors,
// p50, p95, p99, max (of the ok responses' response times, from when the
// step came due) and throughput (ok responses per second of the step's
// completion window).
var stepFigures = []stepFigure{
	{title: "requests", unit: metric.Count, read: func(s *measure.Summary) (float64, bool) { return float64(s.Requests), true }},
	{title: "ok", unit: metric.Count, read: func(s *measure.Summary) (float64, bool) { return float64(s.OK), true }},
	{title: "errors", unit: metric.Count, higherIsWorse: true, read: func(s *measure.Summary) (float64, bool) { return float64(s.Errors), true }},
	stepPercentile(50), stepPercentile(95), stepPercentile(99),
	{title: "max", unit: metric.Duration, higherIsWorse: true, read: func(s *measure.Summary) (float64, bool) {
		v, ok := s.Response.Max()
		return float64(v), ok
	}},
	{title: "throughput", unit: metric.PerSecond, read: func(s *measure.Summary) (float64, bool) { return s.Throughput(), true }},
}

// stepPercentile is the nearest-rank percentile p of a step's response
// times.
func stepPercentile(p float64) stepFigure {
	return stepFigure{title: fmt.Sprintf("p%g", p), unit: metric.Duration, p: p, higherIsWorse: true,
		read: func(s *measure.Summary) (float64, bool) {
			v, ok := s.Response.Percentile(p)
			return float64(v), ok
		}}
}

// format renders a value of f: counts whole, durations in their natural
// unit (dur), rates with one decimal.
func (f stepFigure) format(v float64) string {
	switch f.unit {
	case metric.Duration:
		return dur(time.Duration(v))
	case metric.PerSecond:
		return rate(v)
	}
	return fmt.Sprintf("%d", int64(v))
}

// cell renders f of s: "n/a" without a value, and a percentile from
// fewer samples than it needs (metric.MinSamples) marked "*" as the
// console marks the phase's.
func (f stepFigure) cell(s *measure.Summary) string {
	if s == nil {
		return "n/a"
	}
	v, ok := f.read(s)
	if !ok {
		return "n/a"
	}
	return f.format(v) + f.thinMark(s.Response.Count())
}

// thinMark is "*" when f is a percentile that samples response times are
// too few for (metric.MinSamples), else "".
func (f stepFigure) thinMark(samples int64) string {
	if f.p > 0 && samples < metric.MinSamples(f.p) {
		return "*"
	}
	return ""
}

// spreadCell renders f across repeats: the value alone when there is
// one repeat or they agree, else "median [min – max]"; "n/a" when no
// repeat has it. The median of a percentile is marked "*" when, in at
// least one repeat, the step had fewer samples than it needs (fewest,
// as the phase's rows mark theirs).
func (f stepFigure) spreadCell(s engine.Spread, fewest int64) string {
	v, rng := f.spreadParts(s, fewest)
	if rng == "" {
		return v
	}
	return v + " " + rng
}

// spreadParts is spreadCell in two parts: the median ("n/a" when no
// repeat has the figure; marked "*" as spreadCell says) and
// "[min – max]" ("" when they agree).
func (f stepFigure) spreadParts(s engine.Spread, fewest int64) (median, rng string) {
	switch {
	case s.N == 0:
		return "n/a", ""
	case s.Min == s.Max:
		return f.format(s.Median) + f.thinMark(fewest), ""
	}
	return f.format(s.Median) + f.thinMark(fewest), fmt.Sprintf("[%s – %s]", f.format(s.Min), f.format(s.Max))
}

// stepSpread is one flow step across the repeats that finished its phase:
// one engine.Spread per stepFigures entry, and the fewest response-time
// samples (ok responses) the step had in any of those repeats.
type stepSpread struct {
	Flow, Name string
	Figures    []engine.Spread
	Fewest     int64
}

// phaseSteps is the flow steps of one phase across the repeats that
// finished it (interrupted ones are left out, as engine.Across does).
type phaseSteps struct {
	Phase   string
	Repeats []int
	Steps   []stepSpread
}

// stepsAcross summarises the flow steps of every phase that has them, in
// plan order, figure by figure: median, min and max over the repeats that
// finished the phase, never an average; the median of an even count is
// the worse middle value (engine.Across). Steps keep the order of the
// phase's first such repeat (mix order).
func stepsAcross(res *engine.Result) []phaseSteps {
	var out []phaseSteps
	for _, prs := range engine.ByPhase(res, func(pr *engine.PhaseResult) bool { return !pr.Interrupted && isFlow(pr) }) {
		ps := phaseSteps{Phase: prs[0].Phase.Name}
		for _, pr := range prs {
			ps.Repeats = append(ps.Repeats, pr.Repeat)
		}
		for _, st := range prs[0].Steps {
			ss := stepSpread{Flow: st.Flow, Name: st.Name, Fewest: -1}
			for _, pr := range prs {
				if s := stepSummary(pr, st.Name); s != nil && (ss.Fewest < 0 || s.Response.Count() < ss.Fewest) {
					ss.Fewest = s.Response.Count()
				}
			}
			for _, f := range stepFigures {
				var vs []float64
				for _, pr := range prs {
					if s := stepSummary(pr, st.Name); s != nil {
						if v, ok := f.read(s); ok {
							vs = append(vs, v)
						}
					}
				}
				ss.Figures = append(ss.Figures, spreadOf(vs, f.higherIsWorse))
			}
			ps.Steps = append(ps.Steps, ss)
		}
		out = append(out, ps)
	}
	return out
}

// stepSummary is the summary of pr's step name; nil when pr has no such
// step.
func stepSummary(pr *engine.PhaseResult, name string) *measure.Summary {
	i := slices.IndexFunc(pr.Steps, func(st engine.StepResult) bool { return st.Name == name })
	if i < 0 {
		return nil
	}
	return pr.Steps[i].Summary
}

// spreadOf is the median, min and max of vs (engine.Across's rule: the
// worse middle value of an even count); N 0 when vs is empty.
func spreadOf(vs []float64, higherIsWorse bool) engine.Spread {
	if len(vs) == 0 {
		return engine.Spread{}
	}
	vs = slices.Clone(vs)
	sort.Float64s(vs)
	med := vs[(len(vs)-1)/2]
	if higherIsWorse {
		med = vs[len(vs)/2]
	}
	return engine.Spread{Median: med, Min: vs[0], Max: vs[len(vs)-1], N: len(vs)}
}

// isFlow is true when pr ran flows: its own figures count iterations.
func isFlow(pr *engine.PhaseResult) bool { return pr != nil && len(pr.Steps) > 0 }

// counted is what pr's own figures count, in words: "iterations" for a
// phase that ran flows (isFlow), else "requests".
func counted(pr *engine.PhaseResult) string {
	if isFlow(pr) {
		return "iterations"
	}
	return "requests"
}

// stepsNote is the sentence every report puts beside per-step figures.
const stepsNote = "The phase's own figures count iterations: an arrival runs one iteration of one flow, its response time from the intended start to the last step's completion, think times included; a failed step ends the iteration with that step's error. " +
	"Each step's figures count that step's requests, its response time from when the step came due (step 1 at the intended start, a later one at the previous step's completion plus its think time), of its ok responses."
