package engine

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/internal/clock"
	"github.com/runner-dev/runner/internal/procstat"
)

// Warning is an honesty warning (docs/design.md, "Self-checks and
// warnings"): something that limits how far a run's numbers can be
// trusted.
type Warning struct {
	// Code names the kind: closed-model, single-repeat, achieved-below-offered,
	// littles-law, few-samples, connections-missing, client-side-errors,
	// schedule-lateness, step-lateness, client-cpu, target-thread-bound, busy-machine,
	// cpu-steal, unsolicited-replies (Checks);
	// stale-target-counters (StaleCounters); timer-granularity
	// (TimerGranularity).
	Code string `json:"code"`
	// Phase and Repeat locate it; empty and 0 for the whole run.
	Phase  string `json:"phase,omitempty"`
	Repeat int    `json:"repeat,omitempty"`
	// Message says what was seen and what it means.
	Message string `json:"message"`
	// Invalidates is true when the warning means the measurement cannot
	// support a verdict (the load generator itself was the bottleneck,
	// arrivals were left over, a baseline counts other things, …): a run
	// that would pass is then inconclusive (docs/design.md, "Rules and
	// verdicts"), and the reports say why from the warnings' codes.
	Invalidates bool `json:"invalidates,omitempty"`
}

// Invalidating reports whether any warning invalidates the run.
func Invalidating(ws []Warning) bool {
	for _, w := range ws {
		if w.Invalidates {
			return true
		}
	}
	return false
}

// Thresholds of the self-checks.
const (
	// AchievedFloor: achieved rate below this fraction of offered is warned.
	AchievedFloor = 0.95
	// LittleTolerance: λ·W further than this fraction from the expected
	// concurrency is warned.
	LittleTolerance = 0.10
	// LatenessLimit: the engine sending an on-time arrival later than this
	// means the load generator fell behind its own schedule.
	LatenessLimit = 10 * time.Millisecond
	// minLittleSamples: Little's law is not checked on fewer responses.
	minLittleSamples = 100
	// littleFloor: differences smaller than this many requests in flight
	// are not reported, however large relatively (a nearly idle target).
	littleFloor = 0.05
	// minLateArrivals: a run is invalidated by its own lateness only when
	// more than 1 % of its arrivals and at least this many were late, so
	// that a single stall of a shared machine in a short run does not.
	minLateArrivals = 10
	// ThreadBound: a target thread above this fraction of one core while
	// the target's total is below ThreadBoundTotal of the machine is
	// warned: one thread is the bottleneck, not the machine.
	ThreadBound      = 0.9
	ThreadBoundTotal = 0.5
	// GranularityLimit: a pacing clock whose sleeps overshoot by more than
	// this is warned.
	GranularityLimit = time.Millisecond
)

