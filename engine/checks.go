package engine

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"time"

	"github.com/runner-dev/runner/drivers"
)

// Warning is an honesty warning (DESIGN.md §6): something that limits how
// far a run's numbers can be trusted.
type Warning struct {
	// Code names the kind: closed-model, single-repeat, achieved-below-offered,
	// littles-law, few-samples, connections-missing, client-side-errors,
	// schedule-lateness, client-cpu.
	Code string `json:"code"`
	// Phase and Repeat locate it; empty and 0 for the whole run.
	Phase  string `json:"phase,omitempty"`
	Repeat int    `json:"repeat,omitempty"`
	// Message says what was seen and what it means.
	Message string `json:"message"`
	// Invalidates is true when the warning means the measurement cannot
	// support a verdict (the load generator itself was the bottleneck):
	// a run that would pass is then inconclusive (DESIGN.md §5).
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
	// minLateArrivals: a run is invalidated by its own lateness only when
	// more than 1 % of its arrivals and at least this many were late, so
	// that a single stall of a shared machine in a short run does not.
	minLateArrivals = 10
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
				fix = "the CO-corrected histogram (expected_rate) is reported apart; it adds samples only where a response took longer than the expected interval"
			}
			ws = append(ws, Warning{Code: "closed-model", Phase: p.Name, Message: fmt.Sprintf("phase %s: closed model: the tail may be under-reported (coordinated omission): a slow response also delays the requests behind it; %s", p.Name, fix)})
		}
	}
	cores := float64(runtime.GOMAXPROCS(0))
	for _, pr := range res.Phases {
		p, s := pr.Phase, pr.Summary
		at := func(code, format string, a ...any) {
			ws = append(ws, Warning{Code: code, Phase: p.Name, Repeat: pr.Repeat,
				Message: fmt.Sprintf("repeat %d, phase %s: ", pr.Repeat, p.Name) + fmt.Sprintf(format, a...)})
		}
		if pr.ConnectionsEstablished < pr.ConnectionsRequested {
			at("connections-missing", "%d of %d connections established: the requested concurrency was not reached", pr.ConnectionsEstablished, pr.ConnectionsRequested)
		}
		if p.Model == Open && !pr.Interrupted {
			off := p.OfferedRate()
			if ach := s.AchievedRate(); off > 0 && ach < AchievedFloor*off {
				at("achieved-below-offered", "achieved %.1f/s is %.0f %% of the offered %.1f/s: the target or the in-flight cap could not take the load (dropped %d)", ach, 100*ach/off, off, s.Dropped)
			}
		}
		if s.Responded >= minLittleSamples && !pr.Interrupted && !p.Warmup {
			l := s.LittleL()
			var want float64
			var what, why string
			if p.Model == Closed && len(p.Steps) == 0 {
				// Every connection is either waiting for a response or
				// thinking: N = λ·(W + Z), so λ·W should be N·W/(W+Z).
				want = float64(pr.ConnectionsRequested)
				what = fmt.Sprintf("%d connections", pr.ConnectionsRequested)
				if p.ThinkTime > 0 && s.Responded > 0 {
					l += float64(s.Responded) / s.Elapsed.Seconds() * p.ThinkTime.Seconds()
					what += " (think time included)"
				}
				why = "requests that ended without a response (timeouts, resets) are not in W, or connections sat idle"
			} else {
				// Open model: W counts from the intended start, the
				// in-flight mean only from the send; the gap is time spent
				// waiting in the client for a free slot or for the pacer.
				want = s.InflightMean()
				what = fmt.Sprintf("mean in-flight at the target %.2f", want)
				why = "requests waited in the client (for a free connection, or a late pacer) or ended without a response"
			}
			if want > 0 && math.Abs(l-want)/want > LittleTolerance {
				at("littles-law", "Little's law does not reconcile: λ·W = %.2f vs %s (off by %.0f %%): %s", l, what, 100*math.Abs(l-want)/want, why)
			}
		}
		if !p.Warmup && s.Response.Count() > 0 && s.Response.Count() < 1000 {
			at("few-samples", "p99 from %d samples (needs 1000): it is the tail of a handful of requests", s.Response.Count())
		}
		switch {
		case !p.Warmup && pr.LateArrivals*100 > s.Arrivals && pr.LateArrivals >= minLateArrivals:
			at("schedule-lateness", "the load generator dispatched %d of %d arrivals more than %s late (up to %s) while connections were free: it fell behind its own schedule, so the run measures the generator, not the target", pr.LateArrivals, s.Arrivals, LatenessLimit, pr.LatenessMax.Round(time.Microsecond))
			ws[len(ws)-1].Invalidates = true
		case pr.LatenessMax > LatenessLimit:
			at("schedule-lateness", "the load generator dispatched an arrival %s late while connections were free (%d of %d arrivals later than %s): a hiccup of the client machine", pr.LatenessMax.Round(time.Microsecond), pr.LateArrivals, s.Arrivals, LatenessLimit)
		}
		if pr.ClientCPU > 0.9*cores {
			at("client-cpu", "client CPU %.0f %% of %d cores: the load generator is saturated and may be the bottleneck", 100*pr.ClientCPU, int(cores))
			ws[len(ws)-1].Invalidates = !p.Warmup
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
	}
	return ws
}
