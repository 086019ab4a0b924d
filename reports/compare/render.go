package compare

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Num formats a value with about four significant digits; one of 10^15
// or more (or infinite) in exponent form, never a number of hundreds of
// digits.
func Num(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "n/a"
	case a == 0:
		return "0"
	case a >= 1e15:
		return strconv.FormatFloat(v, 'g', 4, 64)
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a >= 0.001:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func signed(v float64) string {
	s := Num(v)
	if v > 0 {
		s = "+" + s
	}
	return s
}

// FormatP formats a p-value.
func FormatP(p float64) string {
	if p < 0.001 {
		return "p<0.001"
	}
	return "p=" + strconv.FormatFloat(p, 'f', 3, 64)
}

func (m *MetricComparison) label() string {
	if m.Metric.Unit == "" {
		return m.Metric.Name
	}
	return m.Metric.Name + " (" + m.Metric.Unit + ")"
}

func (s Spread) median() string {
	if s.N() == 0 {
		return "—"
	}
	return Num(s.Median)
}

func (s Spread) rangeString() string {
	if s.N() == 0 {
		return "no value"
	}
	return "[" + Num(s.Min) + " – " + Num(s.Max) + "]"
}

func (m *MetricComparison) change() string {
	if m.Base.N() == 0 || m.New.N() == 0 {
		return "—"
	}
	pct := "n/a %"
	if !math.IsNaN(m.DeltaPct) {
		pct = strconv.FormatFloat(m.DeltaPct, 'f', 1, 64) + "%"
		if m.DeltaPct > 0 && !math.IsInf(m.DeltaPct, 1) { // FormatFloat signs +Inf itself
			pct = "+" + pct
		}
	}
	return signed(m.Delta) + " (" + pct + ")"
}

// verdict is the significance column: the p-value and what it means.
func (m *MetricComparison) verdict() string {
	if m.NotComparable {
		return "NOT COMPARABLE: the sides count different things (see the phase's note)"
	}
	if m.FewSamples {
		return fmt.Sprintf("too few samples per repeat for p%g (needs %d): no claim", m.Metric.P, m.Metric.MinSamples)
	}
	if m.Test == nil {
		return "not summarized"
	}
	if !m.Test.Significant {
		return FormatP(m.Test.P) + " no significant change"
	}
	dir := "higher"
	if m.Delta < 0 {
		dir = "lower"
	}
	if m.Metric.Judged {
		if m.Worse() {
			dir += ", worse"
		} else {
			dir += ", better"
		}
	}
	return FormatP(m.Test.P) + " significant (" + dir + ")"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func (s *Side) describe() string {
	return fmt.Sprintf("%s (%s)", s.Arg, plural(len(s.Files), "report", "reports"))
}

// setupVerdict is the sentence about the setup: shared, one difference,
// or the warning when more than one thing differs.
func (r *Comparison) setupVerdict() string {
	if len(r.BaseMixed) > 0 || len(r.NewMixed) > 0 {
		return "WARNING: a side pools reports of different setups (below): no change can be attributed to one cause."
	}
	switch len(r.Diffs) {
	case 0:
		return "The runs share their setup: same scenario values, target, runner and Go versions, machine and commits."
	case 1:
		return "Exactly one parameter differs: a change below can be attributed to it."
	}
	return fmt.Sprintf("WARNING: %d parameters differ: a change cannot be attributed to one cause. Change one variable at a time.", len(r.Diffs))
}

func mixedWarning(s *Side, d []Diff) string {
	return fmt.Sprintf("WARNING: %s pools %s whose setups differ (%s); they are not repeats of one experiment.",
		s.Label, plural(len(s.Files), "report", "reports"), plural(len(d), "parameter", "parameters"))
}

// note explains why a phase carries no significance claim, or
// why none could be significant; empty when neither applies.
func (p *PhaseComparison) note() string {
	if !p.Summarized() {
		return fmt.Sprintf("Not statistically summarized: BASE has %s, NEW %d; at least %d per side are needed for a significance test. Values only, no claim of a change.",
			plural(p.NBase, "repeat", "repeats"), p.NNew, MinRepeats)
	}
	if mp := MinP(p.NBase, p.NNew); mp >= Alpha {
		return fmt.Sprintf("With %d and %d repeats the smallest p-value the Mann–Whitney U test can give is %.3f ≥ α=%.2f: no change can be called significant, however large. Run at least 4 (better 5) repeats per side.",
			p.NBase, p.NNew, mp, Alpha)
	}
	return ""
}

// WriteText writes the comparison as console text.
func (r *Comparison) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	ew.f("runner compare: scenario %q\n", r.Base.Scenario())
	if r.New.Scenario() != r.Base.Scenario() {
		ew.f("  (NEW is scenario %q)\n", r.New.Scenario())
	}
	ew.f("  BASE %s\n  NEW  %s\n\n", r.Base.describe(), r.New.describe())

	ew.f("Setup differences: %d\n", len(r.Diffs))
	if len(r.Diffs) > 0 {
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		for _, d := range r.Diffs {
			fmt.Fprintf(tw, "  %s:\t%s\t→ %s\n", d.Param, d.Base, d.New)
		}
		tw.Flush()
	}
	ew.f("%s\n", r.setupVerdict())
	for _, m := range []struct {
		s *Side
		d []Diff
	}{{r.Base, r.BaseMixed}, {r.New, r.NewMixed}} {
		if len(m.d) == 0 {
			continue
		}
		ew.f("%s\n", mixedWarning(m.s, m.d))
		for _, d := range m.d {
			ew.f("  %s: %s\n", d.Param, d.Base)
		}
	}
	if len(r.OnlyBase) > 0 {
		ew.f("Phases only in BASE (not compared): %s\n", strings.Join(r.OnlyBase, ", "))
	}
	if len(r.OnlyNew) > 0 {
		ew.f("Phases only in NEW (not compared): %s\n", strings.Join(r.OnlyNew, ", "))
	}
	for _, m := range r.Flows {
		ew.f("WARNING: %s.\n", m.Message("BASE", "NEW"))
	}

	for _, p := range r.Phases {
		ew.f("\nPhase %q: BASE %s, NEW %s (median [min – max] over repeats; Mann–Whitney U, α=%.2f)\n",
			p.Phase, plural(p.NBase, "repeat", "repeats"), plural(p.NNew, "repeat", "repeats"), Alpha)
		if p.Mismatch != nil {
			ew.f("  NOT COMPARABLE: %s.\n", p.Mismatch.Message("BASE", "NEW"))
		}
		if n := p.note(); n != "" {
			ew.f("  %s\n", n)
		}
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  metric\tBASE\t\tNEW\t\tchange\tsignificance")
		for _, m := range p.Metrics {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.label(),
				m.Base.median(), m.Base.rangeString(), m.New.median(), m.New.rangeString(), m.change(), m.verdict())
		}
		tw.Flush()
	}
	return ew.err
}

