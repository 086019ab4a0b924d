package compare

import (
	"fmt"
	"math"
	"slices"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/metric"
	"github.com/runner-dev/runner/reports"
)

// Metric is one headline metric compared, read from a phase's Metrics:
// a metric of the catalogue (metric.All) with a Compare position.
type Metric struct {
	// Name is its name in rules (littleL, p99).
	Name string
	// Unit is shown next to the values ("/s", "ms", "" for a fraction).
	Unit string
	// HigherIsWorse says which way is a regression; it also picks the
	// median of an even count (the worse middle value).
	HigherIsWorse bool
	// Judged is true when a change has a good and a bad direction
	// whatever the setup (latency, error rate); throughput, achieved rate
	// and Little's L follow the offered load, so their change is only
	// higher or lower.
	Judged bool
	// P is the percentile of a latency percentile, 0 otherwise: a repeat
	// with fewer than MinSamples samples cannot support it.
	P float64
	// MinSamples is the samples each repeat needs (metric.MinSamples:
	// 10/(1−P/100), the rule of the run's INCONCLUSIVE: 1000 for p99,
	// 10000 for p99.9); 0 for a metric that is not a percentile.
	MinSamples int64
	// key is its JSON key in engine.Metrics, samples that of its
	// distribution's sample count ("" when not a percentile).
	key, samples string
}

// Metrics are the metrics compared, in display order: the catalogue's
// metrics with a Compare position, by position.
func Metrics() []Metric {
	var defs []metric.Def
	for _, d := range metric.All() {
		if d.Compare > 0 && d.JSON != "" {
			defs = append(defs, d)
		}
	}
	slices.SortStableFunc(defs, func(a, b metric.Def) int { return a.Compare - b.Compare })
	out := make([]Metric, len(defs))
	for i, d := range defs {
		out[i] = Metric{Name: d.Name, Unit: d.Unit.Suffix(), HigherIsWorse: d.Worse == metric.HigherIsWorse,
			Judged: d.Judged, key: d.JSON}
		if d.P > 0 && d.Dist != nil {
			out[i].P, out[i].MinSamples, out[i].samples = d.P, d.MinSamples(), d.Dist.JSON+".samples"
		}
		if out[i].Name == "" {
			out[i].Name = d.JSON
		}
	}
	return out
}

// get reads m from a phase's JSON metrics block (durations are in ms
// there already).
func (m Metric) get(x *engine.Metrics) (float64, bool) { return x.Value(m.key) }

// enoughSamples reports whether every repeat has the samples percentile m
// needs (m.MinSamples).
func enoughSamples(m Metric, prs []*engine.PhaseResult) bool {
	if m.MinSamples == 0 {
		return true
	}
	for _, pr := range prs {
		if n, _ := pr.Metrics.Value(m.samples); int64(n) < m.MinSamples {
			return false
		}
	}
	return true
}

// Comparison is two sides (base and new) compared phase by phase, with
// the differences of their setups.
type Comparison struct {
	Base, New *Side
	// Phases are the non-warmup phases both sides measured, in BASE's
	// order; OnlyBase and OnlyNew name those only one side has.
	Phases            []*PhaseComparison
	OnlyBase, OnlyNew []string
	// Flows are the compared phases whose figures count different things
	// on the two sides: iterations of flows on one, single requests on
	// the other, or iterations of flows with other steps
	// (reports.FlowMismatches); their metrics carry no claim.
	Flows []reports.FlowMismatch
	// Diffs are the setup parameters that differ between the sides;
	// BaseMixed and NewMixed those that differ among the reports pooled
	// on one side.
	Diffs               []Diff
	BaseMixed, NewMixed []Diff
}

// PhaseComparison is one phase compared metric by metric.
type PhaseComparison struct {
	Phase string
	// NBase and NNew are the repeats of the phase on each side.
	NBase, NNew int
	Metrics     []*MetricComparison
	// Mismatch, when not nil, says that the phase's figures count
	// different things on the two sides (reports.FlowMismatch): every
	// metric is shown but NotComparable, with no significance claim.
	Mismatch *reports.FlowMismatch
}

// Summarized is true when both sides have at least MinRepeats repeats:
// only then is a p-value given and significance called.
func (p *PhaseComparison) Summarized() bool {
	return p.NBase >= MinRepeats && p.NNew >= MinRepeats
}

// MetricComparison is one metric of one phase on both sides.
type MetricComparison struct {
	Metric    Metric
	Base, New Spread
	// Delta is New.Median − Base.Median; DeltaPct the same as a
	// percentage of Base.Median (NaN when that is 0 and Delta is not).
	Delta, DeltaPct float64
	// Test is nil when the comparison is not statistically summarized
	// (fewer than MinRepeats values on a side, or too few samples for the
	// percentile in some repeat: FewSamples).
	Test       *Test
	FewSamples bool
	// NotComparable is true when the phase's figures count different
	// things on the two sides (PhaseComparison.Mismatch): Test is nil.
	NotComparable bool
}

