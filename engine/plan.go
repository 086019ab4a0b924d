package engine

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/runner-dev/runner/engine/rules"
	"github.com/runner-dev/runner/schema"
)

// Model is a phase's load model.
type Model string

// The load models (docs/design.md, "Vocabulary").
const (
	// Closed: a fixed number of connections, each sends its next request
	// only after the previous response (plus think time).
	Closed Model = "closed"
	// Open: requests arrive on a schedule whatever the target does.
	Open Model = "open"
)

// Plan is a compiled scenario: a pure function of it, computed before any
// traffic. Every repeat runs the same phases.
type Plan struct {
	// Scenario is the validated scenario the plan came from.
	Scenario *schema.Scenario `json:"-"`
	// Repeats is how many times all phases run, ≥ 1.
	Repeats int `json:"repeats"`
	// Phases in order.
	Phases []PhasePlan `json:"phases"`
	// Rules are the compiled `assert` rules.
	Rules []*ScopedRule `json:"rules"`
	// Expect are the compiled `reconcile.expect` rules.
	Expect []*ScopedRule `json:"expect,omitempty"`
	// MaxConnections is the largest number of connections any phase holds
	// open at once; the descriptor check uses it.
	MaxConnections int `json:"max_connections"`
	// FlowSteps are the names of the steps of the scenario's flows
	// (driver.http.flows), in mix order and unique; nil for a scenario
	// without flows. Rules read them as step.NAME.* and name no other
	// step (CheckRuleSteps).
	FlowSteps []string `json:"flow_steps,omitempty"`
}

// CheckRuleSteps checks that every rule of the plan (assert and
// reconcile.expect) reads only steps of FlowSteps, and none when the
// scenario has no flows: an error per rule that names another, at the
// rule's line and column in the scenario and with the nearest step names
// (rules.Rule.CheckSteps). Compile checks this; a plan built by hand with
// FlowSteps set can check it too.
func (pl *Plan) CheckRuleSteps() error { return errors.Join(pl.ruleStepErrors()...) }

// ruleStepErrors are CheckRuleSteps' errors, one per rule, each a
// *schema.Error.
func (pl *Plan) ruleStepErrors() []error {
	var errs []error
	for _, g := range []struct {
		key string
		rs  []*ScopedRule
	}{{"assert", pl.Rules}, {"reconcile.expect", pl.Expect}} {
		for i, sr := range g.rs {
			err := sr.Rule.CheckSteps(pl.FlowSteps)
			if err == nil {
				continue
			}
			se := &schema.Error{Path: fmt.Sprintf("%s[%d]", g.key, i), Msg: err.Error()}
			if pl.Scenario != nil {
				se.File = pl.Scenario.File
				if at, line, col := ruleAt(pl.Scenario, g.key, sr.Source); at >= 0 {
					se.Path, se.Line, se.Col = fmt.Sprintf("%s[%d]", g.key, at), line, col
				}
			}
			errs = append(errs, se)
		}
	}
	return errs
}

// ruleAt finds the rule src in the scenario's list key (assert or
// reconcile.expect): its index there, line and column; at is −1 when it
// is not there.
func ruleAt(sc *schema.Scenario, key, src string) (at, line, col int) {
	in := sc.Assert
	if key != "assert" {
		if sc.Reconcile == nil {
			return -1, 0, 0
		}
		in = sc.Reconcile.Expect
	}
	for i, r := range in {
		if r.Expr == src {
			return i, r.Line, r.Col
		}
	}
	return -1, 0, 0
}

// ServerCounters returns the target's counters the plan's rules (assert
// and reconcile.expect) read by name, in their canonical form (labels
// sorted) and sorted; nil when the rules read none by name, or read the
// server group by a computed key (`server[code]`, `len(server)`): then
// any counter may be theirs. The shared-target check and the console's
// `server Δ` line look only at these.
func (pl *Plan) ServerCounters() []string {
	if pl == nil {
		return nil
	}
	var rs []*rules.Rule
	for _, sr := range slices.Concat(pl.Rules, pl.Expect) {
		rs = append(rs, sr.Rule)
	}
	names, every := rules.ServerCounters(rs)
	if every {
		return nil
	}
	return names
}

