package reports

import (
	"bufio"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/metric"
	"github.com/runner-dev/runner/engine/rules"
)

// The HTML report's scripts and styles, inlined into every page: uPlot
// (assets/uplot, vendored from npm with its licence; VERSION holds its
// version and digests) and the report's own script that draws the charts
// with it.
var (
	//go:embed assets/uplot/uPlot.iife.min.js
	uplotJS string
	//go:embed assets/uplot/uPlot.min.css
	uplotCSS string
	//go:embed assets/report.js
	reportJS string
)

// HTML writes the run as one self-contained HTML page that opens offline:
// inline CSS and scripts, the charts' data as an inline JSON block drawn
// in the browser by uPlot (interactive: hover for values, drag to zoom,
// double-click to reset), no external resource. It holds the verdict
// with the headline numbers of each judged phase beside it (throughput,
// p95, p99, errors; for repeats the median [min – max] of N), the rules
// with their observed values per repeat, then per phase, judged phases
// first and warmups folded at the end, a summary table (per repeat, and
// median [min – max] across repeats) and per measured repeat the charts:
// latency by percentile, response-time percentiles over time (when the
// summary records intervals), throughput, mean and max response time per
// second, errors, and requests in the system; the rules' limits on a
// charted metric (`p99 < 20ms`) are drawn on its charts, and the charts
// of one kind share a y scale across the repeats of a phase. Without
// JavaScript the tables still hold every number. Every text is escaped
// and secrets are redacted. Its writes to w are buffered (64 KiB); the
// error is the first of building the page, executing its template or
// writing to w.
func HTML(w io.Writer, r *Run) error {
	if r == nil {
		return fmt.Errorf("html report: no run")
	}
	pg, err := buildPage(r)
	if err != nil {
		return err
	}
	// The template writes in many small pieces: buffered, a page of
	// thousands of phases is a few large writes, not one per piece.
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := htmlPage.Execute(bw, pg); err != nil {
		return err
	}
	return bw.Flush()
}

type kv struct{ K, V string }

type page struct {
	Title, Scenario, RunID string
	Verdict, VClass, VNote string
	Facts, Env             []kv
	Error                  string
	Judged                 bool
	Rules, Expect          []ruleRow
	Repeats                []int
	Headline               []headline
	Phases, Warmups        []phaseSection
	Warnings               []warnRow
	RuleSpan               int
	WarningNote            string
	// Charts is every chart's data, for the page's JSON block.
	Charts            []chart
	UPlotJS, ReportJS template.JS
	UPlotCSS          template.CSS
}

// headline is a judged phase's headline numbers: throughput, p95, p99
// and errors.
type headline struct {
	Phase string
	Cells []headCell
}

// headCell is one headline number: the value of the one repeat, or the
// median of the repeats with Range "[min – max] of N".
type headCell struct{ Value, Range string }

type ruleRow struct {
	Rule, Phase, Status, Class, Reason string
	Cells                              []ruleCell // per repeat of the run, in order
}

type ruleCell struct{ Status, Class, Observed, Reason string }

type phaseSection struct {
	Name, Meta string
	Warmup     bool
	// spread summarises the repeats that finished the phase (nil: none).
	spread   *engine.PhaseSpread
	Columns  []string
	Span     int // columns of the table
	Across   bool
	Rows     []metricRow
	Examples []kv
	Charts   []repeatCharts
	// StepColumns head the flow steps' table (stepFigures' titles) and
	// StepRows fill it: per (repeat, step), then the spread across
	// repeats; both empty for a phase without flows.
	StepColumns []string
	StepRows    []stepRowHTML
	StepsNote   string
}

// stepRowHTML is one row of a phase's flow steps table: a value per
// figure, with under it the range across repeats in a row of medians.
type stepRowHTML struct {
	Repeat, Flow, Name string
	Cells              []headCell
}

// repeatCharts are the charts of one (phase, repeat).
type repeatCharts struct {
	Title  string
	Charts []chart
}

type metricRow struct {
	Label  string
	Cells  []string
	Across string
	Group  bool // a group heading row
}

type warnRow struct{ Code, Where, Message, Class string }