// Checks runs the self-checks over a run and returns its warnings, run-wide
// ones first, then per (repeat, phase) in order.
func Checks(pl *Plan, res *Result) []Warning {
	var ws []Warning
	if pl.Repeats == 1 {
		ws = append(ws, Warning{Code: "single-repeat", Message: "single repeat: one run shows no spread; use repeats: 3 or more before trusting a difference"})
	}
	for _, p := range pl.Phases {
		if p.Model == Closed && !p.Warmup {
			fix := "use an open model, or closed.expected_rate for a corrected histogram"
			if p.ExpectedInterval > 0 {
				fix = "the CO-corrected histogram (expected_rate) is reported apart; it adds samples only where a response took at least twice the expected interval (a response of v adds v − i, v − 2i, … down to i, as HdrHistogram's correction does), so it cannot show a queue that grows slowly"
			}
			ws = append(ws, Warning{Code: "closed-model", Phase: p.Name, Message: fmt.Sprintf("phase %s: closed model: the tail may be under-reported (coordinated omission): a slow response also delays the requests behind it; %s", p.Name, fix)})
		}
	}
	for _, pr := range res.Phases {
		p, s := pr.Phase, pr.Summary
		cores := pr.clientCores() // the client's, as recorded; the machine's are m.Cores
		at := func(code, format string, a ...any) {
			ws = append(ws, Warning{Code: code, Phase: p.Name, Repeat: pr.Repeat,
				Message: fmt.Sprintf("repeat %d, phase %s: ", pr.Repeat, p.Name) + fmt.Sprintf(format, a...)})
		}
		if pr.ConnectionsEstablished < pr.ConnectionsRequested {
			why := ""
			if pr.ConnectionsClosedEarly > 0 {
				why = fmt.Sprintf("; %d were accepted and then closed by the server", pr.ConnectionsClosedEarly)
			}
			at("connections-missing", "%d of %d connections established: the requested concurrency was not reached%s", pr.ConnectionsEstablished, pr.ConnectionsRequested, why)
			// The load that ran is not the load planned: a pass would be
			// a pass of another test, unless a rule bounds exactly this.
			if !p.Warmup && !pr.Interrupted && !readsMetric(pl, p.Name, "connections_established") {
				ws[len(ws)-1].Invalidates = true
				ws[len(ws)-1].Message += " (a run that would pass is inconclusive: a rule on connections_established alone accepts it)"
			}
		}
		if pr.StartLag > LatenessLimit {
			// An open phase keeps its arrivals' instants: those due before
			// the release were sent late, and count as the generator's
			// lateness (schedule-lateness). A closed phase lost the lag from
			// its window: more than 1 % of it makes a pass inconclusive.
			lost := p.Model == Closed && pr.StartLag*100 > max(pr.Summary.Elapsed, p.Duration)
			what := "the arrivals due meanwhile were sent late, each counted from its own intended start (see the schedule's lateness)"
			if p.Model == Closed {
				what = fmt.Sprintf("its connections started that late in a window of %s", max(pr.Summary.Elapsed, p.Duration).Round(time.Millisecond))
			}
			at("late-start", "released %s after its instant on the timetable (more than %s): %s", pr.StartLag.Round(time.Millisecond), LatenessLimit, what)
			ws[len(ws)-1].Invalidates = lost && !p.Warmup
		}
		if why := Censoring(pl, pr); why != "" {
			at("censored", "%s", why)
			ws[len(ws)-1].Invalidates = true
		}
		if p.Model == Open && !pr.Interrupted {
			off, _ := MeasuredOfferedRate(pr)
			if ach := s.AchievedRate(); off > 0 && ach < AchievedFloor*off {
				at("achieved-below-offered", "achieved %.1f/s (sent over %s) is %.0f %% of the offered %.1f/s (over %s): %s", ach, s.SendWindow().Round(time.Millisecond), 100*ach/off, off, s.Elapsed.Round(time.Millisecond), shortfallCause(pr))
			}
		}
		if s.Responded >= minLittleSamples && !pr.Interrupted && !p.Warmup {
			lc := Little(pr)
			if lc.Want > 0 && math.Abs(lc.L-lc.Want)/lc.Want > LittleTolerance && math.Abs(lc.L-lc.Want) > littleFloor {
				at("littles-law", "Little's law does not reconcile: λ·W = %.2f vs %s (off by %.0f %%, over %s): %s", lc.L, lc.Against, 100*math.Abs(lc.L-lc.Want)/lc.Want, s.CompletionWindow().Round(time.Millisecond), lc.why)
			}
		}
		if !p.Warmup && s.Response.Count() > 0 && s.Response.Count() < 1000 {
			at("few-samples", "p99 from %d samples (needs 1000): it is the tail of a handful of requests", s.Response.Count())
		}
		switch {
		case !p.Warmup && s.DroppedLate > 0:
			at("schedule-lateness", "%d of the %d dropped arrivals were dispatched more than %s late by the load generator (up to %s; %s): the burst of a late generator found every slot busy, so those drops are the generator's, not the target's, and the run measures the generator", s.DroppedLate, s.Dropped, LatenessLimit, pr.LatenessMax.Round(time.Microsecond), stallCause(pr))
			ws[len(ws)-1].Invalidates = true
		case !p.Warmup && tooLate(pr):
			at("schedule-lateness", "the load generator dispatched %d of %d arrivals more than %s late (up to %s) while connections were free or while it was stalled itself (%s): it fell behind its own schedule, so the run measures the generator, not the target", pr.LateArrivals, s.Arrivals, LatenessLimit, pr.LatenessMax.Round(time.Microsecond), stallCause(pr))
			ws[len(ws)-1].Invalidates = true
		case pr.LatenessMax > LatenessLimit:
			at("schedule-lateness", "the load generator stalled: it dispatched %d of %d arrivals more than %s late (up to %s) while connections were free or while it was stalled itself (%s). The delay is the generator's, not the target's, and is inside those requests' response times (it can only raise them); with 1 %% of the arrivals or fewer, or fewer than %d, it does not invalidate the run", pr.LateArrivals, s.Arrivals, LatenessLimit, pr.LatenessMax.Round(time.Microsecond), stallCause(pr), minLateArrivals)
		}
		switch {
		case !p.Warmup && stepsTooLate(pr):
			at("step-lateness", "the load generator woke late for its flows' steps: %s, while it was stalled itself (%s). A step counts from when it came due, so the delay is inside those steps' and their iterations' response times: the run measures the generator, not the target", lateSteps(pr), stallCause(pr))
			ws[len(ws)-1].Invalidates = true
		case pr.StepLatenessMax > LatenessLimit:
			at("step-lateness", "the load generator stalled: %s (%s). The delay is the generator's, not the target's, and is inside those steps' response times (it can only raise them); with 1 %% of the wake-ups after a think time or fewer, or fewer than %d, it does not invalidate the run", lateSteps(pr), stallCause(pr), minLateArrivals)
		}
		if cpuSaturated(pr) {
			hint := ""
			if p.Model == Open && p.DispatchWindow == 0 {
				// Each arrival on its own instant costs a wake-up of the
				// generator and, often, of an idle target.
				hint = "; an open phase paced one arrival at a time can trade precision for CPU with open.dispatch_window (e.g. 1ms: about half the CPU per request at 20,000/s, each request sent up to that early)"
			}
			at("client-cpu", "client CPU %.0f %% of the %d core(s) the runner may use: the load generator is saturated and may be the bottleneck%s", 100*pr.ClientCPU/cores, int(cores), hint)
			ws[len(ws)-1].Invalidates = !p.Warmup
		}
		if pr.Machine != nil && pr.Wall >= time.Second {
			m := pr.Machine
			mc := machineCores(m)
			ours := oursOf(pr, mc)
			known := "the runner"
			if pr.Target != nil {
				known = "the runner and the target"
			}
			if other := m.Busy - ours; other > OtherCPULimit {
				msg := fmt.Sprintf("other processes kept %.2f cores of this %d-core machine busy (machine %.2f, %s %.2f): they competed with the generator and the target, and the numbers include their interference", other, mc, m.Busy, known, ours)
				if pr.Target == nil {
					msg += " (a target on this machine is among them unless target.pid names it)"
				}
				at("busy-machine", "%s", msg)
			}
			if m.Steal > StealLimit {
				at("cpu-steal", "the hypervisor took %.2f cores from this machine (steal time): the clocks ran, the CPUs did not", m.Steal)
			}
		}
		// /proc counts CPU in 10 ms ticks: over a phase shorter than a
		// second a thread's fraction is too coarse to call it pinned.
		if t := pr.Target; t != nil && !p.Warmup && pr.Wall >= time.Second &&
			t.CPUMaxThread > ThreadBound && t.CPU < ThreadBoundTotal {
			at("target-thread-bound", "one target thread ran at %.0f %% of a core while the whole target used %.0f %% of the machine: a single thread (an event loop, a lock holder) limits the target, not its CPUs", 100*t.CPUMaxThread, 100*t.CPU)
		}
		var codes []string
		for code := range s.ErrorsByCode {
			if drivers.ClientSide(code) {
				codes = append(codes, code)
			}
		}
		sort.Strings(codes)
		for _, code := range codes {
			at("client-side-errors", "%d %s errors are the client's, not the target's: %s", s.ErrorsByCode[code], code, drivers.LikelyCause(code))
		}
		if n := s.UnknownID + s.DuplicateID; n > 0 {
			// Late replies are a timeout's own; these answer no request
			// ever sent, or one already answered. A rule of the phase on
			// each count alone (unknown_id == 0, duplicate_id < 10)
			// accepts it, as one on left_over accepts left-overs.
			accepted := (s.UnknownID == 0 || readsMetric(pl, p.Name, "unknown_id")) &&
				(s.DuplicateID == 0 || readsMetric(pl, p.Name, "duplicate_id"))
			at("unsolicited-replies", "%d replies answered no request (unknown id %d, duplicate id %d): the target sent replies with ids never sent or answered a request twice, or the layout's id field is not where the target puts the request's id, so the requests' replies are not known to be theirs (accept them explicitly with a rule on unknown_id or duplicate_id alone, e.g. unknown_id == 0)", n, s.UnknownID, s.DuplicateID)
			ws[len(ws)-1].Invalidates = !p.Warmup && !accepted
		}
	}
	return ws
}

