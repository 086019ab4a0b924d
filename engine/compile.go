package engine

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/runner-dev/runner/engine/rules"
	"github.com/runner-dev/runner/schema"
)

// MaxInflightSlots bounds connections × in-flight of an open phase: the
// generator runs one goroutine per in-flight slot.
const MaxInflightSlots = 100_000

// MaxConnections bounds the connections of a phase (closed, open or a
// ramp's top): each is a socket and a file descriptor, and one machine
// offers about 64,000 ports per target address; a million is far beyond.
const MaxConnections = 1_000_000

// MaxDispatchWindow bounds an open phase's dispatch_window (the loader's
// bound, schema.MaxDispatchWindow, checked again for plans built in Go).
const MaxDispatchWindow = schema.MaxDispatchWindow

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
	// TimeoutKey is the key of the driver's timeout in the scenario (e.g.
	// driver.http.timeout), where a problem with it is positioned; ""
	// puts it at the driver.
	TimeoutKey string
	// Compiled holds rules the loader already compiled, by source; a rule
	// not in it is compiled here.
	Compiled map[string]*rules.Rule
}

// problem is a problem of sc under key path (e.g. phases[0]), positioned
// at the line and column of key at (path itself, or a key under it that
// the message is about, e.g. phases[0].open.rate: the nearest key the
// file has). Compile returns its problems as *schema.Error, so that every
// caller prints them as the loader's own: file:line:col: path: message.
func problem(sc *schema.Scenario, path, at, msg string) *schema.Error {
	line, col := sc.Pos(at)
	return &schema.Error{File: sc.File, Line: line, Col: col, Path: path, Msg: msg}
}

// keyError is a problem of a phase about one of its keys (key, e.g.
// open.rate; "" when it is about the phase as a whole).
type keyError struct{ key, msg string }

func (e *keyError) Error() string {
	if e.key == "" {
		return e.msg
	}
	return e.key + ": " + e.msg
}

// phaseError is a problem of phase i of sc found by compilePhase.
func phaseError(sc *schema.Scenario, i int, err error) *schema.Error {
	path := fmt.Sprintf("phases[%d]", i)
	at := path
	if ke, ok := err.(*keyError); ok && ke.key != "" {
		at += "." + ke.key
	}
	return problem(sc, path, at, err.Error())
}