func buildPage(r *Run) (*page, error) {
	red := r.redact
	name := "scenario"
	if r.Scenario != nil {
		name = r.Scenario.Name
	}
	pg := &page{Scenario: red(name), RunID: red(r.RunID), Error: red(r.Error),
		UPlotJS: template.JS(uplotJS), ReportJS: template.JS(reportJS), UPlotCSS: template.CSS(uplotCSS)} //nolint:gosec // our own embedded files
	pg.Title = pg.Scenario + " · " + pg.RunID
	pg.Verdict, pg.VClass, pg.VNote = verdictWord(r)

	if r.Target != "" {
		t := r.Target
		if r.TargetSpawned != "" {
			t += " (spawned: " + strings.TrimSpace(r.TargetSpawned) + ")"
		}
		if r.Insecure {
			t += " [TLS certificate verification OFF]"
		}
		pg.Facts = append(pg.Facts, kv{"target", red(t)})
	}
	if r.Scenario != nil && r.Scenario.File != "" {
		pg.Facts = append(pg.Facts, kv{"scenario file", red(r.Scenario.File)})
	}
	if !r.Started.IsZero() {
		s := r.Started.UTC().Format(time.RFC3339)
		if !r.Ended.IsZero() {
			s += " → " + r.Ended.UTC().Format(time.RFC3339) + " (" + r.Ended.Sub(r.Started).Round(time.Second).String() + ")"
		}
		pg.Facts = append(pg.Facts, kv{"time", s})
	}
	if r.Plan != nil {
		pg.Facts = append(pg.Facts, kv{"plan", fmt.Sprintf("%d repeat(s) × %d phase(s)", r.Plan.Repeats, len(r.Plan.Phases))})
	}
	if r.Outcome != "" {
		pg.Facts = append(pg.Facts, kv{"outcome", fmt.Sprintf("%s (exit code %d)", r.Outcome, r.ExitCode)})
	}
	e := r.Env
	add := func(k, v string) {
		if v != "" {
			pg.Env = append(pg.Env, kv{k, red(v)})
		}
	}
	add("host", e.Hostname)
	add("os", strings.Trim(e.OS+"/"+e.Arch, "/")+" "+e.Kernel)
	if e.Cores > 0 {
		add("cpu", fmt.Sprintf("%s, %d cores, GOMAXPROCS %d", e.CPUModel, e.Cores, e.GOMAXPROCS))
	}
	add("runner", strings.TrimSpace(e.Runner+" "+e.RunnerCommit+" "+e.GoVersion))
	add("workdir commit", e.WorkdirCommit)
	if t := e.Timer; t != nil {
		precise := dur(t.Precise)
		if !t.PreciseAvailable {
			precise = "unavailable"
		}
		add("timer", fmt.Sprintf("a %s sleep overshoots by %s (Go timer), %s (precise clock); median of %d", dur(t.Sleep), dur(t.Timer), precise, t.Samples))
	}

	var phases []*engine.PhaseResult
	if r.Result != nil {
		phases = r.Result.Phases
	}
	for _, pr := range phases {
		if !slices.Contains(pg.Repeats, pr.Repeat) {
			pg.Repeats = append(pg.Repeats, pr.Repeat)
		}
	}
	slices.Sort(pg.Repeats)

	if v := r.Verdict; v != nil && !(r.Error != "" && len(phases) == 0) {
		pg.Judged = true
		pg.Rules = ruleRows(red, v.Rules, pg.Repeats)
		pg.Expect = ruleRows(red, v.Expect, pg.Repeats)
		pg.RuleSpan = 3 + len(pg.Repeats)
	}

	across := r.Across
	if across == nil && r.Result != nil {
		across = engine.Across(r.Result)
	}
	var srcs []ruleSource
	if r.Verdict != nil {
		for _, rr := range r.Verdict.Rules {
			srcs = append(srcs, ruleSource{Rule: rr.Source, Phase: rr.Phase})
		}
	}
	// Judged phases first, warmups apart (folded at the end).
	for _, sec := range phaseSections(red, phases, across, phaseBudgets(srcs)) {
		if sec.Warmup {
			pg.Warmups = append(pg.Warmups, sec)
			continue
		}
		for _, rc := range sec.Charts {
			for i := range rc.Charts {
				rc.Charts[i].ID = fmt.Sprintf("chart-%d", len(pg.Charts)+1)
				pg.Charts = append(pg.Charts, rc.Charts[i])
			}
		}
		pg.Phases = append(pg.Phases, sec)
		pg.Headline = append(pg.Headline, headlineOf(sec.Name, sec.spread))
	}
	for _, w := range r.Warnings {
		where := w.Phase
		if w.Repeat > 0 {
			where = strings.TrimSpace(fmt.Sprintf("%s repeat %d", where, w.Repeat))
		}
		cl := "warn"
		if w.Invalidates {
			cl = "invalid"
		}
		pg.Warnings = append(pg.Warnings, warnRow{Code: red(w.Code), Where: red(where), Message: red(w.Message), Class: cl})
	}
	if n := len(pg.Warnings); n > 0 {
		pg.WarningNote = fmt.Sprintf("%d warning(s): see the end of the page", n)
	}
	return pg, nil
}

