package engine

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/runner-dev/runner/schema"
)

// Describe renders the plan for `runner plan`: per phase the model,
// connections, rate schedule, in-flight cap, bound, expected requests (or
// iterations, with flows: Counted) and expected time, then the totals.
func (pl *Plan) Describe() string {
	var b strings.Builder
	sc := pl.Scenario
	what := pl.Counted()
	fmt.Fprintf(&b, "plan for %s (%s): %d repeat(s) of %d phase(s)\n", sc.Name, sc.File, pl.Repeats, len(pl.Phases))
	for _, p := range pl.Phases {
		fmt.Fprintf(&b, "  phase %d %q", p.Index+1, p.Name)
		if p.Warmup {
			b.WriteString(" (warmup: recorded apart, never judged)")
		}
		b.WriteString("\n")
		switch p.Model {
		case Closed:
			fmt.Fprintf(&b, "    model        closed, %d connection(s)", p.Connections)
			if p.ThinkTime > 0 {
				fmt.Fprintf(&b, ", think time %s", p.ThinkTime)
			}
			if p.ExpectedInterval > 0 {
				fmt.Fprintf(&b, ", CO-corrected for one request per %s per connection (expected_rate)", p.ExpectedInterval)
			}
			b.WriteString("\n")
			if len(p.Steps) > 0 {
				var s []string
				for _, st := range p.Steps {
					s = append(s, fmt.Sprintf("%d@%s", st.Connections, st.At))
				}
				fmt.Fprintf(&b, "    staircase    %s\n", strings.Join(s, " → "))
			}
		case Open:
			fmt.Fprintf(&b, "    model        open, %d connection(s), in-flight cap %d per connection, on saturation %s\n",
				p.Connections, p.Inflight, map[bool]string{false: "queue", true: "drop"}[p.Drop])
			if t := p.DispatchText(); t != "" {
				fmt.Fprintf(&b, "    dispatch     %s\n", t)
			}
			switch {
			case p.Rate.From == 0 && p.Rate.To == 0:
				fmt.Fprintf(&b, "    rate         0/s: a pause of %s, 0 %s (the connections stay open)\n", p.Duration, what)
			case p.Rate.From == p.Rate.To:
				fmt.Fprintf(&b, "    rate         %s/s constant, %s arrivals\n", num(p.Rate.From), p.Arrivals)
			case p.Rate.From == 0 && p.Arrivals == "uniform":
				fmt.Fprintf(&b, "    rate         0/s → %s/s linear over %s, uniform arrivals (none at 0/s: the first at %s)\n",
					num(p.Rate.To), p.Rate.Over, Uniform{Curve: p.Rate}.At(0).Round(time.Microsecond))
			default:
				fmt.Fprintf(&b, "    rate         %s/s → %s/s linear over %s, %s arrivals\n", num(p.Rate.From), num(p.Rate.To), p.Rate.Over, p.Arrivals)
			}
		}
		var bound []string
		if p.Duration > 0 {
			bound = append(bound, "duration "+p.Duration.String())
		}
		if p.Requests > 0 {
			bound = append(bound, fmt.Sprintf("%d %s", p.Requests, what))
		}
		fmt.Fprintf(&b, "    bound        %s (then the drain: arrivals still waiting are sent for up to %s, the timeout, and each sent request ends by its own timeout)\n", strings.Join(bound, " or "), p.Grace)
		switch {
		case p.ExpectedRequests >= 0:
			fmt.Fprintf(&b, "    expected     %d %s", p.ExpectedRequests, what)
		case p.Requests > 0:
			fmt.Fprintf(&b, "    expected     at most %d %s (closed model: the rest depends on the target)", p.Requests, what)
		default:
			fmt.Fprintf(&b, "    expected     %s depend on the target (closed model)", what)
		}
		if p.ExpectedDuration >= 0 {
			fmt.Fprintf(&b, "; time %s\n", p.ExpectedDuration)
		} else {
			b.WriteString("; time depends on the target\n")
		}
	}
	rep, tot := pl.ExpectedTotal()
	if rep >= 0 {
		fmt.Fprintf(&b, "expected time: %s per repeat, %s in all (plus dialling and each phase's drain: up to twice the timeout)\n", rep, tot)
	} else {
		b.WriteString("expected time: depends on the target\n")
	}
	var total int64
	for _, p := range pl.Phases {
		if p.ExpectedRequests < 0 {
			total = -1
			break
		}
		total += p.ExpectedRequests
	}
	if total >= 0 {
		fmt.Fprintf(&b, "expected %s: %d per repeat, %d in all\n", what, total, total*int64(pl.Repeats))
	}
	if len(pl.FlowSteps) > 0 {
		// The counts above are arrivals: with flows, iterations.
		fmt.Fprintf(&b, "flows: each iteration counted above runs one flow, an HTTP request per step it reaches (steps: %s)\n", strings.Join(pl.FlowSteps, ", "))
	}
	for _, set := range []struct {
		what  string
		rules []*ScopedRule
	}{{"rule", pl.Rules}, {"reconcile", pl.Expect}} {
		for _, r := range set.rules {
			scope := "every measured phase"
			if r.Phase != "" {
				scope = "phase " + r.Phase
			}
			fmt.Fprintf(&b, "%s: %s  (%s, must hold in every repeat)\n", set.what, r.Source, scope)
		}
	}
	return b.String()
}

