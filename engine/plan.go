package engine

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strings"
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
}

// Schedule returns the open-model arrival schedule of the phase for a
// repeat (1-based). A Poisson schedule draws from seed + repeat − 1, so
// repeats are independent samples and a run is still reproducible.
func (p *PhasePlan) Schedule(repeat int) Schedule {
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
	if p.Model == Open && p.Requests > 0 {
		if w := p.Rate.Inverse(float64(p.Requests) + p.Rate.lead()); p.Duration <= 0 || w < p.Duration {
			return w
		}
	}
	return max(p.Duration, 0)
}

// OfferedRate is the mean planned arrival rate of an open phase in
// arrivals per second over its window, Λ(window)/window (a linear ramp
// run to its end: (from+to)/2); 0 for closed. The rate a run actually
// offered is its arrivals over its elapsed time (engine.Offered), which
// differs for Poisson draws.
func (p *PhasePlan) OfferedRate() float64 {
	if p.Model != Open {
		return 0
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

// MaxInflightSlots bounds connections × in-flight of an open phase: the
// generator runs one goroutine per in-flight slot.
const MaxInflightSlots = 100_000

// MaxConnections bounds the connections of a phase (closed, open or a
// ramp's top): each is a socket and a file descriptor, and one machine
// offers about 64,000 ports per target address; a million is far beyond.
const MaxConnections = 1_000_000

// Limits are driver facts that the plan must respect.
type Limits struct {
	// MaxInflight is the largest in-flight cap per connection the driver
	// supports; 0 means 1, −1 means unknown (the driver's configuration
	// failed: its own errors say why, and no cap is checked).
	MaxInflight int
	// InflightHint is what to do when a phase asks for more in flight
	// than MaxInflight, e.g. "set driver.websocket.correlate"; empty: use
	// more connections.
	InflightHint string
	// Timeout is the driver's per-request timeout, used as the
	// end-of-phase grace (docs/design.md, "End of a phase and censoring").
	Timeout time.Duration
}

// Compile turns a validated scenario into a Plan and compiles its rules.
// It returns every problem it finds at once (errors.Join), each naming the
// scenario file, the line and column where known, and the key path.
func Compile(sc *schema.Scenario, lim Limits) (*Plan, error) {
	var errs []error
	if lim.Timeout > MaxTime {
		errs = append(errs, fmt.Errorf("%s: driver timeout %s: at most %s (it also bounds each phase's drain)", sc.File, lim.Timeout, MaxTime))
	}
	maxInflight := max(lim.MaxInflight, 1)
	pl := &Plan{Scenario: sc, Repeats: max(sc.Repeats, 1)}
	for i, ph := range sc.Phases {
		p, err := compilePhase(i, ph, lim.Timeout)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: phases[%d]: %w", sc.File, i, err))
			continue
		}
		if slots := int64(p.Connections) * int64(p.Inflight); p.Model == Open && slots > MaxInflightSlots {
			errs = append(errs, fmt.Errorf("%s: phases[%d].open.inflight: %d connections × in-flight %d = %d requests in flight at once; at most %d (each in-flight slot is a goroutine of the generator, about 8 KiB)", sc.File, i, p.Connections, p.Inflight, slots, MaxInflightSlots))
		}
		if p.Inflight > maxInflight && lim.MaxInflight >= 0 {
			hint := cmp.Or(lim.InflightHint, "use more connections instead")
			errs = append(errs, fmt.Errorf("%s: phases[%d].open.inflight: the driver carries at most %d request(s) per connection at a time; found %d (%s)", sc.File, i, maxInflight, p.Inflight, hint))
		}
		for _, c := range []struct {
			key string
			d   time.Duration
		}{{"duration", p.Duration}, {"think_time", p.ThinkTime}, {"ramp (its staircase's length)", rampLength(p)}} {
			if c.d > MaxTime {
				errs = append(errs, fmt.Errorf("%s: phases[%d].%s: %s is longer than the most a phase can last, %s", sc.File, i, c.key, c.d, MaxTime))
			}
		}
		if p.ExpectedDuration > MaxTime {
			errs = append(errs, fmt.Errorf("%s: phases[%d]: its arrivals take %s at the rate given: longer than the most a phase can last, %s", sc.File, i, p.ExpectedDuration, MaxTime))
		}
		if p.Connections > MaxConnections {
			errs = append(errs, fmt.Errorf("%s: phases[%d]: %d connections: at most %d (each is a socket and a file descriptor of this machine)", sc.File, i, p.Connections, MaxConnections))
		}
		pl.MaxConnections = max(pl.MaxConnections, p.Connections)
		pl.Phases = append(pl.Phases, p)
	}
	if rep, _ := pl.ExpectedTotal(); rep > 0 && int64(pl.Repeats) > int64(MaxTime/rep) {
		errs = append(errs, fmt.Errorf("%s: repeats: %d repeats of %s: longer than %s in all", sc.File, pl.Repeats, rep, MaxTime))
	}
	warmup := map[string]bool{}
	for _, p := range pl.Phases {
		warmup[p.Name] = p.Warmup
	}
	compileRules := func(key string, in []schema.Rule) []*ScopedRule {
		var out []*ScopedRule
		for i, r := range in {
			cr, err := rules.Compile(r.Expr)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s:%d:%d: %s[%d]: %w", sc.File, r.Line, r.Col, key, i, err))
				continue
			}
			if w, ok := warmup[r.Phase]; r.Phase != "" && (!ok || w) {
				// The loader rejects these too; a plan built by hand must not slip through.
				errs = append(errs, fmt.Errorf("%s:%d:%d: %s[%d].phase: %q is not a measured phase (warmup phases are never judged)", sc.File, r.Line, r.Col, key, i, r.Phase))
				continue
			}
			out = append(out, &ScopedRule{Source: r.Expr, Phase: r.Phase, Rule: cr})
		}
		return out
	}
	pl.Rules = compileRules("assert", sc.Assert)
	if sc.Reconcile != nil {
		pl.Expect = compileRules("reconcile.expect", sc.Reconcile.Expect)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return pl, nil
}

// MaxTime bounds every length a plan holds: a phase's duration, its think
// time and staircase, and the request timeout (which also bounds the
// drain). 1000 h (about six weeks) is far beyond any load test, and keeps
// every sum of them (a phase plus twice its timeout, offsets of arrivals)
// far inside a time.Duration, whose range is 292 years.
const MaxTime = 1000 * time.Hour

// rampLength is how long a staircase runs, from its first stair to one
// step after its top (0 for a phase without one).
func rampLength(p PhasePlan) time.Duration {
	if len(p.Steps) == 0 {
		return 0
	}
	return p.Steps[len(p.Steps)-1].At
}

// maxSteps bounds a staircase, so that a typo cannot make the plan huge.
const maxSteps = 10000

func compilePhase(i int, ph schema.Phase, timeout time.Duration) (PhasePlan, error) {
	p := PhasePlan{
		Index:            i,
		Name:             ph.Name,
		Warmup:           ph.Warmup,
		Inflight:         1,
		Duration:         time.Duration(ph.Duration),
		Requests:         int64(ph.Requests),
		Grace:            timeout,
		ExpectedRequests: -1,
		ExpectedDuration: -1,
	}
	if p.Name == "" {
		p.Name = fmt.Sprintf("phase-%d", i+1)
	}
	switch {
	case ph.Closed != nil:
		p.Model = Closed
		p.Connections = ph.Closed.Connections
		p.ThinkTime = time.Duration(ph.Closed.ThinkTime)
		if r := float64(ph.Closed.ExpectedRate); r > 0 {
			// expected_rate is for the whole phase; each connection would
			// send every connections/rate seconds.
			p.ExpectedInterval = secs(float64(p.Connections) / r)
		}
	case ph.Ramp != nil:
		p.Model = Closed
		p.ThinkTime = time.Duration(ph.Ramp.ThinkTime)
		st := ph.Ramp.Connections
		if st.Step <= 0 || st.To <= st.From || st.Every <= 0 {
			return p, fmt.Errorf("ramp.connections: a staircase needs from < to, step > 0 and every > 0; found from %d, to %d, step %d, every %s", st.From, st.To, st.Step, time.Duration(st.Every))
		}
		if steps := (st.To - st.From + st.Step - 1) / st.Step; steps > maxSteps {
			return p, fmt.Errorf("ramp.connections: %d stairs (from %d to %d by %d); at most %d", steps, st.From, st.To, st.Step, maxSteps)
		}
		var at time.Duration
		for n := st.From; ; n += st.Step {
			n = min(n, st.To)
			if n > 0 || len(p.Steps) > 0 {
				p.Steps = append(p.Steps, Step{At: at, Connections: n})
			}
			if n == st.To {
				break
			}
			at += time.Duration(st.Every)
		}
		if len(p.Steps) == 0 {
			return p, fmt.Errorf("ramp.connections: the staircase never opens a connection")
		}
		p.Connections = st.To
		if p.Duration == 0 && p.Requests == 0 {
			// A bare staircase lasts until one step after its top stair.
			p.Duration = at + time.Duration(st.Every)
		}
	case ph.Open != nil:
		p.Model = Open
		o := ph.Open
		p.Connections = max(o.Connections, 1)
		p.Inflight = max(o.Inflight, 1)
		p.Drop = o.OnSaturation == "drop"
		p.Arrivals = o.Arrivals
		if p.Arrivals == "" {
			p.Arrivals = "uniform"
		}
		p.Seed = cmp.Or(o.Seed, 1) // the loader rejects an explicit 0; in Go, 0 is the default
		p.Rate = RateCurve{From: float64(o.Rate.From), To: float64(o.Rate.To), Over: p.Duration}
		if !o.Rate.Ramp {
			p.Rate.To = p.Rate.From
		}
		if p.Rate.From < 0 || p.Rate.To < 0 {
			return p, fmt.Errorf("open.rate: must be 0/s or more; found %g/s to %g/s", p.Rate.From, p.Rate.To)
		}
		if o.Rate.Ramp && p.Duration <= 0 {
			return p, fmt.Errorf("open.rate: a rate ramp needs the phase's duration")
		}
		if o.Rate.Ramp && p.Rate.From == p.Rate.To {
			return p, fmt.Errorf("open.rate: a ramp from %g/s to %g/s goes nowhere; write a constant rate", p.Rate.From, p.Rate.To)
		}
		if p.Rate.From == 0 && !o.Rate.Ramp && p.Duration <= 0 {
			// A count bound alone would never be reached.
			return p, fmt.Errorf("open.rate: 0/s is a pause, and a pause needs the phase's duration")
		}
	default:
		return p, fmt.Errorf("a phase needs one of closed, open or ramp")
	}
	if p.Connections <= 0 {
		return p, fmt.Errorf("connections: must be at least 1; found %d", p.Connections)
	}
	if p.Duration <= 0 && p.Requests <= 0 {
		return p, fmt.Errorf("needs a bound: duration or requests")
	}
	p.ExpectedRequests, p.ExpectedDuration = expected(&p)
	return p, nil
}

// expected computes the arrivals a phase will offer and how long it will
// take, where the plan alone decides them.
//   - open, by duration T: arrivals i with At(i) < T; for the uniform
//     schedule that is ⌈Λ(T) − ℓ⌉ (Λ the area under the rate curve, ℓ = 1
//     for a curve from 0/s, else 0: Uniform.Before), and the Poisson
//     schedule's expectation is Λ(T). A pause (0/s) offers 0.
//   - open, by count n: n arrivals, the last at Λ⁻¹(n − 1 + ℓ).
//   - closed: the count is known only when bounded by it, the length only
//     when bounded by time.
func expected(p *PhasePlan) (int64, time.Duration) {
	switch p.Model {
	case Open:
		n := int64(-1)
		d := p.Duration
		if p.Duration > 0 {
			n = Uniform{Curve: p.Rate}.Before(p.Duration)
		}
		if p.Requests > 0 && (n < 0 || p.Requests < n) {
			n = p.Requests
			d = p.Window()
		}
		return n, d
	default:
		// With both bounds, whichever comes first ends the phase: the
		// count is then an upper bound, not an expectation.
		n, d := int64(-1), time.Duration(-1)
		if p.Requests > 0 && p.Duration <= 0 {
			n = p.Requests
		}
		if p.Duration > 0 {
			d = p.Duration
		}
		return n, d
	}
}

// Describe renders the plan for `runner plan`: per phase the model,
// connections, rate schedule, in-flight cap, bound, expected requests and
// expected time, then the totals.
func (pl *Plan) Describe() string {
	var b strings.Builder
	sc := pl.Scenario
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
			switch {
			case p.Rate.From == 0 && p.Rate.To == 0:
				fmt.Fprintf(&b, "    rate         0/s: a pause of %s, 0 requests (the connections stay open)\n", p.Duration)
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
			bound = append(bound, fmt.Sprintf("%d requests", p.Requests))
		}
		fmt.Fprintf(&b, "    bound        %s (then the drain: arrivals still waiting are sent for up to %s, the timeout, and each sent request ends by its own timeout)\n", strings.Join(bound, " or "), p.Grace)
		switch {
		case p.ExpectedRequests >= 0:
			fmt.Fprintf(&b, "    expected     %d requests", p.ExpectedRequests)
		case p.Requests > 0:
			fmt.Fprintf(&b, "    expected     at most %d requests (closed model: the rest depends on the target)", p.Requests)
		default:
			b.WriteString("    expected     requests depend on the target (closed model)")
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
		fmt.Fprintf(&b, "expected requests: %d per repeat, %d in all\n", total, total*int64(pl.Repeats))
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

func num(f float64) string {
	if f == math.Trunc(f) {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%.3g", f)
}