// verdictWord is the run's verdict as the console states it.
func verdictWord(r *Run) (word, class, note string) {
	switch {
	case r.Error != "":
		return "COULD NOT RUN", "fail", r.redact(r.Error)
	case r.Result != nil && r.Result.Interrupted:
		return "INTERRUPTED", "inconclusive", "partial results; nothing judged as passed"
	case r.Outcome == "incomplete":
		return "INCOMPLETE", "inconclusive", "a snapshot written while the run went on"
	case r.Outcome == "inconclusive" && r.Verdict != nil && r.Verdict.Status == rules.Pass:
		return "INCONCLUSIVE", "inconclusive", "every rule holds, but " + invalidReason(r) + ": see the warnings"
	case r.Verdict != nil:
		s := r.Verdict.Status
		note := ""
		if r.Verdict.Rules == nil && r.Verdict.Expect == nil {
			note = "no rules: the verdict only says whether the run completed"
		}
		return strings.ToUpper(s.String()), statusClass(s), note
	}
	return "NOT JUDGED", "inconclusive", ""
}

func statusClass(s rules.Status) string {
	switch s {
	case rules.Pass:
		return "pass"
	case rules.Fail, rules.Error:
		return "fail"
	}
	return "inconclusive"
}

func ruleRows(red func(string) string, rs []engine.RuleResult, repeats []int) []ruleRow {
	var out []ruleRow
	for _, rr := range rs {
		row := ruleRow{Rule: red(rr.Source), Phase: red(rr.Phase), Status: strings.ToUpper(rr.Status.String()), Class: statusClass(rr.Status)}
		if len(rr.Repeats) == 0 {
			row.Reason = red(rr.Reason)
		}
		for _, rep := range repeats {
			c := ruleCell{Status: "—", Class: "none"}
			if i := slices.Index(rr.RepeatNumbers, rep); i >= 0 && i < len(rr.Repeats) {
				v := rr.Repeats[i]
				c = ruleCell{Status: strings.ToUpper(v.Status.String()), Class: statusClass(v.Status), Observed: red(v.Observed), Reason: red(v.Reason)}
			}
			row.Cells = append(row.Cells, c)
		}
		out = append(out, row)
	}
	return out
}

// phaseSections groups the measured phases by name, in plan order, each
// with one column per repeat, the spread across repeats, and the charts
// of each repeat of a judged phase with the budgets (by phase name) drawn
// on them.
func phaseSections(red func(string) string, phases []*engine.PhaseResult, across []engine.PhaseSpread, budgets map[string][]budget) []phaseSection {
	var order []string
	by := map[string][]*engine.PhaseResult{}
	for _, pr := range phases {
		if pr == nil || pr.Phase == nil || pr.Summary == nil {
			continue
		}
		if _, ok := by[pr.Phase.Name]; !ok {
			order = append(order, pr.Phase.Name)
		}
		by[pr.Phase.Name] = append(by[pr.Phase.Name], pr)
	}
	stepsByPhase := map[string]phaseSteps{}
	for _, ps := range stepsAcross(&engine.Result{Phases: phases}) {
		stepsByPhase[ps.Phase] = ps
	}
	var out []phaseSection
	for _, name := range order {
		prs := by[name]
		p := prs[0].Phase
		sec := phaseSection{Name: red(name), Meta: phaseMeta(p), Warmup: p.Warmup}
		if slices.ContainsFunc(prs, isFlow) {
			sec.Meta += " · flows: the figures below count iterations, each step's are in the flow steps table"
		}
		var spread *engine.PhaseSpread
		for i := range across {
			if across[i].Phase == name {
				sec.spread = &across[i]
				if len(across[i].Repeats) >= 2 {
					spread = &across[i]
				}
			}
		}
		sec.Across = spread != nil
		for _, pr := range prs {
			col := fmt.Sprintf("repeat %d", pr.Repeat)
			if pr.Interrupted {
				col += " (interrupted)"
			}
			sec.Columns = append(sec.Columns, col)
		}
		sec.Span = 1 + len(sec.Columns)
		if sec.Across {
			sec.Span++
		}
		sec.Rows = phaseRows(prs, spread)
		for i := range sec.Rows {
			for j := range sec.Rows[i].Cells {
				sec.Rows[i].Cells[j] = red(sec.Rows[i].Cells[j])
			}
		}
		sec.stepTable(red, prs, stepsByPhase)
		seen := map[string]bool{}
		for _, pr := range prs {
			for _, code := range slices.Sorted(maps.Keys(pr.Summary.ErrorExamples)) {
				if !seen[code] {
					seen[code] = true
					sec.Examples = append(sec.Examples, kv{red(code), red(pr.Summary.ErrorExamples[code])})
				}
			}
		}
		if !p.Warmup {
			for i, cs := range phaseCharts(prs, budgets[name], red) {
				sec.Charts = append(sec.Charts, repeatCharts{Title: red(chartTitle(prs[i])), Charts: cs})
			}
		}
		out = append(out, sec)
	}
	return out
}