// ClosedAfterBadFrame is drivers.ClosedAfterBadFrame, for the reports: a
// close code of a connection the client closed after a bad frame, not one
// the target ended.
func ClosedAfterBadFrame(code string) bool { return drivers.ClosedAfterBadFrame(code) }

// OtherCPULimit is how many cores of CPU other processes may use during a
// phase before busy-machine warns; StealLimit the same for steal time.
const (
	OtherCPULimit = 0.25
	StealLimit    = 0.1
)

// LittleCheck is Little's law applied to one phase: L = λ·W with λ the
// completed responses per second and W their mean response time (J. D. C.
// Little, 1961), compared with the concurrency the phase should have had.
type LittleCheck struct {
	// L is λ·W; with think time Z in the closed model, λ·(W + Z).
	L float64
	// Want is what L should equal: the connections of a closed phase
	// (each is always waiting or thinking), or the mean in-flight at the
	// target of an open phase or a ramp.
	Want float64
	// Against names Want for people, e.g. "4 connections".
	Against string
	// Counts says what L counts when it is not requests: for a phase
	// that ran flows, "iterations in progress, thinking included" (λ
	// counts iterations and W runs from an iteration's intended start to
	// its last step's completion, think times included, so L holds the
	// virtual users thinking between steps too, not only requests at the
	// target); "" for requests.
	Counts string
	why    string
}

