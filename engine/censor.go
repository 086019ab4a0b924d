package engine

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine/measure"
)

// Censoring says why a measured (repeat, phase) cannot support a PASS: part
// of the load it offered is missing from its figures. It returns "" when
// nothing is missing, or when the scenario accepts what is missing:
//
//   - left-over arrivals (Summary.LeftOver: came due during the phase but
//     were neither answered nor failed when its drain ran out) are missing
//     from every latency figure, and they are exactly the longest waits:
//     their response times are censored, each at least its bound. Accepted
//     only by a rule of the phase that reads left_over.
//   - dropped arrivals of a queue-mode phase (never the user's choice).
//     Drops in a phase with on_saturation: drop were chosen, and a rule
//     that reads dropped accepts them too.
//
// Warmup and interrupted phases are never judged, so never censored here.
func Censoring(pl *Plan, pr *PhaseResult) string {
	if pr == nil || pr.Phase == nil || pr.Summary == nil || pr.Phase.Warmup || pr.Interrupted {
		return ""
	}
	s, p := pr.Summary, pr.Phase
	var why []string
	if n := s.LeftOver(); n > 0 && !readsMetric(pl, p.Name, "left_over") {
		lo, _ := s.LeftOverBound.Min()
		why = append(why, fmt.Sprintf("%d of %d arrivals were left over (%d never sent by the drain's bound, the timeout %s after the phase's end; %s): their response times are censored, each at least %s, and no latency figure holds them (accept them explicitly with a rule on left_over alone, e.g. left_over == 0, or lengthen the timeout)",
			n, s.Arrivals, s.LeftOverUnsent, p.Grace, LeftOverCut(s), lo.Round(time.Millisecond)))
	}
	if s.Dropped > 0 && !p.Drop && !readsMetric(pl, p.Name, "dropped") {
		// Not made by this runner (queue mode sends or leaves over), but
		// a saved result of an earlier one is judged again the same way.
		why = append(why, fmt.Sprintf("%d of %d arrivals were dropped in a phase that queues them (accept them with a rule on dropped alone)", s.Dropped, s.Arrivals))
	}
	return strings.Join(why, "; ")
}

// LeftOverCut says how the drain's end cut the left-over arrivals it
// did not leave unsent: "N cut in flight" (a request, or a flow step's
// request, under way) and "M cut between steps (thinking)" for the M
// iterations of flows it caught while their virtual users were thinking,
// no request of theirs in flight (Summary.CancelledThinking); each part
// shown when it counts any, "0 cut in flight" when neither does.
func LeftOverCut(s *measure.Summary) string {
	inFlight := s.CancelledAtEnd - s.CancelledThinking
	switch {
	case s.CancelledThinking == 0:
		return fmt.Sprintf("%d cut in flight", inFlight)
	case inFlight == 0:
		return fmt.Sprintf("%d cut between steps (thinking)", s.CancelledThinking)
	}
	return fmt.Sprintf("%d cut in flight, %d cut between steps (thinking)", inFlight, s.CancelledThinking)
}

// readsMetric reports whether a rule of the plan that applies to phase
// bounds metric name explicitly: it reads that metric and nothing else
// (itself, or its median or worst across repeats), e.g. left_over == 0.
// A rule that merely mentions it (`p50 < 1s or left_over == 0`) does not
// accept what it counts: it can pass whatever the count.
func readsMetric(pl *Plan, phase, name string) bool {
	if pl == nil {
		return false
	}
	for _, sr := range pl.Rules {
		if sr.Phase != "" && sr.Phase != phase {
			continue
		}
		ms := sr.Rule.Metrics()
		only := len(ms) > 0
		for _, m := range ms {
			only = only && (m == name || m == "median("+name+")" || m == "worst("+name+")")
		}
		if only {
			return true
		}
	}
	return false
}