// ScopedRule is a compiled rule and the phase it is scoped to ("" means
// every non-warmup phase).
type ScopedRule struct {
	Source string      `json:"rule"`
	Phase  string      `json:"phase,omitempty"`
	Rule   *rules.Rule `json:"-"`
}

// Step is one stair of a connection ramp: from offset At on, Connections
// connections run.
type Step struct {
	At          time.Duration `json:"at"`
	Connections int           `json:"connections"`
}

// PhasePlan is one phase of a repeat.
type PhasePlan struct {
	Index  int    `json:"index"` // 0-based position in the repeat
	Name   string `json:"name"`
	Warmup bool   `json:"warmup,omitempty"`
	Model  Model  `json:"model"`
	// Connections is the number of connections the phase runs (at the top
	// of a ramp).
	Connections int `json:"connections"`
	// Steps is the connection staircase of a ramp phase; nil otherwise.
	Steps []Step `json:"steps,omitempty"`
	// ThinkTime is the closed model's pause after each response.
	ThinkTime time.Duration `json:"think_time,omitempty"`
	// ExpectedInterval is 1/expected_rate per connection for the closed
	// model's coordinated-omission correction; 0 when not asked for.
	ExpectedInterval time.Duration `json:"expected_interval,omitempty"`
	// Rate is the open model's arrival rate curve (per second).
	Rate RateCurve `json:"rate"`
	// Arrivals is "uniform" or "poisson"; Seed seeds the latter.
	Arrivals string `json:"arrivals,omitempty"`
	Seed     int64  `json:"seed,omitempty"`
	// Inflight caps requests in flight per connection.
	Inflight int `json:"inflight"`
	// Drop is true when arrivals that find every connection at its cap
	// are counted as dropped instead of waiting.
	Drop bool `json:"drop,omitempty"`
	// DispatchWindow is the open model's grouping of arrivals: an
	// arrival due less than this after the first of its group is sent
	// with it, up to the window early (pace); 0 sends each at its own
	// instant. At most MaxDispatchWindow.
	DispatchWindow time.Duration `json:"dispatch_window_ns,omitempty"`
	// DispatchDefault is true when DispatchWindow is the default of a
	// phase whose rate goes above schema.AutoDispatchAbove (the scenario
	// gave none).
	DispatchDefault bool `json:"dispatch_window_default,omitempty"`
	// Duration bounds the phase in time; 0 means bounded by Requests only.
	Duration time.Duration `json:"duration"`
	// Requests bounds the phase by count; 0 means bounded by time only.
	Requests int64 `json:"requests,omitempty"`
	// Grace is how long requests in flight at the end may still finish.
	Grace time.Duration `json:"grace"`
	// ExpectedRequests is the number of arrivals the plan will offer, or
	// -1 when it depends on the target (closed model bounded by time).
	ExpectedRequests int64 `json:"expected_requests"`
	// ExpectedDuration is how long the phase will take, or -1 when it
	// depends on the target (closed model bounded by count).
	ExpectedDuration time.Duration `json:"expected_duration"`

	// whole is the whole plan's phase when this is a segment's share of
	// it (Segment.Phase), nil otherwise; segment is then that segment.
	whole   *PhasePlan
	segment Segment
}

// Schedule returns the open-model arrival schedule of the phase for a
// repeat (1-based). A Poisson schedule draws from seed + repeat − 1, so
// repeats are independent samples and a run is still reproducible.
func (p *PhasePlan) Schedule(repeat int) Schedule {
	if p.whole != nil {
		// A segment's arrivals are its share of the whole schedule's,
		// each at its global intended offset.
		return p.segment.Schedule(p.whole.Schedule(repeat))
	}
	if p.Arrivals == "poisson" {
		return NewPoisson(p.Rate, p.Seed+int64(repeat-1))
	}
	return Uniform{Curve: p.Rate}
}