// Worse is true when the change goes in the bad direction.
func (m *MetricComparison) Worse() bool {
	return (m.Delta > 0) == m.Metric.HigherIsWorse && m.Delta != 0
}

// Compare compares two loaded sides. It fails with ErrNoCommonPhase when
// they share no measured non-warmup phase.
func Compare(base, new *Side) (*Comparison, error) {
	res := &Comparison{Base: base, New: new}
	bOrder, bPhases := phasesOf(base.Runs)
	nOrder, nPhases := phasesOf(new.Runs)
	for _, name := range bOrder {
		nprs, ok := nPhases[name]
		if !ok {
			res.OnlyBase = append(res.OnlyBase, name)
			continue
		}
		res.Phases = append(res.Phases, comparePhase(name, bPhases[name], nprs))
	}
	for _, name := range nOrder {
		if _, ok := bPhases[name]; !ok {
			res.OnlyNew = append(res.OnlyNew, name)
		}
	}
	if len(res.Phases) == 0 {
		return nil, fmt.Errorf("%w: BASE has %s, NEW has %s (warmup phases are not compared)",
			ErrNoCommonPhase, listOrNone(bOrder), listOrNone(nOrder))
	}
	res.Flows = reports.FlowMismatches(phaseResults(bOrder, bPhases), phaseResults(nOrder, nPhases))
	for i := range res.Flows {
		for _, pc := range res.Phases {
			if pc.Phase != res.Flows[i].Phase {
				continue
			}
			pc.Mismatch = &res.Flows[i]
			for _, mc := range pc.Metrics {
				mc.Test, mc.NotComparable = nil, true
			}
		}
	}
	res.Diffs, res.BaseMixed, res.NewMixed = setupDiffs(base.Runs, new.Runs)
	return res, nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "no measured non-warmup phase"
	}
	return fmt.Sprintf("%q", names)
}

// phasesOf gathers the finished non-warmup phase results of every run by
// phase name, in order of first appearance. An interrupted phase is left
// out: it did not run its course.
func phasesOf(runs []*reports.Run) ([]string, map[string][]*engine.PhaseResult) {
	var order []string
	by := map[string][]*engine.PhaseResult{}
	for _, r := range runs {
		if r.Result == nil {
			continue
		}
		for _, pr := range r.Result.Phases {
			if pr == nil || pr.Phase == nil || pr.Phase.Warmup || pr.Interrupted || pr.Metrics == nil {
				continue
			}
			if _, ok := by[pr.Phase.Name]; !ok {
				order = append(order, pr.Phase.Name)
			}
			by[pr.Phase.Name] = append(by[pr.Phase.Name], pr)
		}
	}
	return order, by
}

// phaseResults flattens the phase results phasesOf gathered, in order.
func phaseResults(order []string, by map[string][]*engine.PhaseResult) []*engine.PhaseResult {
	var out []*engine.PhaseResult
	for _, name := range order {
		out = append(out, by[name]...)
	}
	return out
}

func comparePhase(name string, base, new []*engine.PhaseResult) *PhaseComparison {
	pc := &PhaseComparison{Phase: name, NBase: len(base), NNew: len(new)}
	for _, m := range Metrics() {
		mc := compareMetric(m, values(m, base), values(m, new))
		if !enoughSamples(m, base) || !enoughSamples(m, new) {
			mc.Test, mc.FewSamples = nil, true
		}
		pc.Metrics = append(pc.Metrics, mc)
	}
	return pc
}

func values(m Metric, prs []*engine.PhaseResult) []float64 {
	var vs []float64
	for _, pr := range prs {
		if v, ok := m.get(pr.Metrics); ok && !math.IsNaN(v) {
			vs = append(vs, v)
		}
	}
	return vs
}

// compareMetric compares one metric's per-repeat values of both sides.
func compareMetric(m Metric, base, new []float64) *MetricComparison {
	mc := &MetricComparison{Metric: m, Base: spreadOf(base, m.HigherIsWorse), New: spreadOf(new, m.HigherIsWorse)}
	mc.Delta = mc.New.Median - mc.Base.Median
	switch {
	case mc.Delta == 0:
		mc.DeltaPct = 0
	case mc.Base.Median == 0:
		mc.DeltaPct = math.NaN()
	default:
		mc.DeltaPct = 100 * mc.Delta / math.Abs(mc.Base.Median)
	}
	if len(base) >= MinRepeats && len(new) >= MinRepeats {
		t := MannWhitney(base, new)
		mc.Test = &t
	}
	return mc
}

// Significant counts the metrics whose change is significant.
func (p *PhaseComparison) Significant() int {
	return len(slices.DeleteFunc(slices.Clone(p.Metrics), func(m *MetricComparison) bool {
		return m.Test == nil || !m.Test.Significant
	}))
}
