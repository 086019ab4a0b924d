package reports

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/metric"
	"github.com/runner-dev/runner/engine/rules"
)

// Markdown writes the run as GitHub-flavoured Markdown, fit for a
// pull-request comment or a CI step summary ($GITHUB_STEP_SUMMARY).
// Interrupted, could-not-run, inconclusive and unfinished runs say so at
// the top; then come the verdict (every rule with its status, phase,
// observed value per repeat and the rule as the budget), the load
// (offered vs achieved) and throughput per repeat, latency per phase as
// median [min – max] across repeats (never averaged), for phases that ran
// flows (whose rows say "(iterations)") a table of their steps per repeat
// and across repeats, errors by class and code, Little's law,
// reconciliation, warnings, the environment, and a Mermaid chart of the
// mean response time per second. Secret values are redacted; table cells
// are escaped.
func Markdown(w io.Writer, r *Run) error {
	m := &mdWriter{r: r}
	m.header()
	m.verdict()
	if m.measured() {
		m.load()
		m.latency()
		m.steps()
		m.errors()
		m.little()
	}
	m.reconcile()
	m.warnings()
	m.environment()
	if m.measured() {
		m.charts()
	}
	_, err := io.WriteString(w, r.redact(m.b.String()))
	return err
}

type mdWriter struct {
	b bytes.Buffer
	r *Run
}

func (m *mdWriter) f(format string, a ...any) { fmt.Fprintf(&m.b, format, a...) }

// measured is true when at least one (repeat, phase) was measured.
func (m *mdWriter) measured() bool {
	return m.r.Result != nil && len(m.r.Result.Phases) > 0
}

// runOutcome is the run's result in one word: Run.Outcome when set,
// otherwise derived as the console derives its verdict line.
func runOutcome(r *Run) string {
	switch {
	case r.Outcome != "":
		return r.Outcome
	case r.Error != "":
		return "could-not-run"
	case r.Result != nil && r.Result.Interrupted:
		return "interrupted"
	case r.Verdict != nil:
		return r.Verdict.Status.String()
	}
	return "incomplete"
}

var mdOutcomeBadge = map[string]string{
	"pass":          "✅ PASS",
	"fail":          "❌ FAIL",
	"error":         "❌ ERROR",
	"inconclusive":  "⚠️ INCONCLUSIVE",
	"could-not-run": "🛑 COULD NOT RUN",
	"interrupted":   "⏹️ INTERRUPTED",
	"incomplete":    "⏳ INCOMPLETE",
}

func (m *mdWriter) header() {
	r := m.r
	name := "scenario"
	if r.Scenario != nil {
		name = r.Scenario.Name
	}
	oc := runOutcome(r)
	badge, ok := mdOutcomeBadge[oc]
	if !ok {
		badge = strings.ToUpper(oc)
	}
	m.f("## %s · runner · %s\n\n", badge, m.t(name))
	switch oc {
	case "could-not-run":
		m.f("> **Could not run:** %s\n\n", m.t(r.Error))
	case "interrupted":
		m.f("> **Interrupted:** the run was stopped before it finished; partial results below, nothing is judged as passed.\n\n")
	case "incomplete":
		m.f("> **Incomplete:** a snapshot of a run still in progress; the verdict is not final.\n\n")
	case "inconclusive":
		if inv := invalidatingWarnings(r); len(inv) > 0 {
			m.f("> **Inconclusive:** %s, so the measurement cannot support a verdict:\n", m.t(invalidReason(r)))
			for _, w := range inv {
				m.f("> - %s\n", m.t(w.Message))
			}
			m.f("\n")
		} else {
			m.f("> **Inconclusive:** at least one rule could not be judged (see below); no rule failed.\n\n")
		}
	}
	if r.Error != "" && oc != "could-not-run" {
		m.f("> **Error:** %s\n\n", m.t(r.Error))
	}
	var facts []string
	facts = append(facts, "run `"+r.RunID+"`")
	if r.Target != "" {
		t := "target " + m.ci(r.Target)
		if r.TargetSpawned != "" {
			t += " (spawned)"
		}
		if r.Insecure {
			t += " **TLS certificate verification OFF**"
		}
		facts = append(facts, t)
	}
	if r.Plan != nil {
		facts = append(facts, fmt.Sprintf("%d repeat(s) × %d phase(s)", r.Plan.Repeats, len(r.Plan.Phases)))
	}
	if g := r.Merged; g != nil {
		facts = append(facts, fmt.Sprintf("merged from %d scale-out segments (client figures: the busiest segment's)", g.N))
	}
	if s := r.Segment; s != nil {
		facts = append(facts, fmt.Sprintf("segment %d/%d of a scale-out (not judged)", s.K, s.N))
	}
	if !r.Started.IsZero() {
		s := "started " + r.Started.UTC().Format("2006-01-02 15:04:05Z")
		if r.Ended.After(r.Started) {
			s += ", took " + r.Ended.Sub(r.Started).Round(time.Second).String()
		}
		facts = append(facts, s)
	}
	if r.Outcome != "" {
		facts = append(facts, fmt.Sprintf("exit code %d", r.ExitCode))
	}
	m.f("%s\n\n", strings.Join(facts, " · "))
}