// ClientFailure says how the load generator's own machine failed during a
// run: requests that failed with a client-side code (drivers.ClientSide:
// local ports or descriptors exhausted, a request id still in use), in any
// phase. Such a run measured the client's limits, not the target, so it
// could not complete (exit 3) whatever its rules say; "" when none.
func ClientFailure(res *Result) string {
	if res == nil {
		return ""
	}
	by := map[string]int64{}
	var requests int64
	var codes []string
	for _, pr := range res.Phases {
		if pr.Summary == nil {
			continue
		}
		requests += pr.Summary.Requests
		for code, n := range pr.Summary.ErrorsByCode {
			if n > 0 && drivers.ClientSide(code) {
				if by[code] == 0 {
					codes = append(codes, code)
				}
				by[code] += n
			}
		}
	}
	if len(codes) == 0 {
		return ""
	}
	sort.Strings(codes)
	var parts []string
	for _, code := range codes {
		parts = append(parts, fmt.Sprintf("%d requests failed with %s (%s)", by[code], code, drivers.LikelyCause(code)))
	}
	return fmt.Sprintf("the client's own limits failed requests during the run (%s, of %d requests): the run measured the load generator's machine, not the target", strings.Join(parts, "; "), requests)
}

// GeneratorFault says why the load generator itself was the bottleneck of
// a measured (repeat, phase), so that its figures measure the generator
// rather than the target; "" when it was not:
//
//   - it dispatched more than 1 % (and at least minLateArrivals) of the
//     arrivals more than LatenessLimit late while connections were free;
//   - it dropped arrivals (on_saturation: drop) after a late dispatch: the
//     burst of a late pacer finds the slots busy;
//   - its CPU was above 90 % of the cores it may use (phases of 1 s or
//     more: getrusage counts in ticks).
//
// A verdict built on such a phase would blame the target for the
// generator's delay, or pass on load the target never saw as planned.
func GeneratorFault(pr *PhaseResult) string {
	if pr == nil || pr.Phase == nil || pr.Summary == nil || pr.Phase.Warmup || pr.Interrupted {
		return ""
	}
	s := pr.Summary
	var why []string
	if s.DroppedLate > 0 {
		why = append(why, fmt.Sprintf("%d arrivals dropped after a late dispatch", s.DroppedLate))
	}
	if tooLate(pr) {
		why = append(why, fmt.Sprintf("%d of %d arrivals dispatched more than %s late (up to %s) while connections were free or while it was stalled itself", pr.LateArrivals, s.Arrivals, LatenessLimit, pr.LatenessMax.Round(time.Millisecond)))
	}
	if stepsTooLate(pr) {
		why = append(why, lateSteps(pr))
	}
	if cpuSaturated(pr) {
		cores := pr.clientCores()
		why = append(why, fmt.Sprintf("client CPU at %.0f %% of its %d core(s)", 100*pr.ClientCPU/cores, int(cores)))
	}
	if len(why) == 0 {
		return ""
	}
	return "the load generator was the bottleneck (" + strings.Join(why, "; ") + ", " + stallCause(pr) + ")"
}

// TimeoutCensoring says why the latency figures of a measured (repeat,
// phase) are censored by timeouts: a request that timed out is known only
// to have taken at least its timeout, and latency statistics cover the ok
// requests alone, so a rule on p99 or max could pass on the requests that
// were fast enough while the slowest are missing. "" when no request
// timed out, or when a rule of the phase bounds timeouts, errors or
// error_rate alone (the scenario then judges them explicitly).
func TimeoutCensoring(pl *Plan, pr *PhaseResult) string {
	if pr == nil || pr.Phase == nil || pr.Summary == nil || pr.Phase.Warmup || pr.Interrupted || pr.Summary.Timeouts == 0 {
		return ""
	}
	for _, m := range []string{"timeouts", "errors", "error_rate"} {
		if readsMetric(pl, pr.Phase.Name, m) {
			return ""
		}
	}
	return fmt.Sprintf("%d requests timed out: each took at least the timeout and is in no latency figure (add a rule on timeouts, errors or error_rate to judge them)", pr.Summary.Timeouts)
}

// latencyStat reports whether a metric a rule reads is a latency statistic
// of this run (a percentile, min, max, mean or stddev of a distribution;
// not the baseline's).
func latencyStat(metric string) bool {
	g, m := bareMetric(metric)
	return g != "baseline" && timeSensitive(metric) && !isRate(m)
}