// Counted is what the plan's arrivals are, in words: "iterations" when
// the scenario has flows (each arrival runs one iteration of one flow,
// an HTTP request per step it reaches), else "requests". A phase's
// `requests` bound and expected count count them.
func (pl *Plan) Counted() string {
	if len(pl.FlowSteps) > 0 {
		return "iterations"
	}
	return "requests"
}

func num(f float64) string {
	if f == math.Trunc(f) {
		return fmt.Sprintf("%d", int64(f))
	}
	// Three decimals at most, never an exponent: 300001/m is 5000.017/s
	// (%.3g printed "5e+03", beside a 5,000/s threshold it is above).
	s := strings.TrimRight(strconv.FormatFloat(f, 'f', 3, 64), "0")
	return strings.TrimSuffix(s, ".")
}

// DescribeSegment says what segment s of pl runs, phase by phase: its
// share of the connections (and stairs), of the `requests` bound and of
// the expected arrivals; and the timetable on which segments started at
// one instant (Runner.StartAt) start each phase, with gap (Timetable).
func (pl *Plan) DescribeSegment(s Segment, gap time.Duration) string {
	var b strings.Builder
	what := pl.Counted()
	fmt.Fprintf(&b, "segment %s of this plan (runner run --segment %s):\n", s, s)
	for i := range pl.Phases {
		whole := &pl.Phases[i]
		p := s.Phase(whole)
		fmt.Fprintf(&b, "  phase %d %q: %d of %d connection(s)", whole.Index+1, whole.Name, p.Connections, whole.Connections)
		if len(p.Steps) > 0 {
			var st []string
			for _, x := range p.Steps {
				st = append(st, fmt.Sprintf("%d@%s", x.Connections, x.At))
			}
			fmt.Fprintf(&b, " (staircase %s)", strings.Join(st, " → "))
		}
		if whole.Model == Open {
			fmt.Fprintf(&b, "; arrivals i with i mod %d = %d, each at its instant in the whole schedule", s.N, s.K)
		}
		if whole.Requests > 0 {
			fmt.Fprintf(&b, "; %d of the %d %s bound", p.Requests, whole.Requests, what)
		}
		if whole.ExpectedRequests >= 0 {
			fmt.Fprintf(&b, "; %d of %d expected %s", p.ExpectedRequests, whole.ExpectedRequests, what)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "timetable with --start-at T (--phase-gap %s):", gap)
	tt := pl.Timetable(gap)
	for j, at := range tt {
		p := pl.Phases[j%len(pl.Phases)]
		if at < 0 {
			fmt.Fprintf(&b, " repeat %d %q when ready;", j/len(pl.Phases)+1, p.Name)
			continue
		}
		fmt.Fprintf(&b, " repeat %d %q at T+%s;", j/len(pl.Phases)+1, p.Name, at)
	}
	b.WriteString("\n")
	return b.String()
}

// DispatchDefaultNote is " (the default above 5000/s)" when the phase's
// dispatch window is the high-rate default, else "".
func (p *PhasePlan) DispatchDefaultNote() string {
	if !p.DispatchDefault {
		return ""
	}
	return fmt.Sprintf(" (the default above %d/s)", schema.AutoDispatchAbove)
}

// DispatchText says how an open phase groups its arrivals (its dispatch
// window, and whether that is the default of a high rate), or "" when it
// sends each at its own instant.
func (p *PhasePlan) DispatchText() string {
	if p.DispatchWindow <= 0 {
		return ""
	}
	why := ""
	if p.DispatchDefault {
		why = fmt.Sprintf("; the default above %d/s, dispatch_window: 0s sends each at its own instant", schema.AutoDispatchAbove)
	}
	return fmt.Sprintf("grouped: where arrivals are less than %s apart, the pacer wakes %s before a group's first and sends every arrival due within %s of that wake-up with it, each at most %s early (its response time counted from its send)%s",
		p.DispatchWindow, p.DispatchWindow/dispatchLeadDiv, p.DispatchWindow, p.DispatchWindow, why)
}