// FlowLittleCounts is LittleCheck.Counts of a phase that ran flows.
const FlowLittleCounts = "iterations in progress, thinking included"

// thinkCycles is the fewest think times a closed phase must span for its
// Little's law check: over fewer cycles per connection the window's edges
// (requests cut at the start and end) skew λ·(W+Z) by up to (W+Z)/T.
const thinkCycles = 10

// Little computes the Little's law check of a phase; the console and the
// warning use this one computation.
func Little(pr *PhaseResult) LittleCheck {
	s, p := pr.Summary, pr.Phase
	c := LittleCheck{L: s.LittleL()}
	unit := "requests"
	if len(pr.Steps) > 0 {
		c.Counts, unit = FlowLittleCounts, "iterations"
	}
	if p.Model == Closed && len(p.Steps) == 0 {
		// Every connection is either waiting for a response or thinking:
		// N = λ·(W + Z).
		c.Want = float64(pr.ConnectionsRequested)
		c.Against = fmt.Sprintf("%d connections", pr.ConnectionsRequested)
		if p.ThinkTime > 0 && s.Elapsed > 0 {
			// No connection thinks longer than the phase lasts.
			z := min(p.ThinkTime, s.Elapsed)
			c.L += float64(s.Responded) / s.Elapsed.Seconds() * z.Seconds()
			c.Against += " (λ·(W+think))"
			if z*thinkCycles > s.Elapsed {
				// Each connection went round a few times at most: the
				// requests cut by the phase's two ends weigh as much as
				// the law itself, so it is shown, not checked.
				c.Want = 0
				c.Against = fmt.Sprintf("%d connections: not checked, the think time %s leaves each connection under %d cycles in %s", pr.ConnectionsRequested, p.ThinkTime, thinkCycles, s.Elapsed.Round(time.Millisecond))
			}
		}
		// N = L + (connections busy with requests that got no response,
		// not in W) + (connections in no request at all).
		un := s.UnansweredMean()
		idle := c.Want - c.L - un
		c.why = fmt.Sprintf("on average %.2f connections carried requests that never got a response (timeouts, resets, cut at the end: not in W) and %.2f were in no request at all (dialling, missing, or the client's own delay between a response and the next send)", un, max(idle, 0))
		if c.L > c.Want {
			c.why = "λ·W exceeds the connections: responses were counted outside the window they ran in (a phase too short for its response times)"
		}
		return c
	}
	// Open model or ramp: W counts from the intended start, the in-flight
	// mean only from the send. Exactly L = in flight + waiting in the
	// client − in flight without a response, so the gap has two named
	// parts, each measured.
	c.Want = s.InflightMean()
	c.Against = fmt.Sprintf("mean in-flight at the target %.2f", c.Want)
	if c.Counts != "" {
		// An iteration is in progress from its first send to its last
		// completion, its think times included.
		c.Against = fmt.Sprintf("mean iterations in progress %.2f (first send to last completion, thinking included)", c.Want)
	}
	wait, un := s.WaitingMean(), s.UnansweredMean()
	var parts []string
	if wait > littleFloor {
		lag := time.Duration(0)
		if s.Responded > 0 {
			lag = s.WaitSum / time.Duration(s.Responded)
		}
		parts = append(parts, fmt.Sprintf("on average %.2f answered %s waited in the client before their send (mean send lag %s): %s", wait, unit, lag.Round(time.Microsecond), waitCause(pr)))
	}
	if un > littleFloor {
		where := "in flight at the target"
		if c.Counts != "" {
			where = "iterations in progress"
		}
		parts = append(parts, fmt.Sprintf("%.2f were %s without ever getting a response (timeouts, resets, cut at the end: in the in-flight mean, not in W)", un, where))
	}
	if un > wait && len(parts) == 2 {
		parts[0], parts[1] = parts[1], parts[0] // the larger part first
	}
	if len(parts) == 0 {
		parts = append(parts, "neither the client's wait nor unanswered requests explain it: requests cut short at the phase's edges weigh too much in so short a window")
	}
	c.why = strings.Join(parts, "; ")
	return c
}