// stepTable fills sec's flow steps table from the phase's repeats prs:
// one row per (repeat, step) with stepFigures, then, when the phase
// finished in several repeats (across), one row per step of median
// [min – max]. Nothing for a phase without flows.
func (sec *phaseSection) stepTable(red func(string) string, prs []*engine.PhaseResult, across map[string]phaseSteps) {
	if !slices.ContainsFunc(prs, isFlow) {
		return
	}
	sec.StepsNote = stepsNote
	for _, f := range stepFigures {
		title := f.title
		if f.unit == metric.PerSecond {
			title += " (ok /s)"
		}
		sec.StepColumns = append(sec.StepColumns, title)
	}
	for _, pr := range prs {
		rep := fmt.Sprintf("repeat %d", pr.Repeat)
		if pr.Interrupted {
			rep += " (interrupted)"
		}
		for _, st := range pr.Steps {
			row := stepRowHTML{Repeat: rep, Flow: red(st.Flow), Name: red(st.Name)}
			for _, f := range stepFigures {
				row.Cells = append(row.Cells, headCell{Value: f.cell(st.Summary)})
			}
			sec.StepRows = append(sec.StepRows, row)
		}
	}
	ps, ok := across[prs[0].Phase.Name]
	if !ok || len(ps.Repeats) < 2 {
		return
	}
	for _, st := range ps.Steps {
		row := stepRowHTML{Repeat: fmt.Sprintf("median [min – max] of %d", len(ps.Repeats)), Flow: red(st.Flow), Name: red(st.Name)}
		for i, f := range stepFigures {
			v, rng := f.spreadParts(st.Figures[i], st.Fewest)
			row.Cells = append(row.Cells, headCell{Value: v, Range: rng})
		}
		sec.StepRows = append(sec.StepRows, row)
	}
}

// headlineOf is a judged phase's headline numbers from the summary of its
// repeats (engine.Across): throughput, p95, p99 and errors, each the value
// of the one repeat or the median [min – max] of N (the worse middle
// value of an even N).
func headlineOf(name string, sp *engine.PhaseSpread) headline {
	h := headline{Phase: name}
	show := func(key string, format func(float64) string) {
		c := headCell{Value: "n/a"}
		var m engine.Spread
		ok := false
		if sp != nil {
			m, ok = sp.Metrics[key]
		}
		if ok {
			c.Value = format(m.Median)
			if m.N >= 2 {
				c.Range = fmt.Sprintf("[%s – %s] of %d", format(m.Min), format(m.Max), m.N)
			}
		}
		h.Cells = append(h.Cells, c)
	}
	ms := func(v float64) string { return dur(time.Duration(v * float64(time.Millisecond))) }
	show("throughput", func(v float64) string { return rate(v) + "/s" })
	show("p95_ms", ms)
	show("p99_ms", ms)
	show("errors", func(v float64) string { return fmt.Sprintf("%g", v) })
	return h
}

func phaseMeta(p *engine.PhasePlan) string {
	var parts []string
	parts = append(parts, string(p.Model)+" model")
	switch {
	case p.Model == engine.Open:
		parts = append(parts, fmt.Sprintf("%d connection(s) × in-flight %d", p.Connections, p.Inflight))
		if p.Arrivals != "" {
			parts = append(parts, p.Arrivals+" arrivals")
		}
		if p.DispatchWindow > 0 {
			parts = append(parts, "dispatched in groups within "+dur(p.DispatchWindow)+p.DispatchDefaultNote()+" (sent up to that early; a request sent early is timed from its send)")
		}
	default:
		parts = append(parts, fmt.Sprintf("%d connection(s)", p.Connections))
	}
	if p.Duration > 0 {
		parts = append(parts, p.Duration.String())
	}
	if p.Requests > 0 {
		parts = append(parts, fmt.Sprintf("%d requests", p.Requests))
	}
	if p.Warmup {
		parts = append(parts, "warmup (recorded apart, never judged; no charts)")
	}
	return strings.Join(parts, " · ")
}

