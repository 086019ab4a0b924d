package reports

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/metric"
	"github.com/runner-dev/runner/engine/rules"
	"github.com/runner-dev/runner/internal/clock"
)

// Console writes the human summary of a run: per (repeat, phase) the load,
// throughput, latency (response and service time with sample counts),
// errors by class and code, connections, Little's law and client usage,
// and for a phase that ran flows (whose figures then count iterations)
// a table of its steps (requests, ok, errors, p50, p95, p99, max of the
// response time from when the step came due, throughput); then the
// spread across repeats (each flow step's under its phase's), each rule
// with its observed value per repeat, the warnings and the verdict. With
// detail false only the rules, warnings and verdict are written.
func Console(w io.Writer, r *Run, detail bool) {
	cw := &consoleWriter{w: w, r: r}
	cw.header()
	if detail && r.Result != nil {
		for _, pr := range r.Result.Phases {
			cw.phase(pr)
		}
		cw.acrossRepeats()
	}
	cw.rules()
	cw.warnings()
	cw.verdict()
}

type consoleWriter struct {
	w io.Writer
	r *Run
}

func (c *consoleWriter) f(format string, a ...any) {
	fmt.Fprint(c.w, c.r.redact(fmt.Sprintf(format, a...)))
}

func (c *consoleWriter) header() {
	r := c.r
	c.f("runner · %s · run %s\n", r.Scenario.Name, r.RunID)
	if r.Target != "" {
		c.f("target   %s", r.Target)
		if r.TargetSpawned != "" {
			c.f(" (spawned: %s)", strings.TrimSpace(r.TargetSpawned))
		}
		if r.Insecure {
			c.f(" [TLS certificate verification OFF]")
		}
		c.f("\n")
	}
	if r.Plan != nil {
		c.f("plan     %d repeat(s) × %d phase(s)\n", r.Plan.Repeats, len(r.Plan.Phases))
		for _, p := range r.Plan.Phases {
			if t := p.DispatchText(); t != "" {
				c.f("dispatch phase %s: %s\n", p.Name, t)
			}
		}
	}
	if s := r.Segment; s != nil {
		c.f("segment  %d/%d (its share of the connections and arrivals; plan %.12s; from %s)", s.K, s.N, s.PlanHash, orNone(s.Source))
		if s.StartAt != nil {
			c.f(", first phase at %s", s.StartAt.Format(time.RFC3339Nano))
		}
		c.f("; clock %s\n", clockText(s.Clock))
	}
	if m := r.Merged; m != nil {
		c.f("merged   %d segments of plan %.12s:", m.N, m.PlanHash)
		for _, p := range m.Segments {
			c.f(" %s", p.File)
		}
		c.f("\n")
	}
	if cores := r.Env.CoresText(); cores != "" {
		c.f("machine  %s\n", cores)
	}
	if t := r.Env.Timer; t != nil {
		precise := dur(t.Precise)
		if !t.PreciseAvailable {
			precise = "unavailable (no timerfd; the pacer uses Go timers)"
		}
		c.f("timer    a %s sleep overshoots by (median of %d) %s on a Go timer, %s on the precise clock\n", dur(t.Sleep), t.Samples, dur(t.Timer), precise)
	}
}

// earlyLine is ": " and the distribution of how early requests were sent,
// or "" when none was.
func earlyLine(d *measure.Dist) string {
	if d.Count() == 0 {
		return ""
	}
	return ": " + distLine(d)
}

// clockText says how well a clock was synchronised.
func clockText(s clock.Sync) string {
	switch {
	case s.Err != "":
		return "state unknown (" + s.Err + ")"
	case s.Synchronised:
		return fmt.Sprintf("synchronised (error at most %s, estimated %s)", time.Duration(s.MaxErrorMicros)*time.Microsecond, time.Duration(s.EstErrorMicros)*time.Microsecond)
	}
	return "NOT synchronised (no time daemon disciplines it: segments on other machines may start apart)"
}

