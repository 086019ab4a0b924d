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
// `p99 < 20ms` is budget{Metric: "p99", P: 99, Value: 20, Latency: true},
// `step.login.p99 < 50ms` the same of Step "login", drawn on the flow
// steps' chart instead of the iterations'.
type budget struct {
	// Text is the comparison as written, the line's label ("p99 < 20ms").
	Text string
	// Step is the flow step whose metric it limits (step.NAME.METRIC or
	// step["NAME"].METRIC); "" for the phase's own (its iterations in a
	// flow phase).
	Step string
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
	// across the repeats (median(p99), worst(p99)); a name may hold a
	// stepMark (a step named in brackets, replaced).
	budgetAtom = regexp.MustCompile(`^\s*(?:(?:median|worst)\(\s*([A-Za-z_][A-Za-z0-9_.§]*)\s*\)|([A-Za-z_][A-Za-z0-9_.§]*))\s*(<=|<|>=|>)\s*([0-9]+(?:\.[0-9]+)?)\s*(ns|us|µs|μs|ms|s|m|h)?\s*$`)
	// budgetAtomRev is the same written the other way round: `20ms > p99`.
	budgetAtomRev = regexp.MustCompile(`^\s*([0-9]+(?:\.[0-9]+)?)\s*(ns|us|µs|μs|ms|s|m|h)?\s*(<=|<|>=|>)\s*(?:(?:median|worst)\(\s*([A-Za-z_][A-Za-z0-9_.§]*)\s*\)|([A-Za-z_][A-Za-z0-9_.§]*))\s*$`)
	// stepBracket is a flow step named in brackets, as a name that cannot
	// follow a dot is: step["log-in"] or step['log-in'], the name in
	// group 1 (double quotes, Go escapes) or 2 (single quotes, as written).
	stepBracket = regexp.MustCompile(`\bstep\[\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')\s*\]`)
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
	// A step in brackets becomes step.§K§ (K its index in named), so
	// that its brackets and quotes do not read as a ternary or a string.
	var named []string
	marked := stepBracket.ReplaceAllStringFunc(rule, func(ref string) string {
		m := stepBracket.FindStringSubmatch(ref)
		name := m[2]
		if m[2] == "" {
			name = m[1]
			if u, err := strconv.Unquote(`"` + m[1] + `"`); err == nil {
				name = u
			}
		}
		named = append(named, name)
		return "step." + stepMark + strconv.Itoa(len(named)-1) + stepMark
	})
	if notBudget.MatchString(marked) {
		return nil
	}
	var out []budget
	for _, atom := range andSplit.Split(marked, -1) {
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
		b := budget{Text: unmark(atom, named), Metric: name, Value: v}
		if rest, ok := strings.CutPrefix(name, "step."); ok {
			step, metric, ok := strings.Cut(rest, ".")
			if !ok {
				continue
			}
			if k, isMark := strings.CutPrefix(step, stepMark); isMark {
				i, err := strconv.Atoi(strings.TrimSuffix(k, stepMark))
				if err != nil || i < 0 || i >= len(named) {
					continue
				}
				step = named[i]
			}
			if strings.Contains(step, stepMark) {
				continue
			}
			b.Step, b.Metric, name = step, metric, metric
			if name == "throughput" {
				continue // no chart draws a step's throughput
			}
		}
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

// stepMark brackets the index of a step named in brackets in the text
// budgets reads: a character no rule name holds.
const stepMark = "§"

// unmark puts the steps named in brackets back into atom
// (`step["log-in"]`, quoted as Go quotes).
func unmark(atom string, named []string) string {
	for i, n := range named {
		atom = strings.ReplaceAll(atom, "step."+stepMark+strconv.Itoa(i)+stepMark, "step["+strconv.Quote(n)+"]")
	}
	return atom
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