func phaseRows(prs []*engine.PhaseResult, spread *engine.PhaseSpread) []metricRow {
	var rows []metricRow
	group := func(label string) { rows = append(rows, metricRow{Label: label, Group: true}) }
	show := func(metric string, format func(float64) string) string {
		if spread == nil {
			return ""
		}
		m, ok := spread.Metrics[metric]
		if !ok {
			return "n/a"
		}
		return fmt.Sprintf("%s [%s – %s]", format(m.Median), format(m.Min), format(m.Max))
	}
	row := func(label, metric string, format func(float64) string, cell func(*engine.PhaseResult) string) {
		mr := metricRow{Label: label}
		if metric != "" {
			mr.Across = show(metric, format)
		}
		for _, pr := range prs {
			mr.Cells = append(mr.Cells, cell(pr))
		}
		rows = append(rows, mr)
	}
	msv := func(v float64) string { return dur(time.Duration(v * float64(time.Millisecond))) }
	num := func(v float64) string { return fmt.Sprintf("%g", v) }
	pctv := func(v float64) string { return fmt.Sprintf("%.2f %%", 100*v) }
	l2 := func(v float64) string { return fmt.Sprintf("%.2f", v) }

	open := prs[0].Phase.Model == engine.Open
	group("load")
	row("elapsed (+ drain)", "", nil, func(pr *engine.PhaseResult) string {
		s := pr.Summary.Elapsed.Round(time.Millisecond).String()
		if d := pr.Summary.Drain(); d > 0 && !pr.Interrupted {
			s += " + " + d.Round(time.Millisecond).String()
		}
		return s
	})
	if open {
		row("offered /s", "", nil, func(pr *engine.PhaseResult) string {
			off, _ := engine.MeasuredOfferedRate(pr)
			s := rate(off)
			if pr.Phase.Arrivals == "poisson" {
				s += fmt.Sprintf(" (planned %s)", rate(pr.Phase.PlannedOfferedRate()))
			}
			return s
		})
	}
	row("achieved /s", "achieved_rate", rate, func(pr *engine.PhaseResult) string { return rate(pr.Summary.AchievedRate()) })
	row("arrivals = requests + dropped + left over unsent + cancelled unsent", "", nil, func(pr *engine.PhaseResult) string {
		s := pr.Summary
		return fmt.Sprintf("%d = %d + %d + %d + %d", s.Arrivals, s.Requests, s.Dropped, s.LeftOverUnsent, s.CancelledUnsent)
	})
	row("connections requested / established", "", nil, func(pr *engine.PhaseResult) string {
		return fmt.Sprintf("%d / %d", pr.ConnectionsRequested, pr.ConnectionsEstablished)
	})
	group("throughput")
	row("throughput (ok /s)", "throughput", rate, func(pr *engine.PhaseResult) string { return rate(pr.Summary.Throughput()) })
	okOf := "ok of requests"
	if slices.ContainsFunc(prs, isFlow) {
		okOf = "ok of iterations"
	}
	row(okOf, "", nil, func(pr *engine.PhaseResult) string {
		return fmt.Sprintf("%d of %d", pr.Summary.OK, pr.Summary.Requests)
	})
	if slices.ContainsFunc(prs, isFlow) {
		group("response time of the iterations (ok ones; from the intended start to the last step's completion, think times included; nearest rank)")
	} else {
		group("response time (ok requests, nearest rank)")
	}
	for _, d := range responseStats() {
		row(statTitle(d), d.Across, msv, func(pr *engine.PhaseResult) string { return statCell(d, pr.MetricPhase()) })
	}
	row("samples", "", nil, func(pr *engine.PhaseResult) string { return fmt.Sprint(pr.Summary.Response.Count()) })
	group("service time (ok requests)")
	for _, q := range []struct {
		label string
		p     float64
	}{{"p50", 50}, {"p99", 99}} {
		row(q.label, "", nil, func(pr *engine.PhaseResult) string { return pctCell(&pr.Summary.Service, q.p) })
	}
	row("max", "", nil, func(pr *engine.PhaseResult) string {
		v, ok := pr.Summary.Service.Max()
		return durOK(v, ok)
	})
	if slices.ContainsFunc(prs, func(pr *engine.PhaseResult) bool { return pr.Summary.Corrected != nil }) {
		row("CO-corrected p99", "", nil, func(pr *engine.PhaseResult) string { return pctCell(pr.Summary.Corrected, 99) })
	}
	if open {
		group("dispatch (actual send − intended start)")
		row("send lag p99 (late, or waiting for a slot)", "", nil, func(pr *engine.PhaseResult) string { return pctCell(&pr.Summary.SendLag, 99) })
		row("send lag max", "", nil, func(pr *engine.PhaseResult) string {
			v, ok := pr.Summary.SendLag.Max()
			return durOK(v, ok)
		})
		row("sent early by the dispatch window (count, max)", "", nil, func(pr *engine.PhaseResult) string {
			s := pr.Summary
			if s.SendEarly.Count() == 0 {
				return fmt.Sprintf("0 of %d", s.Requests)
			}
			v, _ := s.SendEarly.Max()
			return fmt.Sprintf("%d of %d, by at most %s", s.SendEarly.Count(), s.Requests, dur(v))
		})
	}
	group("errors")
	row("errors", "errors", num, func(pr *engine.PhaseResult) string { return fmt.Sprint(pr.Summary.Errors) })
	row("error rate", "error_rate", pctv, func(pr *engine.PhaseResult) string {
		v, ok := pr.Summary.ErrorRate()
		if !ok {
			return "n/a"
		}
		return pctv(v)
	})
	row("by class", "", nil, func(pr *engine.PhaseResult) string { return orNone(counts(pr.Summary.ErrorsByClass)) })
	row("by code", "", nil, func(pr *engine.PhaseResult) string { return orNone(counts(pr.Summary.ErrorsByCode)) })
	row("dropped", "dropped", num, func(pr *engine.PhaseResult) string { return fmt.Sprint(pr.Summary.Dropped) })
	row("left over (censored)", "", nil, func(pr *engine.PhaseResult) string {
		if n := pr.Summary.LeftOver(); n > 0 {
			return fmt.Sprintf("%d (%s)", n, leftOverHow(pr.Summary))
		}
		return "0"
	})
	row("cancelled (sent, interrupted)", "", nil, func(pr *engine.PhaseResult) string {
		return fmt.Sprint(interruptCancelled(pr.Summary) - pr.Summary.CancelledUnsent)
	})
	group("little's law")
	row("λ·W", "little_l", l2, func(pr *engine.PhaseResult) string { return littleL(engine.Little(pr)) })
	row("against", "", nil, func(pr *engine.PhaseResult) string { return engine.Little(pr).Against })
	group("client and target")
	row("client cpu (of a core) / GC pause max", "", nil, func(pr *engine.PhaseResult) string {
		return fmt.Sprintf("%.1f %% / %s", 100*pr.ClientCPU, pr.GCPauseMax.Round(time.Microsecond))
	})
	row("carried by", "", nil, func(pr *engine.PhaseResult) string {
		if pr.EventLoops > 0 {
			return fmt.Sprintf("%d event loop(s)", pr.EventLoops)
		}
		return "a goroutine per connection"
	})
	row("target cpu / busiest thread / rss", "", nil, func(pr *engine.PhaseResult) string {
		if t := pr.Target; t != nil {
			return fmt.Sprintf("%.1f %% / %.1f %% / %.1f MiB", 100*t.CPU, 100*t.CPUMaxThread, float64(t.RSS)/(1<<20))
		}
		if pr.TargetErr != "" {
			return "unavailable: " + pr.TargetErr
		}
		return "not measured"
	})
	return rows
}