// Window is the phase's own length, the denominator of its rates, when
// the plan decides it: the duration of a phase bounded by time, or for an
// open phase whose count bound comes first, the time its n arrivals span:
// up to where arrival n, the first not sent, would come, Λ⁻¹(n + ℓ)
// (n/rate at a constant rate; ℓ = 1 for a curve from 0/s, see
// Uniform). Zero when the phase lasts as long as its requests take
// (closed model bounded by count).
func (p *PhasePlan) Window() time.Duration {
	if p.whole != nil {
		return p.whole.Window()
	}
	if p.Model == Open && p.Requests > 0 {
		if w := p.Rate.Inverse(float64(p.Requests) + p.Rate.lead()); p.Duration <= 0 || w < p.Duration {
			return w
		}
	}
	return max(p.Duration, 0)
}

// PlannedOfferedRate is the mean planned arrival rate of an open phase
// in arrivals per second over its window, Λ(window)/window (a linear ramp
// run to its end: (from+to)/2); 0 for closed. The rate a run actually
// offered is its arrivals over its elapsed time (MeasuredOfferedRate),
// which differs for Poisson draws.
func (p *PhasePlan) PlannedOfferedRate() float64 {
	if p.Model != Open {
		return 0
	}
	if w := p.whole; w != nil {
		// A segment offers its share of the whole phase's arrivals.
		if w.ExpectedRequests <= 0 {
			return w.PlannedOfferedRate() / float64(p.segment.N)
		}
		return w.PlannedOfferedRate() * float64(p.ExpectedRequests) / float64(w.ExpectedRequests)
	}
	if w := p.Window(); w > 0 {
		return p.Rate.Count(w) / w.Seconds()
	}
	return (p.Rate.From + p.Rate.To) / 2
}

// ExpectedTotal is the expected wall-clock length of one repeat and of
// the whole run (-1 when some phase's length depends on the target).
func (pl *Plan) ExpectedTotal() (repeat, total time.Duration) {
	for _, p := range pl.Phases {
		if p.ExpectedDuration < 0 {
			return -1, -1
		}
		repeat += p.ExpectedDuration
	}
	if repeat > 0 && int64(pl.Repeats) > int64(math.MaxInt64/repeat) {
		return repeat, math.MaxInt64 // saturated; Compile refuses such a plan
	}
	return repeat, repeat * time.Duration(pl.Repeats)
}

// DefaultPhaseGap is the timetable's pause after a phase's drain bound,
// before the next phase's instant: time for the requests still in flight
// to end by their timeouts' margin, the counters to be fetched and the
// next repeat's connections dialled. Runner.PhaseGap changes it.
const DefaultPhaseGap = 2 * time.Second

// Timetable is when each phase of the run starts, as an offset from the
// first phase's start, one entry per (repeat, phase) in run order: a
// phase starts its predecessor's expected duration, drain bound (Grace)
// and gap after the predecessor's start. Segments started at one instant
// (Runner.StartAt) then start every phase together. An entry is -1 after
// a phase whose length the plan does not fix (a closed phase bounded by
// count): from there on phases start when ready.
func (pl *Plan) Timetable(gap time.Duration) []time.Duration {
	var out []time.Duration
	var at time.Duration
	for range pl.Repeats {
		for _, p := range pl.Phases {
			out = append(out, at)
			if at < 0 || p.ExpectedDuration < 0 || at > MaxTime*1000 {
				// Unknown, or beyond any run (Compile bounds a run to MaxTime).
				at = -1
				continue
			}
			at += p.ExpectedDuration + p.Grace + gap
		}
	}
	return out
}