// waitCause says why arrivals of an open phase waited in the client. With
// the in-flight slots (connections × in-flight) mostly in use, they waited
// for a free slot: the target (or too few slots) could not take the load.
// With most slots idle on average the phase's figures cannot tell a target
// that slowed down for a while (and filled every slot then) from a load
// generator too slow to hand arrivals out; it says both, with the client's
// CPU. Lateness the pacer measured itself is named too.
func waitCause(pr *PhaseResult) string {
	s, p := pr.Summary, pr.Phase
	slots := float64(p.Connections * max(p.Inflight, 1))
	var why string
	if g := GeneratorFault(pr); g != "" {
		why = g + ": the wait is the generator's, not the target's"
	} else if c := pr.StreamCap; c != nil {
		// The server's stream cap, not the target's speed alone, bounds
		// the slots that can carry a request.
		why = fmt.Sprintf("they waited for an HTTP/2 stream: the server allows %d concurrent streams per connection (SETTINGS_MAX_CONCURRENT_STREAMS), so at most %d of the %.0f in-flight slots could carry a request (on average %.1f did): raise the server's limit or add connections", *c, p.Connections**c, slots, s.InflightMean())
	} else if in := s.InflightMean(); in >= 0.5*slots {
		why = fmt.Sprintf("they waited for a free connection or in-flight slot (on average %.1f of %.0f in use): the target (or too few connections × in-flight) could not take the load", in, slots)
	} else {
		why = fmt.Sprintf("only %.1f of the %.0f in-flight slots were in use on average, so either the target slowed down for a while and filled them then, or the load generator could not hand the arrivals out fast enough (client CPU %.0f %% of its %d core(s))", in, slots, 100*pr.ClientCPU/pr.clientCores(), int(pr.clientCores()))
	}
	if pr.LateArrivals > 0 && GeneratorFault(pr) == "" {
		why += fmt.Sprintf("; the load generator itself dispatched %s late while slots were free (see the warning on its schedule)", countOf(pr.LateArrivals, "arrival"))
	}
	return why
}