func (c *consoleWriter) phase(pr *engine.PhaseResult) {
	s, p := pr.Summary, pr.Phase
	title := fmt.Sprintf("repeat %d · %s · %s model · %s", pr.Repeat, p.Name, p.Model, s.Elapsed.Round(time.Millisecond))
	if d := s.Drain().Round(time.Millisecond); d > 0 && !pr.Interrupted { // under 0.5 ms reads as "drain 0s"
		title += fmt.Sprintf(" + drain %s", d)
	}
	if p.Warmup {
		title += " · warmup (recorded apart, never judged)"
	}
	if pr.Timetabled {
		title += fmt.Sprintf(" · started %s after its instant", dur(pr.StartLag))
	}
	if pr.Interrupted {
		title += " · INTERRUPTED"
	}
	c.f("\n%s\n", title)
	what := counted(pr)
	if isFlow(pr) {
		c.f("  flow          figures per iteration (an arrival runs one flow: intended start to the last step's completion, think times included); per step below\n")
	}
	switch p.Model {
	case engine.Open:
		unsent := ""
		if s.LeftOverUnsent > 0 {
			unsent += fmt.Sprintf(" + left over unsent %d", s.LeftOverUnsent)
		}
		if s.CancelledUnsent > 0 {
			unsent += fmt.Sprintf(" + cancelled before sending %d", s.CancelledUnsent)
		}
		sentOver := ""
		if w := s.SendWindow(); w > s.Elapsed {
			sentOver = fmt.Sprintf(" (sent over %s)", w.Round(time.Millisecond))
		}
		off, _ := engine.MeasuredOfferedRate(pr)
		planned := ""
		if p.Arrivals == "poisson" {
			planned = fmt.Sprintf(" (Poisson draw; planned %s/s)", rate(p.PlannedOfferedRate()))
		}
		c.f("  load          offered %s/s%s, achieved %s/s%s; arrivals %d = %s %d + dropped %d%s; %d connection(s) × in-flight %d\n",
			rate(off), planned, rate(s.AchievedRate()), sentOver, s.Arrivals, what, s.Requests, s.Dropped, unsent, pr.ConnectionsRequested, p.Inflight)
	default:
		c.f("  load          %d connection(s), achieved %s/s, %d %s\n", pr.ConnectionsRequested, rate(s.AchievedRate()), s.Requests, what)
	}
	c.f("  throughput    %s/s (%d ok of %d %s, completed over %s; failures never count)\n", rate(s.Throughput()), s.OK, s.Requests, what, s.CompletionWindow().Round(time.Millisecond))
	c.f("  response time %s%s\n", distLine(&s.Response), rulePercentilesLine(&s.Response, c.r.Plan))
	c.f("  service time  %s%s\n", distLine(&s.Service), rulePercentilesLine(&s.Service, c.r.Plan))
	if p.Model == engine.Open {
		c.f("  send lag      %s\n", distLine(&s.SendLag))
		if p.DispatchWindow > 0 || s.SendEarly.Count() > 0 {
			c.f("  sent early    %d of %d %s by the dispatch window%s\n", s.SendEarly.Count(), s.Requests, what, earlyLine(&s.SendEarly))
		}
	}
	if s.Corrected.Count() > 0 {
		c.f("  CO-corrected  %s%s\n", distLine(s.Corrected), rulePercentilesLine(s.Corrected, c.r.Plan))
	}
	er, _ := s.ErrorRate()
	c.f("  errors        %d (%.2f %%)%s\n", s.Errors, 100*er, breakdown(s))
	for _, code := range slices.Sorted(maps.Keys(s.ErrorExamples)) {
		c.f("    e.g. %-8s %s\n", code+":", s.ErrorExamples[code])
	}
	if n := s.LeftOver(); n > 0 {
		lo, _ := s.LeftOverBound.Min()
		med, _ := s.LeftOverBound.Percentile(50)
		c.f("  left over     %d arrivals (%d never sent by the drain's bound, the timeout %s after the phase's end; %s): response times censored, each ≥ its wait so far (≥ %s, median ≥ %s); in no latency figure\n",
			n, s.LeftOverUnsent, dur(p.Grace), engine.LeftOverCut(s), dur(lo), dur(med))
	}
	if n := interruptCancelled(s) - s.CancelledUnsent; n > 0 {
		if th := s.InterruptedThinking; th > 0 {
			c.f("  cancelled     %d sent %s (when the run was interrupted: %d with a request in flight, %d between steps (thinking); not target errors)\n", n, what, n-th, th)
		} else {
			c.f("  cancelled     %d sent %s (in flight when the run was interrupted; not target errors)\n", n, what)
		}
	}
	if s.Late+s.UnknownID+s.DuplicateID > 0 || len(s.ClosesByCode) > 0 {
		// Counted apart: no request waited for them.
		server, client := map[string]int64{}, map[string]int64{}
		for code, n := range s.ClosesByCode {
			if engine.ClosedAfterBadFrame(code) {
				client[code] = n
			} else {
				server[code] = n
			}
		}
		c.f("  unsolicited   late replies %d, unknown id %d, duplicate id %d; server closes %s",
			s.Late, s.UnknownID, s.DuplicateID, orNone(counts(server)))
		if len(client) > 0 {
			c.f("; client closed after a bad frame %s", counts(client))
		}
		c.f("\n")
	}
	c.f("  connections   %d requested, %d established; in this phase %d opened, %d re-dialled", pr.ConnectionsRequested, pr.ConnectionsEstablished, s.ConnectionsOpened, s.Reconnects)
	if s.ConnectFailures > 0 {
		c.f(", %d failed to connect", s.ConnectFailures)
	}
	if s.GoAwayRetries > 0 {
		c.f(", %d requests sent again after a GOAWAY", s.GoAwayRetries)
	}
	c.f("\n")
	lc := engine.Little(pr)
	c.f("  little's law  λ·W = %s vs %s, over %s\n", littleL(lc), lc.Against, s.CompletionWindow().Round(time.Millisecond))
	who := ""
	if m := c.r.Merged; m != nil {
		who = fmt.Sprintf("(busiest of %d segments) ", m.N)
	}
	c.f("  client        %scpu %.1f %% of a core, longest GC pause %s", who, 100*pr.ClientCPU, pr.GCPauseMax.Round(time.Microsecond))
	if p.Model == engine.Open {
		c.f(", pacer lateness max %s", pr.LatenessMax.Round(time.Microsecond))
	}
	if n := pr.EventLoops; n > 0 {
		c.f(", %d event loop(s)", n)
	}
	if m := pr.Machine; m != nil {
		c.f("; machine %.2f cores busy", m.Busy)
		if m.Steal > 0.005 {
			c.f(" (steal %.2f)", m.Steal)
		}
	}
	c.f("\n")
	if t := pr.Target; t != nil {
		c.f("  target        cpu %.1f %% of the machine, busiest thread %.1f %% of a core, rss %.1f MiB\n", 100*t.CPU, 100*t.CPUMaxThread, float64(t.RSS)/(1<<20))
	} else if pr.TargetErr != "" {
		c.f("  target        usage unavailable: %s\n", pr.TargetErr)
	}
	if pr.Server != nil {
		// The counters the rules read by name, or all when they name none
		// (an exporter has a hundred; the JSON result holds every one).
		keys := c.r.Plan.ServerCounters()
		if keys == nil {
			keys = slices.Sorted(maps.Keys(pr.Server))
		}
		var parts []string
		for _, k := range keys {
			if _, ok := pr.Server[k]; !ok {
				continue // the rule says so: no such counter
			}
			if u, ok := pr.ServerUncertain[k]; ok {
				// A merge of segments whose readings a dial-in came between.
				parts = append(parts, fmt.Sprintf("%s=%g±%g", k, pr.Server[k], u))
				continue
			}
			parts = append(parts, fmt.Sprintf("%s=%g", k, pr.Server[k]))
		}
		if len(parts) == 0 {
			parts = append(parts, fmt.Sprintf("none of the counters the rules read (%d fetched)", len(pr.Server)))
		}
		if pr.Fetches > 0 {
			// Our own fetches inside the deltas (rules subtract fetches).
			parts = append(parts, fmt.Sprintf("· fetches %d", pr.Fetches))
		}
		c.f("  server Δ      %s\n", strings.Join(parts, " "))
	} else if pr.ServerErr != "" {
		c.f("  server Δ      unavailable: %s\n", pr.ServerErr)
	}
	c.steps(pr)
}