// invalidating returns the warnings that make a measurement unfit for a
// verdict.
func invalidatingWarnings(r *Run) []engine.Warning {
	var out []engine.Warning
	for _, w := range r.Warnings {
		if w.Invalidates {
			out = append(out, w)
		}
	}
	return out
}

// invalidPhrases says, per code of an invalidating warning
// (engine.Warning.Invalidates), in a few words why it keeps a run from a
// pass. The codes of a load generator that was the bottleneck share one
// phrase.
var invalidPhrases = map[string]string{
	"censored":             "arrivals were left over (the figures censor the longest waits)",
	"connections-missing":  "the requested concurrency was not reached",
	"baseline-flows":       "rules compare figures with a baseline's that count other things (flow iterations against single requests, or other steps)",
	"late-start":           "a phase started late on its timetable and lost part of its window",
	"schedule-lateness":    generatorPhrase,
	"step-lateness":        generatorPhrase,
	"client-cpu":           generatorPhrase,
	"segment-generator":    generatorPhrase,
	"segments-apart":       "the segments did not run their load together",
	"clock-unsynchronised": "the segments' clocks were not synchronised, so nothing bounds how far apart they ran",
	"segment-slots":        "the segments dropped arrivals that one generator might have sent",
	"unsolicited-replies":  "the target sent replies no request asked for, so replies are not known to answer their requests",
}

// generatorPhrase is the invalidPhrases entry of a load generator that
// was the bottleneck.
const generatorPhrase = "the load generator was the bottleneck"

// invalidReason says in a few words why the run's invalidating warnings
// keep it from a pass: one phrase per kind (invalidPhrases), in the
// order the warnings first name them; a kind without a phrase is named
// by its code.
func invalidReason(r *Run) string {
	var why []string
	for _, w := range invalidatingWarnings(r) {
		phrase, ok := invalidPhrases[w.Code]
		if !ok {
			phrase = fmt.Sprintf("a %s warning invalidates the measurement", w.Code)
		}
		if !slices.Contains(why, phrase) {
			why = append(why, phrase)
		}
	}
	if len(why) == 0 {
		return "the measurement cannot support a verdict"
	}
	return strings.Join(why, ", and ")
}

var mdStatusBadge = map[rules.Status]string{
	rules.Pass:         "✅ PASS",
	rules.Fail:         "❌ FAIL",
	rules.Inconclusive: "⚠️ INCONCLUSIVE",
	rules.Error:        "❌ ERROR",
}

func (m *mdWriter) verdict() {
	m.f("### Verdict\n\n")
	v := m.r.Verdict
	switch {
	case v == nil || (m.r.Error != "" && !m.measured()):
		m.f("Not judged: nothing was measured.\n\n")
		return
	case len(v.Rules) == 0 && len(v.Expect) == 0:
		m.f("No rules: the verdict only says whether the run completed.\n\n")
		return
	case len(v.Rules) == 0:
		m.f("No `assert` rules; reconciliation below.\n\n")
		return
	}
	m.ruleTable(v.Rules)
}

