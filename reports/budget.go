package reports

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/runner-dev/runner/engine/metric"
)

// budget is a limit that a rule sets on a metric the HTML report charts,
// drawn as a horizontal line on the charts of that metric: the rule
// `p99 < 20ms` is budget{Metric: "p99", P: 99, Value: 20, Latency: true}.
type budget struct {
	// Text is the comparison as written, the line's label ("p99 < 20ms").
	Text string
	// Metric is the metric's name in rules (p99, p999, max, mean,
	// throughput); P its percentile, 0 for max and mean.
	Metric string
	P      float64
	// Latency is true for a statistic of the response time, whose Value
	// is in milliseconds; false for throughput, whose Value is in ok
	// responses per second.
	Latency bool
	Value   float64
}

var (
	// budgetAtom is `metric op number[unit]`, the metric optionally read
	// across the repeats (median(p99), worst(p99)).
	budgetAtom = regexp.MustCompile(`^\s*(?:(?:median|worst)\(\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\)|([A-Za-z_][A-Za-z0-9_.]*))\s*(<=|<|>=|>)\s*([0-9]+(?:\.[0-9]+)?)\s*(ns|us|µs|μs|ms|s|m|h)?\s*$`)
	// budgetAtomRev is the same written the other way round: `20ms > p99`.
	budgetAtomRev = regexp.MustCompile(`^\s*([0-9]+(?:\.[0-9]+)?)\s*(ns|us|µs|μs|ms|s|m|h)?\s*(<=|<|>=|>)\s*(?:(?:median|worst)\(\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\)|([A-Za-z_][A-Za-z0-9_.]*))\s*$`)
	// extraPct is a percentile the catalogue does not list (p75, p99.99),
	// which rules read all the same.
	extraPct = regexp.MustCompile(`^p([0-9]+(?:\.[0-9]+)?)$`)
	// notBudget marks a rule whose comparisons are not each a limit: one
	// under or, not, a ternary or brackets (other than median( and
	// worst( around a name, which budgetAtom reads).
	notBudget = regexp.MustCompile(`\|\||!|\bor\b|\bnot\b|\?|\[|"|'|` + "`")
	andSplit  = regexp.MustCompile(`&&|\band\b`)
)

// budgets returns the limits that rule sets on charted metrics: each
// comparison of a charted metric (a response-time statistic, or
// throughput) with a constant, alone or joined by `and`, so that every one
// of them must hold. A rule with `or` or `not` sets no limit a line could
// show, nor does a comparison of two metrics (`p99 < 2 * p50`), of
// another metric (`errors == 0`), or an equality; those return nothing.
// Rules that do not compile never reach a report.
func budgets(rule string) []budget {
	if notBudget.MatchString(rule) {
		return nil
	}
	var out []budget
	for _, atom := range andSplit.Split(rule, -1) {
		atom = strings.TrimSpace(atom)
		// The direction of the comparison does not matter to the line.
		var name, num, unit string
		if m := budgetAtom.FindStringSubmatch(atom); m != nil {
			name, num, unit = m[1]+m[2], m[4], m[5]
		} else if m := budgetAtomRev.FindStringSubmatch(atom); m != nil {
			num, unit, name = m[1], m[2], m[4]+m[5]
		} else {
			continue
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil {
			continue
		}
		b := budget{Text: atom, Metric: name, Value: v}
		switch p, isPct := percentileOf(name); {
		case isPct || name == "max" || name == "mean":
			if unit == "" {
				continue // a latency compared with a bare number does not compile
			}
			d, err := time.ParseDuration(num + strings.NewReplacer("µs", "us", "μs", "us").Replace(unit))
			if err != nil {
				continue
			}
			b.Latency, b.P, b.Value = true, p, msf(d)
		case name == "throughput":
			if unit != "" {
				continue
			}
		default:
			continue
		}
		out = append(out, b)
	}
	return out
}

// percentileOf says whether name is a response-time percentile in rules
// (p50, p999 for p99.9, p99.9, p75) and which.
func percentileOf(name string) (p float64, ok bool) {
	if d := metric.ByName(name); d != nil {
		return d.P, d.Dist == metric.Response && d.P > 0
	}
	if m := extraPct.FindStringSubmatch(name); m != nil {
		p, err := strconv.ParseFloat(m[1], 64)
		return p, err == nil && p > 0 && p < 100
	}
	return 0, false
}

// phaseBudgets collects, per phase name, the limits of the rules judged on
// it (engine.RuleResult.Phase).
func phaseBudgets(rs []ruleSource) map[string][]budget {
	out := map[string][]budget{}
	for _, r := range rs {
		out[r.Phase] = append(out[r.Phase], budgets(r.Rule)...)
	}
	return out
}

// ruleSource is a rule as written and the phase it was judged on.
type ruleSource struct{ Rule, Phase string }
