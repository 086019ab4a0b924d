package engine

import (
	"sort"
	"time"

	"github.com/runner-dev/runner/engine/measure"
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
}

// acrossMetric reads one metric of a phase; higherIsWorse picks the
// median of an even count.
type acrossMetric struct {
	name          string
	higherIsWorse bool
	get           func(*measure.Summary) (float64, bool)
}

func pctMs(p float64) func(*measure.Summary) (float64, bool) {
	return func(s *measure.Summary) (float64, bool) {
		v, ok := s.Response.Percentile(p)
		return float64(v) / float64(time.Millisecond), ok
	}
}

var acrossMetrics = []acrossMetric{
	{"throughput", false, func(s *measure.Summary) (float64, bool) { return s.Throughput(), true }},
	{"achieved_rate", false, func(s *measure.Summary) (float64, bool) { return s.AchievedRate(), true }},
	{"error_rate", true, func(s *measure.Summary) (float64, bool) { return s.ErrorRate() }},
	{"errors", true, func(s *measure.Summary) (float64, bool) { return float64(s.Errors), true }},
	{"dropped", true, func(s *measure.Summary) (float64, bool) { return float64(s.Dropped), true }},
	{"p50_ms", true, pctMs(50)},
	{"p90_ms", true, pctMs(90)},
	{"p95_ms", true, pctMs(95)},
	{"p99_ms", true, pctMs(99)},
	{"p999_ms", true, pctMs(99.9)},
	{"max_ms", true, func(s *measure.Summary) (float64, bool) {
		v, ok := s.Response.Max()
		return float64(v) / float64(time.Millisecond), ok
	}},
	{"mean_ms", true, func(s *measure.Summary) (float64, bool) {
		v, ok := s.Response.Mean()
		return float64(v) / float64(time.Millisecond), ok
	}},
	{"little_l", true, func(s *measure.Summary) (float64, bool) { return s.LittleL(), true }},
}

// Across summarises every phase that finished in more than zero repeats,
// in plan order, metric by metric: median, min and max, never an average
// of percentiles (docs/design.md, "Repeats").
func Across(res *Result) []PhaseSpread {
	var order []*PhasePlan
	by := map[*PhasePlan][]*PhaseResult{}
	for _, pr := range res.Phases {
		if pr.Interrupted {
			continue
		}
		if _, ok := by[pr.Phase]; !ok {
			order = append(order, pr.Phase)
		}
		by[pr.Phase] = append(by[pr.Phase], pr)
	}
	var out []PhaseSpread
	for _, p := range order {
		prs := by[p]
		ps := PhaseSpread{Phase: p.Name, Metrics: map[string]Spread{}}
		for _, pr := range prs {
			ps.Repeats = append(ps.Repeats, pr.Repeat)
		}
		for _, m := range acrossMetrics {
			var vs []float64
			for _, pr := range prs {
				if v, ok := m.get(pr.Summary); ok {
					vs = append(vs, v)
				}
			}
			if len(vs) > 0 {
				ps.Metrics[m.name] = spreadOf(vs, m.higherIsWorse)
			}
		}
		out = append(out, ps)
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