// ruleTable writes one row per rule and phase judged, then why each rule
// that did not pass did not, repeat by repeat.
func (m *mdWriter) ruleTable(rs []engine.RuleResult) {
	m.f("| Status | Rule (budget) | Phase | Observed per repeat |\n|---|---|---|---|\n")
	for _, rr := range rs {
		m.f("| %s | %s | %s | %s |\n", mdStatusBadge[rr.Status], m.c(rr.Source), m.t(rr.Phase), m.observed(rr))
	}
	m.f("\n")
	var why []string
	for _, rr := range rs {
		if rr.Status == rules.Pass {
			continue
		}
		head := fmt.Sprintf("- %s %s on phase %s", m.ci(rr.Source), strings.ToUpper(rr.Status.String()), m.t(rr.Phase))
		var lines []string
		for i, pv := range rr.Repeats {
			if pv.Reason != "" {
				lines = append(lines, fmt.Sprintf("  - repeat %d: %s", ruleRepeatNumber(rr, i), m.t(pv.Reason)))
			}
		}
		if len(lines) == 0 && rr.Reason != "" {
			head += ": " + m.t(rr.Reason)
		}
		why = append(why, head)
		why = append(why, lines...)
	}
	if len(why) > 0 {
		m.f("%s\n\n", strings.Join(why, "\n"))
	}
}

func ruleRepeatNumber(rr engine.RuleResult, i int) int {
	if i < len(rr.RepeatNumbers) {
		return rr.RepeatNumbers[i]
	}
	return i + 1
}

// observed renders a rule's observed values, one per repeat, for a table
// cell; "—" when no repeat was judged.
func (m *mdWriter) observed(rr engine.RuleResult) string {
	if len(rr.Repeats) == 0 {
		return "—"
	}
	var parts []string
	for i, pv := range rr.Repeats {
		mark := ""
		if pv.Status != rules.Pass {
			mark = " " + strings.ToUpper(pv.Status.String())
		}
		parts = append(parts, fmt.Sprintf("#%d %s%s", ruleRepeatNumber(rr, i), m.c(pv.Observed), mark))
	}
	return strings.Join(parts, "<br>")
}

// phaseTitle is how the tables name a phase (name, escaped): with
// "(iterations)" when its figures count a flow's iterations and
// "(warmup)" for a warmup, in one pair of brackets when both apply
// ("shop (iterations, warmup)"); a phase named "warmup" is not called a
// warmup twice ("warmup (iterations)").
func (m *mdWriter) phaseTitle(name string, flow, warmup bool) string {
	var marks []string
	if flow {
		marks = append(marks, "iterations")
	}
	if warmup && !strings.EqualFold(strings.TrimSpace(name), "warmup") {
		marks = append(marks, "warmup")
	}
	s := m.t(name)
	if len(marks) > 0 {
		s += " (" + strings.Join(marks, ", ") + ")"
	}
	return s
}

// countedColumn is the title of the per-repeat tables' column of the
// phases' own counts: Iterations when every phase ran flows, Requests
// when none did, both when some did (their rows say "(iterations)").
func (m *mdWriter) countedColumn() string {
	prs := m.r.Result.Phases
	switch {
	case !slices.ContainsFunc(prs, isFlow):
		return "Requests"
	case slices.ContainsFunc(prs, func(pr *engine.PhaseResult) bool { return !isFlow(pr) }):
		return "Requests / iterations"
	}
	return "Iterations"
}

// phaseLabel names a (repeat, phase) for the per-repeat tables.
func (m *mdWriter) phaseLabel(pr *engine.PhaseResult) string {
	s := m.phaseTitle(pr.Phase.Name, isFlow(pr), pr.Phase.Warmup)
	if pr.Interrupted {
		s += " **INTERRUPTED**"
	}
	return s
}