// pctCell is a percentile, starred when there are too few samples for it
// to mean much (as the console marks it).
func pctCell(d *measure.Dist, p float64) string {
	if d == nil || d.Count() == 0 {
		return "n/a"
	}
	v, _ := d.Percentile(p)
	s := dur(v)
	if d.Count() < metric.MinSamples(p) {
		s += "*"
	}
	return s
}

// responseStats are the catalogue's statistics of the response time that
// the repeat summary spreads (p50 … p99.9, max, mean), in catalogue order.
func responseStats() []metric.Def {
	var out []metric.Def
	for _, d := range metric.All() {
		if d.Dist == metric.Response && d.Across != "" {
			out = append(out, d)
		}
	}
	return out
}

// statTitle is how reports title a latency statistic: p50, p99.9, max.
func statTitle(d metric.Def) string {
	if d.P > 0 {
		return rules.PercentileName(d.P)
	}
	_, name := d.Group()
	return name
}

// statCell renders latency statistic d of ph: its duration, "*" when it
// rests on fewer samples than it needs (Def.MinSamples), "n/a" without.
func statCell(d metric.Def, ph *metric.Phase) string {
	v, ok := d.Read(ph)
	if !ok {
		return "n/a"
	}
	s := dur(time.Duration(v))
	if d.Dist.Of(ph).Count() < d.MinSamples() {
		s += "*"
	}
	return s
}