// shortfallCause says why an open phase sent fewer requests per second
// than it offered, naming what was measured: the generator's late bursts,
// drops at a busy in-flight cap, arrivals that waited for a connection
// and went out in the drain, or left-over arrivals.
func shortfallCause(pr *PhaseResult) string {
	s := pr.Summary
	var parts []string
	if s.DroppedLate > 0 {
		parts = append(parts, fmt.Sprintf("%d arrivals were dropped after the load generator dispatched them late (the generator's, not the target's)", s.DroppedLate))
	}
	if n := s.Dropped - s.DroppedLate; n > 0 {
		parts = append(parts, fmt.Sprintf("%d arrivals found every connection at its in-flight cap and were dropped (on_saturation: drop): the target was slower than connections × in-flight allows", n))
	}
	if s.SendWindow() > s.Elapsed {
		mx, _ := s.SendLag.Max()
		parts = append(parts, fmt.Sprintf("arrivals waited in the client (send lag up to %s) and went out in the drain, until %s after the phase's end: %s", mx.Round(time.Millisecond), (s.SendWindow()-s.Elapsed).Round(time.Millisecond), waitCause(pr)))
	}
	if n := s.LeftOver(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d arrivals were left over when the drain ran out", n))
	}
	if pr.LateArrivals > 0 && s.SendWindow() <= s.Elapsed {
		parts = append(parts, fmt.Sprintf("the load generator dispatched %s late (%s)", countOf(pr.LateArrivals, "arrival"), stallCause(pr)))
	}
	if len(parts) == 0 {
		return "fewer requests were sent than came due"
	}
	return strings.Join(parts, "; ")
}

// machineCores is the machine's core count of a usage: its own, or the
// online cores where it lacks one.
func machineCores(m *procstat.MachineUsage) int {
	if m.Cores > 0 {
		return m.Cores
	}
	return procstat.OnlineCores()
}

// oursOf is the cores the runner and its measured target kept busy in a
// phase: what is not other processes' share of the machine (mc cores).
func oursOf(pr *PhaseResult, mc int) float64 {
	ours := pr.ClientCPU
	if t := pr.Target; t != nil {
		ours += t.CPU * float64(mc)
	}
	return ours
}

// stallCause names what the measurements show about a load generator
// that fell behind its schedule: its longest GC pause, its CPU, and other
// processes' use of the machine; otherwise it was descheduled.
func stallCause(pr *PhaseResult) string {
	var why []string
	if pr.GCPauseMax >= LatenessLimit {
		why = append(why, fmt.Sprintf("a garbage-collector pause of %s", pr.GCPauseMax.Round(time.Microsecond)))
	}
	if cpuSaturated(pr) {
		cores := pr.clientCores()
		why = append(why, fmt.Sprintf("its CPU at %.0f %% of %d cores", 100*pr.ClientCPU/cores, int(cores)))
	}
	if m := pr.Machine; m != nil {
		if other := m.Busy - oursOf(pr, machineCores(m)); other > OtherCPULimit {
			why = append(why, fmt.Sprintf("other processes using %.2f cores", other))
		}
	}
	if len(why) == 0 {
		return "the process was descheduled: no GC pause, CPU saturation or other load explains it"
	}
	return "seen: " + strings.Join(why, ", ")
}