func (m *mdWriter) load() {
	m.f("### Load and throughput\n\n")
	if slices.ContainsFunc(m.r.Result.Phases, isFlow) {
		// Runs of flows: every phase's own figures count iterations.
		m.f("In a phase that ran flows (marked iterations) the figures count iterations: throughput counts ok iterations only, per second of the time in which they completed (the phase plus its drain); achieved is iterations started (first step sent) per second of the time in which they were started; offered is the planned (or drawn) arrival rate of an open phase over its own length, an arrival being one iteration. Left over: arrivals neither finished nor failed when the drain ran out (censored).\n\n")
	} else {
		m.f("Throughput counts ok responses only, per second of the time in which they completed (the phase plus its drain); achieved is requests sent per second of the time in which they were sent; offered is the planned (or drawn) arrival rate of an open phase over its own length. Left over: arrivals neither answered nor failed when the drain ran out (censored).\n\n")
	}
	m.f("| Phase | Repeat | Model | Offered /s | Achieved /s | Throughput /s | %s | OK | Dropped | Left over | Connections | Duration |\n", m.countedColumn())
	m.f("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, pr := range m.r.Result.Phases {
		s := pr.Summary
		offered := "—"
		if off, ok := engine.MeasuredOfferedRate(pr); ok {
			offered = rate(off)
		}
		conns := strconv.Itoa(pr.ConnectionsEstablished)
		if pr.ConnectionsEstablished != pr.ConnectionsRequested {
			conns = fmt.Sprintf("%d of %d", pr.ConnectionsEstablished, pr.ConnectionsRequested)
		}
		length := s.Elapsed.Round(time.Millisecond).String()
		if d := s.Drain(); d > 0 && !pr.Interrupted {
			length += " + drain " + d.Round(time.Millisecond).String()
		}
		m.f("| %s | %d | %s | %s | %s | %s | %d | %d | %d | %d | %s | %s |\n", m.phaseLabel(pr), pr.Repeat, pr.Phase.Model,
			offered, rate(s.AchievedRate()), rate(s.Throughput()), s.Requests, s.OK, s.Dropped, s.LeftOver(), conns, length)
	}
	m.f("\n")
	for _, pr := range m.r.Result.Phases {
		if n := pr.Summary.LeftOver(); n > 0 {
			m.f("- Left over in %s, repeat %d: %d of %d arrivals (%s).\n", m.phaseLabel(pr), pr.Repeat, n, pr.Summary.Arrivals, leftOverHow(pr.Summary))
		}
	}
	if slices.ContainsFunc(m.r.Result.Phases, func(pr *engine.PhaseResult) bool { return pr.Summary.LeftOver() > 0 }) {
		m.f("\n")
	}
	grouped := false
	for _, pr := range m.r.Result.Phases {
		if w := pr.Phase.DispatchWindow; w > 0 {
			s := pr.Summary
			mx, _ := s.SendEarly.Max()
			lag, _ := s.SendLag.Percentile(99)
			m.f("- Dispatch window %s%s in %s, repeat %d: %d of %d requests sent early with their group (by at most %s; their response times count from the send); send lag p99 %s.\n",
				dur(w), pr.Phase.DispatchDefaultNote(), m.phaseLabel(pr), pr.Repeat, s.SendEarly.Count(), s.Requests, dur(mx), dur(lag))
			grouped = true
		}
	}
	if grouped {
		m.f("\n")
	}
}

func (m *mdWriter) latency() {
	across := m.r.Across
	if across == nil {
		across = engine.Across(m.r.Result)
	}
	m.f("### Latency\n\n")
	if len(across) == 0 {
		m.f("No phase finished: no latency to show.\n\n")
		return
	}
	what := "ok requests (from the intended start"
	if slices.ContainsFunc(m.r.Result.Phases, isFlow) {
		what = "ok iterations (from the intended start to the last step's completion, think times included"
	}
	if slices.ContainsFunc(m.r.Result.Phases, func(pr *engine.PhaseResult) bool { return pr.Summary.SendEarly.Count() > 0 }) {
		what += "; from the send for one a dispatch window sent early"
	}
	what += ")"
	m.f("Response time of %s. With several repeats each cell is the median [min – max] across them: percentiles are never averaged, and the median of an even count is the worse middle value. Interrupted phases are left out.\n\n", what)
	m.f("| Phase | Repeats | Samples |")
	cols := responseStats()
	for _, c := range cols {
		m.f(" %s |", statTitle(c))
	}
	m.f("\n|---|---:|---:|%s\n", strings.Repeat("---:|", len(cols)))
	thin := false
	for _, ps := range across {
		var samples []string
		warmup, flow := false, false
		fewest := int64(-1)
		for _, pr := range m.r.Result.Phases {
			if pr.Phase.Name == ps.Phase && !pr.Interrupted {
				n := pr.Summary.Response.Count()
				samples = append(samples, strconv.FormatInt(n, 10))
				warmup = pr.Phase.Warmup
				flow = flow || isFlow(pr)
				if fewest < 0 || n < fewest {
					fewest = n
				}
			}
		}
		name := m.phaseTitle(ps.Phase, flow, warmup)
		m.f("| %s | %d | %s |", name, len(ps.Repeats), strings.Join(samples, ", "))
		for _, c := range cols {
			v := mdSpreadMs(ps.Metrics, c.Across)
			if c.P > 0 && v != "n/a" && fewest < c.MinSamples() {
				v += " \\*" // as the console marks it
				thin = true
			}
			m.f(" %s |", v)
		}
		m.f("\n")
	}
	m.f("\n")
	if thin {
		m.f("\\* from fewer samples than the percentile needs to mean much (10 beyond it: 1000 for p99) in at least one repeat.\n\n")
	}
}