// Compile turns a validated scenario into a Plan and compiles its rules.
// It returns every problem it finds at once (errors.Join), each naming the
// scenario file, the line and column where known, and the key path.
func Compile(sc *schema.Scenario, lim Limits) (*Plan, error) {
	var errs []error
	if lim.Timeout > MaxTime {
		at := cmp.Or(lim.TimeoutKey, "driver")
		errs = append(errs, problem(sc, at, at, fmt.Sprintf("driver timeout %s: at most %s (it also bounds each phase's drain)", lim.Timeout, MaxTime)))
	}
	maxInflight := max(lim.MaxInflight, 1)
	pl := &Plan{Scenario: sc, Repeats: max(sc.Repeats, 1)}
	for i, ph := range sc.Phases {
		p, err := compilePhase(i, ph, lim.Timeout)
		if err != nil {
			errs = append(errs, phaseError(sc, i, err))
			continue
		}
		if slots := int64(p.Connections) * int64(p.Inflight); p.Model == Open && slots > MaxInflightSlots {
			at := fmt.Sprintf("phases[%d].open.inflight", i)
			errs = append(errs, problem(sc, at, at, fmt.Sprintf("%d connections × in-flight %d = %d requests in flight at once; at most %d (each in-flight slot is a goroutine of the generator, about 8 KiB)", p.Connections, p.Inflight, slots, MaxInflightSlots)))
		}
		if p.Inflight > maxInflight && lim.MaxInflight >= 0 {
			hint := cmp.Or(lim.InflightHint, "use more connections instead")
			at := fmt.Sprintf("phases[%d].open.inflight", i)
			errs = append(errs, problem(sc, at, at, fmt.Sprintf("the driver carries at most %d request(s) per connection at a time; found %d (%s)", maxInflight, p.Inflight, hint)))
		}
		for _, c := range []struct {
			key  string
			d    time.Duration
			what string // how the message names it
		}{{"duration", p.Duration, ""}, {"think_time", p.ThinkTime, ""}, {"ramp", rampLength(p), " (its staircase's length)"}} {
			if c.d > MaxTime {
				at := fmt.Sprintf("phases[%d].%s", i, c.key)
				errs = append(errs, problem(sc, at+c.what, at, fmt.Sprintf("%s is longer than the most a phase can last, %s", c.d, MaxTime)))
			}
		}
		if p.ExpectedDuration > MaxTime {
			at := fmt.Sprintf("phases[%d]", i)
			errs = append(errs, problem(sc, at, at, fmt.Sprintf("its arrivals take %s at the rate given: longer than the most a phase can last, %s", p.ExpectedDuration, MaxTime)))
		}
		if p.Connections > MaxConnections {
			at := fmt.Sprintf("phases[%d]", i)
			errs = append(errs, problem(sc, at, at, fmt.Sprintf("%d connections: at most %d (each is a socket and a file descriptor of this machine)", p.Connections, MaxConnections)))
		}
		pl.MaxConnections = max(pl.MaxConnections, p.Connections)
		pl.Phases = append(pl.Phases, p)
	}
	if rep, _ := pl.ExpectedTotal(); rep > 0 && int64(pl.Repeats) > int64(MaxTime/rep) {
		errs = append(errs, problem(sc, "repeats", "repeats", fmt.Sprintf("%d repeats of %s: longer than %s in all", pl.Repeats, rep, MaxTime)))
	}
	warmup := map[string]bool{}
	for _, p := range pl.Phases {
		warmup[p.Name] = p.Warmup
	}
	compileRules := func(key string, in []schema.Rule) []*ScopedRule {
		var out []*ScopedRule
		for i, r := range in {
			cr, ok := lim.Compiled[r.Expr]
			if !ok {
				var err error
				if cr, err = rules.Compile(r.Expr); err != nil {
					errs = append(errs, &schema.Error{File: sc.File, Line: r.Line, Col: r.Col, Path: fmt.Sprintf("%s[%d]", key, i), Msg: err.Error()})
					continue
				}
			}
			if w, ok := warmup[r.Phase]; r.Phase != "" && (!ok || w) {
				// The loader rejects these too; a plan built by hand must not slip through.
				errs = append(errs, &schema.Error{File: sc.File, Line: r.Line, Col: r.Col, Path: fmt.Sprintf("%s[%d].phase", key, i), Msg: fmt.Sprintf("%q is not a measured phase (warmup phases are never judged)", r.Phase)})
				continue
			}
			out = append(out, &ScopedRule{Source: r.Expr, Phase: r.Phase, Rule: cr})
		}
		return out
	}
	// Every flow step's name, in mix order (driver.http.flows): what a
	// rule's step.NAME.* may name; none without flows.
	if h := sc.Driver.HTTP; h != nil {
		for _, f := range h.Flows {
			for _, st := range f.Steps {
				pl.FlowSteps = append(pl.FlowSteps, st.Name)
			}
		}
	}
	pl.Rules = compileRules("assert", sc.Assert)
	if sc.Reconcile != nil {
		pl.Expect = compileRules("reconcile.expect", sc.Reconcile.Expect)
	}
	errs = append(errs, pl.ruleStepErrors()...)
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
			return p, &keyError{"ramp.connections", fmt.Sprintf("a staircase needs from < to, step > 0 and every > 0; found from %d, to %d, step %d, every %s", st.From, st.To, st.Step, time.Duration(st.Every))}
		}
		if steps := (st.To - st.From + st.Step - 1) / st.Step; steps > maxSteps {
			return p, &keyError{"ramp.connections", fmt.Sprintf("%d stairs (from %d to %d by %d); at most %d", steps, st.From, st.To, st.Step, maxSteps)}
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
			return p, &keyError{"ramp.connections", "the staircase never opens a connection"}
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
		switch {
		case o.DispatchWindow != nil:
			p.DispatchWindow = time.Duration(*o.DispatchWindow)
		case max(o.Rate.From, o.Rate.To) > schema.AutoDispatchAbove && !p.Drop:
			p.DispatchWindow, p.DispatchDefault = schema.DefaultDispatchWindow, true
		}
		if p.Drop && p.DispatchWindow > 0 {
			return p, &keyError{"open.dispatch_window", "a dispatch window sends arrivals early, which changes which ones on_saturation: drop drops"}
		}
		if p.DispatchWindow < 0 || p.DispatchWindow > MaxDispatchWindow {
			return p, &keyError{"open.dispatch_window", fmt.Sprintf("must be from 0 to %s; found %s", MaxDispatchWindow, p.DispatchWindow)}
		}
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
			return p, &keyError{"open.rate", fmt.Sprintf("must be 0/s or more; found %g/s to %g/s", p.Rate.From, p.Rate.To)}
		}
		if o.Rate.Ramp && p.Duration <= 0 {
			return p, &keyError{"open.rate", "a rate ramp needs the phase's duration"}
		}
		if o.Rate.Ramp && p.Rate.From == p.Rate.To {
			return p, &keyError{"open.rate", fmt.Sprintf("a ramp from %g/s to %g/s goes nowhere; write a constant rate", p.Rate.From, p.Rate.To)}
		}
		if p.Rate.From == 0 && !o.Rate.Ramp && p.Duration <= 0 {
			// A count bound alone would never be reached.
			return p, &keyError{"open.rate", "0/s is a pause, and a pause needs the phase's duration"}
		}
	default:
		return p, &keyError{"", "a phase needs one of closed, open or ramp"}
	}
	if p.Connections <= 0 {
		return p, &keyError{"connections", fmt.Sprintf("must be at least 1; found %d", p.Connections)}
	}
	if p.Duration <= 0 && p.Requests <= 0 {
		return p, &keyError{"", "needs a bound: duration or requests"}
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