// steps prints the per-step table of a phase that ran flows: per step
// its requests, ok, errors, response time percentiles and max (from when
// the step came due, "*" as distLine marks them) and throughput.
func (c *consoleWriter) steps(pr *engine.PhaseResult) {
	if !isFlow(pr) {
		return
	}
	c.f("  steps         response time from when the step came due (ok responses)\n")
	c.f("    %-16s %-12s", "step", "flow")
	for _, f := range stepFigures {
		c.f(" %10s", f.title)
	}
	c.f("\n")
	for _, st := range pr.Steps {
		c.f("    %-16s %-12s", st.Name, st.Flow)
		for _, f := range stepFigures {
			c.f(" %10s", f.cell(st.Summary))
		}
		c.f("\n")
	}
}

// littleL renders λ·W of lc with two decimals and, when it counts no
// requests (a phase that ran flows), what it counts in brackets.
func littleL(lc engine.LittleCheck) string {
	if lc.Counts == "" {
		return fmt.Sprintf("%.2f", lc.L)
	}
	return fmt.Sprintf("%.2f (%s)", lc.L, lc.Counts)
}

// distLine renders a distribution: sample count, nearest-rank percentiles,
// max and mean; "n/a (0 samples)" when empty.
func distLine(d *measure.Dist) string {
	if d == nil || d.Count() == 0 {
		return "n/a (0 samples)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "n=%d", d.Count())
	for _, p := range []struct {
		name string
		q    float64
	}{{"p50", 50}, {"p90", 90}, {"p95", 95}, {"p99", 99}, {"p99.9", 99.9}} {
		v, _ := d.Percentile(p.q)
		fmt.Fprintf(&b, "  %s %s%s", p.name, dur(v), thinMark(d, p.q))
	}
	mx, _ := d.Max()
	mean, _ := d.Mean()
	fmt.Fprintf(&b, "  max %s  mean %s", dur(mx), dur(mean))
	return b.String()
}

// rulePercentilesLine renders the percentiles of d that the plan's rules
// read beyond distLine's (p75, p99.99: rules.ExtraPercentiles), marked
// "*" like distLine's when d has fewer than 10/(1 − q/100) samples;
// "" when the rules read none or d is empty.
func rulePercentilesLine(d *measure.Dist, pl *engine.Plan) string {
	if pl == nil || d == nil || d.Count() == 0 {
		return ""
	}
	var rs []*rules.Rule
	for _, sr := range slices.Concat(pl.Rules, pl.Expect) {
		rs = append(rs, sr.Rule)
	}
	var b strings.Builder
	for _, q := range rules.ExtraPercentiles(rs) {
		v, _ := d.Percentile(q)
		fmt.Fprintf(&b, "  %s %s%s", rules.PercentileName(q), dur(v), thinMark(d, q))
	}
	return b.String()
}

// thinMark is "*" when d has too few samples for percentile q to mean
// much (fewer than metric.MinSamples(q), 10/(1 − q/100)), else "".
func thinMark(d *measure.Dist, q float64) string {
	if d.Count() < metric.MinSamples(q) {
		return "*"
	}
	return ""
}

// dur prints a duration with 3 significant decimals in its natural unit.
func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3fms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.1fµs", float64(d)/1e3)
	}
}