// steps writes, for each phase that ran flows, a table of its steps: one
// row per (repeat, step) with the step's requests, ok, errors, p50, p95,
// p99 and max of its response time (from when the step came due) and
// throughput, then with several repeats one row per step of median
// [min – max] (stepsAcross). Nothing when no phase ran flows.
func (m *mdWriter) steps() {
	across := stepsAcross(m.r.Result)
	var order []string
	by := map[string][]*engine.PhaseResult{}
	for _, pr := range m.r.Result.Phases {
		if !isFlow(pr) {
			continue
		}
		if _, ok := by[pr.Phase.Name]; !ok {
			order = append(order, pr.Phase.Name)
		}
		by[pr.Phase.Name] = append(by[pr.Phase.Name], pr)
	}
	if len(order) == 0 {
		return
	}
	m.f("### Flow steps\n\n%s Percentiles marked \\* rest on fewer samples than they need to mean much (10 beyond them: 1000 for p99).\n\n", stepsNote)
	for _, name := range order {
		title := m.phaseTitle(name, false, by[name][0].Phase.Warmup)
		m.f("#### %s\n\n| Repeat | Flow | Step |", title)
		for _, f := range stepFigures {
			title := f.title
			if f.unit == metric.PerSecond {
				title += " /s"
			}
			m.f(" %s |", title)
		}
		m.f("\n|---:|---|---|%s\n", strings.Repeat("---:|", len(stepFigures)))
		for _, pr := range by[name] {
			rep := strconv.Itoa(pr.Repeat)
			if pr.Interrupted {
				rep += " **INTERRUPTED**"
			}
			for _, st := range pr.Steps {
				m.f("| %s | %s | %s |", rep, m.t(st.Flow), m.t(st.Name))
				for _, f := range stepFigures {
					m.f(" %s |", mdText(f.cell(st.Summary)))
				}
				m.f("\n")
			}
		}
		for _, ps := range across {
			if ps.Phase != name || len(ps.Repeats) < 2 {
				continue
			}
			for _, st := range ps.Steps {
				m.f("| median [min – max] of %d | %s | %s |", len(ps.Repeats), m.t(st.Flow), m.t(st.Name))
				for i, f := range stepFigures {
					m.f(" %s |", strings.ReplaceAll(f.spreadCell(st.Figures[i], st.Fewest), "*", "\\*"))
				}
				m.f("\n")
			}
		}
		m.f("\n")
	}
}

// mdSpreadMs renders one metric in ms across repeats: the value alone when
// min and max agree, else median [min – max]; "n/a" when unmeasured.
func mdSpreadMs(ms map[string]engine.Spread, name string) string {
	s, ok := ms[name]
	if !ok || s.N == 0 {
		return "n/a"
	}
	f := func(v float64) string { return dur(time.Duration(v * float64(time.Millisecond))) }
	if s.Min == s.Max {
		return f(s.Median)
	}
	return fmt.Sprintf("%s [%s – %s]", f(s.Median), f(s.Min), f(s.Max))
}

func (m *mdWriter) errors() {
	m.f("### Errors\n\n")
	var any bool
	for _, pr := range m.r.Result.Phases {
		if pr.Summary.Errors > 0 || interruptCancelled(pr.Summary) > 0 {
			any = true
		}
	}
	if !any {
		m.f("No errors.\n\n")
		return
	}
	// The drain's cuts are left over (the load table), not cancelled here.
	m.f("| Phase | Repeat | Errors | Error rate | By class | By code | Cancelled (interrupted) |\n|---|---:|---:|---:|---|---|---:|\n")
	for _, pr := range m.r.Result.Phases {
		s := pr.Summary
		er := "n/a"
		if v, ok := s.ErrorRate(); ok {
			er = fmt.Sprintf("%.2f %%", 100*v)
		}
		m.f("| %s | %d | %d | %s | %s | %s | %d |\n", m.phaseLabel(pr), pr.Repeat, s.Errors, er,
			m.t(mdOrDash(counts(s.ErrorsByClass))), m.t(mdOrDash(counts(s.ErrorsByCode))), interruptCancelled(s))
	}
	m.f("\n")
	var eg []string
	seen := map[string]bool{}
	for _, pr := range m.r.Result.Phases {
		for _, c := range slices.Sorted(maps.Keys(pr.Summary.ErrorExamples)) {
			if !seen[c] {
				seen[c] = true
				eg = append(eg, fmt.Sprintf("- %s: %s", m.ci(c), m.t(pr.Summary.ErrorExamples[c])))
			}
		}
	}
	if len(eg) > 0 {
		m.f("Examples:\n\n%s\n\n", strings.Join(eg, "\n"))
	}
}

func mdOrDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func (m *mdWriter) little() {
	m.f("### Little's law\n\n")
	m.f("λ·W (throughput of responses × their mean response time) should match the number of requests in the system; a gap means requests waited in the client or ended without a response.")
	if slices.ContainsFunc(m.r.Result.Phases, isFlow) {
		m.f(" In a phase that ran flows λ counts iterations and W runs from an iteration's intended start to its last step's completion, think times included: λ·W counts %s (virtual users thinking between steps too), not requests at the target.", engine.FlowLittleCounts)
	}
	m.f("\n\n| Phase | Repeat | λ·W | Against |\n|---|---:|---:|---|\n")
	for _, pr := range m.r.Result.Phases {
		lc := engine.Little(pr)
		m.f("| %s | %d | %s | %s |\n", m.phaseLabel(pr), pr.Repeat, littleL(lc), m.t(lc.Against))
	}
	m.f("\n")
}

func (m *mdWriter) reconcile() {
	v := m.r.Verdict
	if v == nil || len(v.Expect) == 0 || (m.r.Error != "" && !m.measured()) {
		return
	}
	m.f("### Reconciliation\n\n")
	m.f("The target's own counters (deltas over each phase) against the client's counts.\n\n")
	m.ruleTable(v.Expect)
}

func (m *mdWriter) warnings() {
	if len(m.r.Warnings) == 0 || (m.r.Error != "" && !m.measured()) {
		return
	}
	m.f("### Warnings\n\n")
	for _, w := range m.r.Warnings {
		mark := ""
		if w.Invalidates {
			mark = " **(invalidates the measurement)**"
		}
		m.f("- %s%s\n", m.t(w.Message), mark)
	}
	m.f("\n")
}

func (m *mdWriter) environment() {
	e := m.r.Env
	m.f("### Environment\n\n| | |\n|---|---|\n")
	row := func(k, v string) {
		if v != "" {
			m.f("| %s | %s |\n", k, v)
		}
	}
	osv := e.OS
	if e.Arch != "" {
		osv += "/" + e.Arch
	}
	if e.Kernel != "" {
		osv += " (kernel " + e.Kernel + ")"
	}
	row("OS", m.t(osv))
	row("CPU", m.t(e.CPUModel))
	if e.Cores > 0 {
		c := strconv.Itoa(e.Cores)
		if e.GOMAXPROCS > 0 && e.GOMAXPROCS != e.Cores {
			c += fmt.Sprintf(" (GOMAXPROCS %d)", e.GOMAXPROCS)
		}
		row("Cores", c)
	}
	row("Go", m.t(e.GoVersion))
	rv := m.t(e.Runner)
	if e.RunnerCommit != "" {
		rv += " (" + m.c(e.RunnerCommit) + ")"
	}
	row("Runner", rv)
	if e.WorkdirCommit != "" {
		row("Git commit", m.c(e.WorkdirCommit))
	}
	if t := e.Timer; t != nil {
		precise := dur(t.Precise)
		if !t.PreciseAvailable {
			precise = "unavailable"
		}
		row("Timer", fmt.Sprintf("a %s sleep overshoots by %s (Go timer), %s (precise clock)", dur(t.Sleep), dur(t.Timer), precise))
	}
	m.f("\n")
}

// mdMaxChartPoints bounds a chart's points; longer timelines are bucketed.
const mdMaxChartPoints = 120

// mdChartPalette are the charts' line colours, one per repeat in turn:
// dark enough to read on Mermaid's default light theme.
const mdChartPalette = "#1f4e9c, #c0392b, #1e7b34, #7d3c98, #b9770e"