// StaleCounters checks the target's counters fetched before the run's
// first phase (Result.ServerAtStart). A target the runner spawned a moment
// ago has served nothing, so every counter must be zero; any other value
// means the counters are not this run's (another process answered on the
// port, or a server left over from an earlier run) and is warned, naming
// them. A target given by URL is a long-lived server whose counters
// rightly start wherever its history left them: no warning, since only
// deltas are ever compared (the starting values are in the JSON report).
// Counters named control_* (or group.control_*) count the runner's own
// control traffic, the spawner's health checks and the counter fetches
// themselves (the reference targets' control_connections), and are not
// expected to be zero.
func StaleCounters(res *Result, spawned bool) []Warning {
	if !spawned || res == nil || len(res.ServerAtStart) == 0 {
		return nil
	}
	var names []string
	for k, v := range res.ServerAtStart {
		leaf := k[strings.LastIndexByte(k, '.')+1:]
		if v != 0 && !strings.HasPrefix(leaf, "control") {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	var parts []string
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s=%g", k, res.ServerAtStart[k]))
	}
	return []Warning{{Code: "stale-target-counters", Message: fmt.Sprintf("the freshly spawned target's counters did not start from zero before the first phase (%s): they are not only this run's (another process on the port, or a stale server); deltas are still compared", strings.Join(parts, " "))}}
}

// CountersMoved warns when the target's counters were not where the
// previous fetch left them: between two phases of a repeat nothing of
// ours runs, so a counter that moved from the fetch after phase k to the
// fetch before phase k+1 counted someone else's traffic (another client
// on a shared server, or a different server behind the address). Only
// after a phase that ended clean (no timeout, nothing cancelled: no
// reply of ours could still be on its way), not for control counters
// (control_*: the fetches themselves), and not for a move of up to
// fetchers, the clients that read the counters (1 for a run; N for a
// merge of N segments, each of which fetches): a target may count a
// fetch's connection for a moment before it knows it for one. Only the
// counters named in only are looked at (nil: all): those the rules read
// (Plan.ServerCounters), since a target's byte counters and the like move
// with every fetch by its size. Deltas are still compared; the warning
// says they may include the other traffic.
func CountersMoved(res *Result, fetchers int, only []string) []Warning {
	if res == nil {
		return nil
	}
	var ws []Warning
	for i := 1; i < len(res.Phases); i++ {
		prev, pr := res.Phases[i-1], res.Phases[i]
		if prev.Repeat != pr.Repeat || prev.ServerAfter == nil || pr.ServerBefore == nil ||
			prev.Summary == nil || prev.Summary.Timeouts > 0 || prev.Summary.Cancelled > 0 {
			continue
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(pr.ServerBefore)) {
			leaf := k[strings.LastIndexByte(k, '.')+1:]
			if strings.HasPrefix(leaf, "control") || only != nil && !slices.Contains(only, k) {
				continue
			}
			// Fetches ran between the two readings; a target may count
			// them (a request, a connection, a message): one each is ours.
			if a, b := prev.ServerAfter[k], pr.ServerBefore[k]; math.Abs(b-a) > float64(max(fetchers, 1)) {
				parts = append(parts, fmt.Sprintf("%s %g → %g", k, a, b))
			}
		}
		if len(parts) > 0 {
			ws = append(ws, Warning{Code: "shared-target-counters", Phase: pr.Phase.Name, Repeat: pr.Repeat,
				Message: fmt.Sprintf("repeat %d, phase %s: the target's counters moved between phases while nothing of ours ran (%s): another client shares the target, or another server answers at its address; this phase's deltas may include that traffic", pr.Repeat, pr.Phase.Name, strings.Join(parts, ", "))})
		}
	}
	return ws
}

// TimerGranularity warns when a clock the plan's phases pace on overshoots
// its sleeps by more than GranularityLimit (median of res): the open
// model's pacer sleeps on the precise clock (a Go timer where no timerfd
// can be made), closed phases sleep think time and ramp stairs on Go
// timers.
func TimerGranularity(pl *Plan, res clock.Resolution) []Warning {
	var ws []Warning
	check := func(name string, over time.Duration, what string) {
		if over > GranularityLimit {
			ws = append(ws, Warning{Code: "timer-granularity", Message: fmt.Sprintf("%s on this machine overshoots a %s sleep by %s (median of %d): %s cannot be paced finer than that", name, res.Sleep, over.Round(time.Microsecond), res.Samples, what)})
		}
	}
	open, timed := false, false
	for _, p := range pl.Phases {
		switch {
		case p.Model == Open:
			open = true
		case p.ThinkTime > 0 || len(p.Steps) > 0:
			timed = true
		}
	}
	if open {
		if res.PreciseAvailable {
			check("the precise clock (timerfd)", res.Precise, "open-model arrivals")
		} else {
			check("the Go timer (no timerfd)", res.Timer, "open-model arrivals")
		}
	}
	if timed {
		check("the Go timer", res.Timer, "think time and ramp stairs")
	}
	return ws
}

// countOf is n with noun, plural unless n is 1: "1 arrival", "48 arrivals".
func countOf(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