func breakdown(s *measure.Summary) string {
	if s.Errors == 0 {
		return ""
	}
	return "  by class: " + counts(s.ErrorsByClass) + "  by code: " + counts(s.ErrorsByCode)
}

// interruptCancelled is the part of s's cancelled arrivals that an
// interrupt cancelled, sent or not: Cancelled − CancelledAtEnd. The rest
// (CancelledAtEnd) the drain's end cut, and they are left over
// (Summary.LeftOver): every report counts them there, once.
func interruptCancelled(s *measure.Summary) int64 { return s.Cancelled - s.CancelledAtEnd }

// leftOverHow says how s's left-over arrivals were left, as the console
// says it: "N never sent, " then engine.LeftOverCut ("M cut in flight",
// "K cut between steps (thinking)").
func leftOverHow(s *measure.Summary) string {
	return fmt.Sprintf("%d never sent, %s", s.LeftOverUnsent, engine.LeftOverCut(s))
}

func counts(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// acrossRepeats prints, per phase run more than once, the median and range
// of the key metrics (engine.Across), and of each flow step's under it
// (iterations above, steps below). Percentiles are never averaged.
func (c *consoleWriter) acrossRepeats() {
	if c.r.Plan == nil || c.r.Plan.Repeats < 2 {
		return
	}
	across := c.r.Across
	if across == nil {
		across = engine.Across(c.r.Result)
	}
	header := false
	for _, ps := range across {
		if len(ps.Repeats) < 2 {
			continue
		}
		if !header {
			c.f("\nacross repeats: median [min – max]; percentiles are never averaged; the median of an even count is the worse middle value\n")
			header = true
		}
		// show is the median (marked "*" with mark) [min – max] of name.
		show := func(name string, format func(float64) string, mark string) string {
			m, ok := ps.Metrics[name]
			if !ok {
				return "n/a"
			}
			return fmt.Sprintf("%s%s [%s – %s]", format(m.Median), mark, format(m.Min), format(m.Max))
		}
		ms := func(v float64) string { return dur(time.Duration(v * float64(time.Millisecond))) }
		// A percentile's median is marked as the repeats' lines mark it
		// when, in at least one repeat, it had too few samples.
		fewest := int64(-1)
		for _, pr := range c.r.Result.Phases {
			if n := pr.Summary.Response.Count(); pr.Phase.Name == ps.Phase && !pr.Interrupted && (fewest < 0 || n < fewest) {
				fewest = n
			}
		}
		thin := func(q float64) string {
			if fewest < metric.MinSamples(q) {
				return "*"
			}
			return ""
		}
		c.f("  %-12s n=%d  throughput %s/s  p50 %s  p99 %s  errors %s\n", ps.Phase, len(ps.Repeats),
			show("throughput", rate, ""), show("p50_ms", ms, thin(50)), show("p99_ms", ms, thin(99)),
			show("errors", func(v float64) string { return fmt.Sprintf("%g", v) }, ""))
		c.stepsAcross(ps.Phase)
	}
}

// stepsAcross prints, under a phase's line across repeats, one line per
// flow step of it: median [min – max] of its figures over the repeats
// (stepsAcross); nothing for a phase without flows.
func (c *consoleWriter) stepsAcross(phase string) {
	for _, ps := range stepsAcross(c.r.Result) {
		if ps.Phase != phase || len(ps.Repeats) < 2 {
			continue
		}
		for _, st := range ps.Steps {
			c.f("    step %-12s n=%d", st.Name, len(ps.Repeats))
			for i, f := range stepFigures {
				if f.title == "ok" || f.title == "max" {
					continue // the phase's line shows neither
				}
				c.f("  %s %s", f.title, f.spreadCell(st.Figures[i], st.Fewest))
			}
			c.f("\n")
		}
	}
}

func (c *consoleWriter) rules() {
	v := c.r.Verdict
	if v == nil || (c.r.Error != "" && len(c.r.Result.Phases) == 0) {
		return // nothing was measured, so there is nothing to judge
	}
	print := func(title string, rs []engine.RuleResult) {
		if len(rs) == 0 {
			return
		}
		c.f("\n%s\n", title)
		for _, rr := range rs {
			c.f("  %-12s %s  [phase %s]\n", strings.ToUpper(rr.Status.String()), rr.Source, rr.Phase)
			if len(rr.Repeats) == 0 && rr.Reason != "" {
				c.f("      %s\n", rr.Reason)
			}
			for i, pv := range rr.Repeats {
				line := pv.Observed
				if pv.Reason != "" {
					line += " — " + pv.Reason
				}
				c.f("      repeat %d: %s: %s\n", rr.RepeatNumbers[i], strings.ToUpper(pv.Status.String()), line)
			}
		}
	}
	if len(v.Rules) == 0 && len(v.Expect) == 0 {
		c.f("\nrules: none (the verdict only says whether the run completed)\n")
	}
	print("rules (each must hold in every repeat)", v.Rules)
	print("reconciliation (server counters vs client counts)", v.Expect)
}

func (c *consoleWriter) warnings() {
	if len(c.r.Warnings) == 0 || (c.r.Error != "" && (c.r.Result == nil || len(c.r.Result.Phases) == 0)) {
		return // nothing was measured: warnings about the plan would only distract
	}
	c.f("\nwarnings\n")
	for _, w := range c.r.Warnings {
		c.f("  - %s\n", w.Message)
	}
}

func (c *consoleWriter) verdict() {
	r := c.r
	switch {
	case r.Error != "":
		c.f("\nverdict: COULD NOT RUN: %s\n", r.Error)
	case r.Result != nil && r.Result.Interrupted && len(r.Result.Phases) > 0 && !slices.ContainsFunc(r.Result.Phases, func(pr *engine.PhaseResult) bool { return pr.Interrupted }):
		// The signal came after the last phase had ended.
		c.f("\nverdict: INTERRUPTED after the last phase (every phase measured and written; nothing judged as passed)\n")
	case r.Result != nil && r.Result.Interrupted:
		c.f("\nverdict: INTERRUPTED (partial results written; nothing judged as passed)\n")
	case r.Segment != nil && r.Verdict == nil:
		c.f("\nsegment %d/%d ran: not judged; `runner merge` judges the reports of all %d segments together\n", r.Segment.K, r.Segment.N, r.Segment.N)
	case r.Outcome == "inconclusive" && r.Verdict != nil && r.Verdict.Status.String() == "pass":
		c.f("\nverdict: INCONCLUSIVE (every rule holds, but %s: see the warnings)\n", invalidReason(r))
	case r.Verdict != nil:
		c.f("\nverdict: %s\n", strings.ToUpper(r.Verdict.Status.String()))
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