// WriteMarkdown writes the comparison as Markdown tables.
func (r *Comparison) WriteMarkdown(w io.Writer) error {
	ew := &errWriter{w: w}
	ew.f("# runner compare: `%s`\n\n", mdCell(r.Base.Scenario()))
	ew.f("- BASE: `%s` (%s)\n", mdCell(r.Base.Arg), plural(len(r.Base.Files), "report", "reports"))
	ew.f("- NEW: `%s` (%s)", mdCell(r.New.Arg), plural(len(r.New.Files), "report", "reports"))
	if r.New.Scenario() != r.Base.Scenario() {
		ew.f(", scenario `%s`", mdCell(r.New.Scenario()))
	}
	ew.f("\n\n## Setup\n\n")
	if len(r.Diffs) > 0 {
		ew.f("| parameter | BASE | NEW |\n|---|---|---|\n")
		for _, d := range r.Diffs {
			ew.f("| %s | `%s` | `%s` |\n", mdCell(d.Param), mdCell(d.Base), mdCell(d.New))
		}
		ew.f("\n")
	}
	v := r.setupVerdict()
	if len(r.Diffs) > 1 {
		v = "**" + v + "**"
	}
	ew.f("%s\n", v)
	for _, m := range []struct {
		s *Side
		d []Diff
	}{{r.Base, r.BaseMixed}, {r.New, r.NewMixed}} {
		if len(m.d) == 0 {
			continue
		}
		ew.f("\n**%s**\n\n", mixedWarning(m.s, m.d))
		for _, d := range m.d {
			ew.f("- %s: `%s`\n", mdCell(d.Param), mdCell(d.Base))
		}
	}
	if len(r.OnlyBase) > 0 {
		ew.f("\nPhases only in BASE (not compared): %s\n", strings.Join(r.OnlyBase, ", "))
	}
	if len(r.OnlyNew) > 0 {
		ew.f("\nPhases only in NEW (not compared): %s\n", strings.Join(r.OnlyNew, ", "))
	}
	for _, m := range r.Flows {
		ew.f("\n**WARNING: %s.**\n", mdCell(m.Message("BASE", "NEW")))
	}
	for _, p := range r.Phases {
		ew.f("\n## Phase `%s`\n\nBASE %s, NEW %s; median [min – max] over repeats; Mann–Whitney U, α=%.2f.\n\n",
			mdCell(p.Phase), plural(p.NBase, "repeat", "repeats"), plural(p.NNew, "repeat", "repeats"), Alpha)
		if p.Mismatch != nil {
			ew.f("> **NOT COMPARABLE:** %s.\n\n", mdCell(p.Mismatch.Message("BASE", "NEW")))
		}
		if n := p.note(); n != "" {
			ew.f("> %s\n\n", n)
		}
		ew.f("| metric | BASE median | BASE range | NEW median | NEW range | change | significance |\n|---|--:|--:|--:|--:|--:|---|\n")
		for _, m := range p.Metrics {
			ew.f("| %s | %s | %s | %s | %s | %s | %s |\n", m.label(),
				m.Base.median(), m.Base.rangeString(), m.New.median(), m.New.rangeString(), m.change(), m.verdict())
		}
	}
	return ew.err
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "`", "'").Replace(s)
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}

func (e *errWriter) f(format string, a ...any) { fmt.Fprintf(e, format, a...) }