func durOK(v time.Duration, ok bool) string {
	if !ok {
		return "n/a"
	}
	return dur(v)
}

var htmlPage = template.Must(template.New("html").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>runner · {{.Title}}</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",sans-serif;margin:0;padding:16px 24px;color:#222;background:#fafafa}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}
.head{display:flex;gap:24px;align-items:flex-start;flex-wrap:wrap}
.verdictbox{display:flex;gap:16px;align-items:flex-start;flex-wrap:wrap}
table.headline{margin:0}
{{.UPlotCSS}}
.verdict{display:inline-block;font-size:28px;font-weight:700;padding:8px 20px;border-radius:6px;color:#fff;letter-spacing:1px}
.verdict.pass{background:#2e7d32;color:#fff}.verdict.fail{background:#c62828;color:#fff}.verdict.inconclusive{background:#ef6c00;color:#fff}
.note{color:#555;margin-top:4px;max-width:60ch}
.meta{color:#555;margin-bottom:4px}
.caption{font-size:12px;color:#555;margin:10px 0 0;max-width:140ch}
table{border-collapse:collapse;background:#fff;margin:4px 0 8px}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.steps td:first-child{white-space:nowrap}
.scroll{overflow-x:auto;max-width:100%}
table.phase td.num{white-space:normal}
tr.group td{background:#f6f6f6;font-weight:600;color:#444}
table.kv th{width:9em}
.pass{color:#2e7d32;font-weight:600}.fail{color:#c62828;font-weight:600}.inconclusive{color:#ef6c00;font-weight:600}.none{color:#999}
.obs{font-family:ui-monospace,"Liberation Mono",monospace;font-size:12px;color:#333}
.reason{font-size:12px;color:#777}
code{font-family:ui-monospace,"Liberation Mono",monospace;font-size:13px}
.charts{display:grid;grid-template-columns:repeat(3,minmax(0,1fr));gap:10px;align-items:start;margin-bottom:14px}
figure.chart{margin:0;background:#fff;border:1px solid #e4e4e4;padding:6px;min-width:0}
figure.chart figcaption{font-size:13px;font-weight:600;overflow-wrap:anywhere;white-space:normal}
.budget{font-size:12px;font-weight:400;color:#c62828}
.plot{min-height:120px;color:#777;font-size:12px}
.plot .uplot{width:100%}
.u-legend{font-size:12px}
.headline th,.headline td{font-size:13px}
details.warmups>summary{cursor:pointer;font-size:18px;font-weight:600;margin:28px 0 8px}
li.invalid{color:#c62828}
footer{margin-top:30px;color:#888;font-size:12px}
@media (max-width:1000px){.charts{grid-template-columns:1fr}}
</style>
</head>
<body>
<div class="head">
<div>
<h1>{{.Scenario}}</h1>
<div>run <code>{{.RunID}}</code></div>
</div>
<div class="verdictbox">
<div>
<div class="verdict {{.VClass}}" id="verdict">{{.Verdict}}</div>
{{with .VNote}}<div class="note">{{.}}</div>{{end}}
{{with .WarningNote}}<div class="note">{{.}}</div>{{end}}
</div>
{{with .Headline}}<table class="headline" id="headline">
<tr><th>phase</th><th>throughput (ok)</th><th>p95</th><th>p99</th><th>errors</th></tr>
{{range .}}<tr><td>{{.Phase}}</td>{{range .Cells}}<td class="num"><b>{{.Value}}</b>{{with .Range}}<div class="reason">{{.}}</div>{{end}}</td>{{end}}</tr>
{{end}}</table>{{end}}
</div>
</div>
<table class="kv">
{{range .Facts}}<tr><th>{{.K}}</th><td>{{.V}}</td></tr>
{{end}}</table>
{{with .Env}}<h3>environment</h3>
<table class="kv">
{{range .}}<tr><th>{{.K}}</th><td>{{.V}}</td></tr>
{{end}}</table>{{end}}
{{if .Judged}}
<h2>rules</h2>
{{if or .Rules .Expect}}{{$reps := .Repeats}}
<table>
<tr><th>rule</th><th>phase</th><th>status</th>{{range $reps}}<th>repeat {{.}}: observed</th>{{end}}</tr>
{{range .Rules}}{{template "rule" .}}{{end}}
{{if .Expect}}<tr class="group"><td colspan="{{.RuleSpan}}">reconciliation (server counters vs client counts)</td></tr>
{{range .Expect}}{{template "rule" .}}{{end}}{{end}}
</table>
{{else}}<p>No rules: the verdict only says whether the run completed.</p>{{end}}
{{end}}
{{range .Phases}}{{template "phase" .}}{{end}}
{{with .Warmups}}<details class="warmups"><summary>warmup phases (recorded apart, never judged)</summary>
{{range .}}{{template "phase" .}}{{end}}</details>{{end}}
{{if .Warnings}}
<h2>warnings</h2>
<ul>
{{range .Warnings}}<li class="{{.Class}}"><code>{{.Code}}</code>{{with .Where}} [{{.}}]{{end}}: {{.Message}}</li>
{{end}}</ul>
{{end}}
<footer>runner HTML report · self-contained: inline CSS, scripts and data (charts by uPlot, MIT licence), nothing fetched.</footer>
<script type="application/json" id="runner-charts">{{.Charts}}</script>
<script>{{.UPlotJS}}</script>
<script>{{.ReportJS}}</script>
</body>
</html>
{{define "phase"}}
<h2>phase {{.Name}}</h2>
<div class="meta">{{.Meta}}</div>
<div class="scroll"><table class="phase">
<tr><th>metric</th>{{range .Columns}}<th>{{.}}</th>{{end}}{{if .Across}}<th>median [min – max] across repeats</th>{{end}}</tr>
{{$across := .Across}}{{$span := .Span}}
{{range .Rows}}{{if .Group}}<tr class="group"><td colspan="{{$span}}">{{.Label}}</td></tr>
{{else}}<tr><td>{{.Label}}</td>{{range .Cells}}<td class="num">{{.}}</td>{{end}}{{if $across}}<td class="num">{{.Across}}</td>{{end}}</tr>
{{end}}{{end}}</table></div>
<div class="reason">* too few samples for this percentile to mean much (fewer than 10/(1−p)). Percentiles are never averaged across repeats; the median of an even count is the worse middle value.</div>
{{if .StepRows}}<h3>flow steps</h3>
<div class="caption">{{.StepsNote}}</div>
<table class="steps">
<tr><th>repeat</th><th>flow</th><th>step</th>{{range .StepColumns}}<th>{{.}}</th>{{end}}</tr>
{{range .StepRows}}<tr><td>{{.Repeat}}</td><td>{{.Flow}}</td><td>{{.Name}}</td>{{range .Cells}}<td class="num">{{.Value}}{{with .Range}}<div class="reason">{{.}}</div>{{end}}</td>{{end}}</tr>
{{end}}</table>{{end}}
{{with .Examples}}<h3>error examples</h3>
<table>{{range .}}<tr><th><code>{{.K}}</code></th><td>{{.V}}</td></tr>{{end}}</table>{{end}}
{{if .Charts}}<p class="caption">Per repeat: latency by percentile (nearest rank, x on a log scale of 1/(1−p); response time from the intended start, service time from the send, of the ok requests); the response time's p50, p90 and p99 per interval, when recorded; ok responses per second; the mean and max response time of each second (the per-second timeline records counts, the sum and the max of response times: no percentiles); errors per second; and the requests in the system per second estimated by Little's law from the timeline (Σ response time / 1 s of the ok responses completed in it; the timeline records no in-flight count) against the phase's exact mean in-flight; for a phase that ran flows, each step's response time by percentile (from when the step came due; the charts above are of its iterations). Seconds are by completion time; the dashed grey vertical line is the end of the phase's own length, completions after it came in the drain grace. Dashed red lines are the rules' limits. Charts of one kind share their y scale across repeats. Hover for values, drag to zoom, double-click to reset.</p>
<noscript><p class="caption">The charts need JavaScript; the table above holds their numbers.</p></noscript>{{end}}
{{range .Charts}}
<h3>{{.Title}}</h3>
<div class="charts">{{range .Charts}}<figure class="chart"><figcaption>{{.Title}}{{range .Budgets}} <span class="budget">limit {{.Label}}</span>{{end}}</figcaption><div class="plot" data-chart="{{.ID}}">chart {{.ID}}: drawn by JavaScript</div></figure>{{end}}</div>
{{end}}
{{end}}
{{define "rule"}}<tr><td><code>{{.Rule}}</code>{{with .Reason}}<div class="reason">{{.}}</div>{{end}}</td><td>{{.Phase}}</td><td class="{{.Class}}">{{.Status}}</td>{{range .Cells}}<td><span class="{{.Class}}">{{.Status}}</span> <span class="obs">{{.Observed}}</span>{{with .Reason}}<div class="reason">{{.}}</div>{{end}}</td>{{end}}</tr>
{{end}}`))