// charts draws, per measured phase, the mean response time of each
// second (the timeline keeps no per-second percentiles), one line per
// repeat, in a collapsed Mermaid xychart.
func (m *mdWriter) charts() {
	type series struct {
		repeat int
		tl     []measure.TimelineBucket
	}
	var order []string
	by := map[string][]series{}
	for _, pr := range m.r.Result.Phases {
		if pr.Phase.Warmup || pr.Interrupted || len(pr.Summary.Timeline) < 2 {
			continue
		}
		if _, ok := by[pr.Phase.Name]; !ok {
			order = append(order, pr.Phase.Name)
		}
		tl := pr.Summary.Timeline
		for len(tl) > 0 && tl[len(tl)-1].OK+tl[len(tl)-1].Errors == 0 {
			tl = tl[:len(tl)-1] // the seconds after the last completion
		}
		by[pr.Phase.Name] = append(by[pr.Phase.Name], series{pr.Repeat, tl})
	}
	if len(order) == 0 {
		return
	}
	m.f("<details><summary>Mean response time per second</summary>\n\n")
	for _, name := range order {
		ss := by[name]
		n := 0
		for _, s := range ss {
			n = max(n, len(s.tl))
		}
		step := (n + mdMaxChartPoints - 1) / mdMaxChartPoints
		var reps []string
		for _, s := range ss {
			reps = append(reps, strconv.Itoa(s.repeat))
		}
		title := fmt.Sprintf("%s: mean response time (ms) per %ds, repeat %s", name, step, strings.Join(reps, ", "))
		if len(ss) > 1 {
			title = fmt.Sprintf("%s: mean response time (ms) per %ds, one line per repeat (%s)", name, step, strings.Join(reps, ", "))
		}
		// One label per point, the second its bucket starts at: a numeric
		// range (0 --> n) would spread the points over it evenly whatever
		// seconds they stand for. The palette's dark lines read on the
		// default (light) theme.
		var xs []string
		for i := 0; i < n; i += step {
			xs = append(xs, strconv.Itoa(i))
		}
		m.f("```mermaid\n%%%%{init: {\"themeVariables\": {\"xyChart\": {\"plotColorPalette\": \"%s\"}}}}%%%%\nxychart-beta\n    title %q\n    x-axis \"second\" [%s]\n    y-axis \"ms\"\n",
			mdChartPalette, strings.NewReplacer(`"`, "'").Replace(title), strings.Join(xs, ", "))
		for _, s := range ss {
			var pts []string
			for i := 0; i < len(s.tl); i += step {
				var ok int64
				var sum time.Duration
				for _, sec := range s.tl[i:min(i+step, len(s.tl))] {
					ok += sec.OK
					sum += sec.ResponseSum
				}
				v := 0.0
				if ok > 0 {
					v = float64(sum) / float64(ok) / float64(time.Millisecond)
				}
				pts = append(pts, strconv.FormatFloat(v, 'f', 3, 64))
			}
			m.f("    line [%s]\n", strings.Join(pts, ", "))
		}
		m.f("```\n\n")
	}
	m.f("A second without an ok response plots as 0.\n\n</details>\n")
}

// t escapes s for Markdown text after redacting it: redaction must come
// first, or an escaped secret would no longer match.
func (m *mdWriter) t(s string) string { return mdText(m.r.redact(s)) }

// c renders s, redacted, as a code span fit for a table cell.
func (m *mdWriter) c(s string) string { return mdCode(m.r.redact(s), true) }

// ci renders s, redacted, as a code span outside a table.
func (m *mdWriter) ci(s string) string { return mdCode(m.r.redact(s), false) }

// mdText escapes what would break a table row or start Markdown syntax in
// s: backslashes, pipes, emphasis, links and HTML; newlines become <br>.
func mdText(s string) string {
	return strings.NewReplacer(
		`\`, `\\`, "|", `\|`, "*", `\*`, "_", `\_`, "`", "\\`", "[", `\[`, "]", `\]`,
		"<", "&lt;", ">", "&gt;", "&", "&amp;",
		"\r\n", "<br>", "\n", "<br>", "\r", "<br>",
	).Replace(s)
}

// code renders s as an inline code span: a fence longer than any run of
// backticks in s, newlines as spaces, and in a table cell pipes escaped
// (GFM unescapes \| inside code spans in tables, and only there).
func mdCode(s string, cell bool) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	if cell {
		s = strings.ReplaceAll(s, "|", `\|`)
	}
	if s == "" {
		return ""
	}
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if longest > 0 || strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}
