package engine

import (
	"sort"

	"github.com/runner-dev/runner/engine/metric"
)

// Spread is one metric of one phase across its repeats: the median, the
// minimum and the maximum of the per-repeat values. The median of an even
// count is the worse of the two middle values, so it is always a value
// that was measured and never the flattering one. Nothing is averaged:
// a mean of percentiles is not a percentile of anything.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// N is how many repeats had the metric (a percentile of an empty
	// distribution has none).
	N int `json:"n"`
}

// PhaseSpread is every headline metric of one phase across the repeats
// that finished it (interrupted phases are left out).
type PhaseSpread struct {
	Phase   string            `json:"phase"`
	Repeats []int             `json:"repeats"`
	Metrics map[string]Spread `json:"metrics"`
	// Steps are the phase's flow steps across the same repeats, in mix
	// order; empty for a phase without flows.
	Steps []StepSpread `json:"steps,omitempty"`
}

// StepSpread is one flow step's metrics across the repeats: those of
// the repeat summary that a step has of its own (metric.Def.Step: the
// latencies, errors, error_rate, throughput, achieved_rate, little_l),
// read from each repeat's step summary. A repeat without the step is
// left out of its N.
type StepSpread struct {
	Flow    string            `json:"flow"`
	Name    string            `json:"name"`
	Metrics map[string]Spread `json:"metrics"`
}

// Across summarises every phase that finished in more than zero repeats,
// in plan order, metric by metric: each catalogue metric with an Across
// key (metric.Def.Across), durations in milliseconds; median, min and
// max, never an average of percentiles (docs/design.md, "Repeats").
func Across(res *Result) []PhaseSpread {
	var out []PhaseSpread
	for _, prs := range ByPhase(res, func(pr *PhaseResult) bool { return !pr.Interrupted }) {
		ps := PhaseSpread{Phase: prs[0].Phase.Name, Metrics: map[string]Spread{}}
		for _, pr := range prs {
			ps.Repeats = append(ps.Repeats, pr.Repeat)
		}
		phs := make([]*metric.Phase, len(prs))
		for i, pr := range prs {
			phs[i] = pr.MetricPhase()
		}
		ps.Metrics = spreads(phs, false)
		ps.Steps = stepSpreads(prs)
		out = append(out, ps)
	}
	return out
}

// ByPhase groups the phase results of res that keep accepts (nil keeps
// all) by the plan's phase they ran, one group per phase in order of
// first appearance, each in repeat order. A phase is known by its index
// in the repeat and its name, never by its *PhasePlan: a result read back
// from JSON (reports.Load) holds one PhasePlan value per phase result, so
// its repeats of one phase share no pointer. A result without its phase
// or summary is left out.
func ByPhase(res *Result, keep func(*PhaseResult) bool) [][]*PhaseResult {
	if res == nil {
		return nil
	}
	type key struct {
		index int
		name  string
	}
	var out [][]*PhaseResult
	at := map[key]int{}
	for _, pr := range res.Phases {
		if pr == nil || pr.Phase == nil || pr.Summary == nil || keep != nil && !keep(pr) {
			continue
		}
		k := key{pr.Phase.Index, pr.Phase.Name}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], pr)
	}
	return out
}

// stepSpreads summarises the flow steps of one phase's repeats prs, in
// the mix order of the first repeat that ran flows.
func stepSpreads(prs []*PhaseResult) []StepSpread {
	var out []StepSpread
	seen := map[string]bool{}
	for _, pr := range prs {
		for _, st := range pr.Steps {
			if seen[st.Name] {
				continue
			}
			seen[st.Name] = true
			var phs []*metric.Phase
			for _, other := range prs {
				for _, x := range other.Steps {
					if x.Name == st.Name {
						phs = append(phs, metric.StepPhase(x.Summary))
					}
				}
			}
			out = append(out, StepSpread{Flow: st.Flow, Name: st.Name, Metrics: spreads(phs, true)})
		}
	}
	return out
}

// spreads computes the Spread of every catalogue metric with an Across
// key over phs (only those read per step when perStep), durations in
// milliseconds.
func spreads(phs []*metric.Phase, perStep bool) map[string]Spread {
	out := map[string]Spread{}
	for _, m := range metric.All() {
		if m.Across == "" || perStep && !m.Step {
			continue
		}
		var vs []float64
		for _, ph := range phs {
			if v, ok := m.Read(ph); ok {
				if m.Unit == metric.Duration {
					v = metric.Ms(v)
				}
				vs = append(vs, v)
			}
		}
		if len(vs) > 0 {
			out[m.Across] = spreadOf(vs, m.Worse == metric.HigherIsWorse)
		}
	}
	return out
}

func spreadOf(vs []float64, higherIsWorse bool) Spread {
	sort.Float64s(vs)
	med := vs[(len(vs)-1)/2]
	if higherIsWorse {
		med = vs[len(vs)/2]
	}
	return Spread{Median: med, Min: vs[0], Max: vs[len(vs)-1], N: len(vs)}
}