func isRate(m string) bool {
	switch m {
	case "throughput", "achieved_rate", "completed_rate", "littleL", "inflight_mean":
		return true
	}
	return false
}

// bareMetric splits a metric as Rule.Metrics spells it ("median(p99)",
// "service.p75", `errors_by["503"]`, "step.login.p99") into its group (""
// for none) and its name, without the view and the flow step: a step's
// metric is judged as the phase's of the same name (its times and rates
// are as time-sensitive).
func bareMetric(metric string) (group, name string) {
	m := metric
	for _, view := range []string{"median(", "worst("} {
		if strings.HasPrefix(m, view) && strings.HasSuffix(m, ")") {
			m = m[len(view) : len(m)-1]
		}
	}
	m = withoutStep(m)
	if g, rest, ok := strings.Cut(m, "."); ok {
		switch g {
		case "service", "failed", "corrected", "baseline", "client", "target", "server":
			return g, rest
		}
	}
	return "", m
}

// withoutStep strips the flow step from a metric as Rule.Metrics spells
// it: step.login.p99 and step["log-in"].p99 are p99.
func withoutStep(m string) string {
	if rest, ok := strings.CutPrefix(m, "step["); ok {
		// The name is quoted with \" escaped: the step ends at the first
		// `"].` not escaped.
		for i := 1; i+2 < len(rest); i++ {
			if rest[i] == '"' && rest[i-1] != '\\' && strings.HasPrefix(rest[i:], `"].`) {
				return rest[i+3:]
			}
		}
		return m
	}
	if rest, ok := strings.CutPrefix(m, "step."); ok {
		if _, metric, ok := strings.Cut(rest, "."); ok {
			return metric
		}
	}
	return m
}

// tooLate reports whether the pacer dispatched more than 1 % of a phase's
// arrivals, and at least minLateArrivals, over LatenessLimit late while
// connections were free: the generator fell behind its own schedule.
func tooLate(pr *PhaseResult) bool { return overLateLimit(pr.LateArrivals, pr.Summary.Arrivals) }

// stepsTooLate reports the same of a flow phase's wake-ups after a think
// time (ThinkWakeups) that woke over LatenessLimit after they came due:
// the generator's own delay sits in those steps' response times.
func stepsTooLate(pr *PhaseResult) bool { return overLateLimit(pr.LateSteps, pr.ThinkWakeups) }

// overLateLimit: late of all is more than 1 % and at least
// minLateArrivals.
func overLateLimit(late, all int64) bool { return late*100 > all && late >= minLateArrivals }

// lateSteps says how many flow steps the generator woke late, for the
// messages; "" when none were.
func lateSteps(pr *PhaseResult) string {
	if pr.LateSteps == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d flow steps woken more than %s after their think time (up to %s)", pr.LateSteps, pr.ThinkWakeups, LatenessLimit, pr.StepLatenessMax.Round(time.Microsecond))
}

// cpuSaturated reports whether the load generator's CPU was above 90 % of
// the cores it may use over a phase of a second or more (getrusage counts
// in ticks: over a shorter phase the ratio is noise).
func cpuSaturated(pr *PhaseResult) bool {
	return pr.ClientCPU > 0.9*pr.clientCores() && pr.Wall >= time.Second
}

// timeSensitive reports whether a metric a rule reads (as Rule.Metrics
// spells it: "p99", "median(p99)", "service.p75", "throughput") is a time
// or a rate, which a stalled generator distorts: its own delay is inside
// response times (counted from the intended start) and stretches the
// windows of rates. Counts (errors, ok, errors_by[…]) are not.
func timeSensitive(metric string) bool {
	g, m := bareMetric(metric)
	switch g {
	case "", "service", "failed", "corrected", "baseline":
	default:
		return false // client.*, target.*, server.*
	}
	switch m {
	case "max", "min", "mean", "stddev":
		return true
	}
	if isRate(m) {
		return true
	}
	return len(m) > 1 && m[0] == 'p' && (m[1] == '(' || (m[1] >= '0' && m[1] <= '9'))
}
