package rules

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/metric"
)

// Status is a rule's verdict.
type Status int

// Verdicts, from best to worst as Worst orders them.
const (
	// Pass: the rule holds.
	Pass Status = iota
	// Inconclusive: the measurement cannot support a verdict (too few
	// samples, a metric that was not measured).
	Inconclusive
	// Error: the rule could not be evaluated. Compile rejects every rule
	// that could not be, and an undefined value (a division by zero at run
	// time) is Inconclusive, so Error means a bug; Reason says where.
	Error
	// Fail: the rule does not hold.
	Fail
)

// String returns "pass", "inconclusive", "error" or "fail".
func (s Status) String() string {
	switch s {
	case Pass:
		return "pass"
	case Inconclusive:
		return "inconclusive"
	case Error:
		return "error"
	case Fail:
		return "fail"
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// MarshalText encodes s as its String.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText decodes what MarshalText wrote.
func (s *Status) UnmarshalText(b []byte) error {
	for _, c := range []Status{Pass, Inconclusive, Error, Fail} {
		if string(b) == c.String() {
			*s = c
			return nil
		}
	}
	return fmt.Errorf("unknown status %q", b)
}

// Worst returns the worst of statuses: Fail > Error > Inconclusive > Pass.
// A failed rule wins over an inconclusive one (docs/design.md, "Rules and
// verdicts"). No statuses is Pass.
func Worst(statuses ...Status) Status {
	w := Pass
	for _, s := range statuses {
		w = max(w, s)
	}
	return w
}

// Verdict is one rule judged on one repeat.
type Verdict struct {
	// Status is the verdict.
	Status Status `json:"status"`
	// Observed lists the value of every metric the rule reads, in order of
	// appearance, e.g. "p99=12.3ms errors=0"; unavailable values read
	// "n/a (…)" and too-thin ones carry their sample count.
	Observed string `json:"observed"`
	// Reason says why a rule did not pass: the conditions that were false,
	// what was missing, or the evaluation error. Empty on a plain pass.
	Reason string `json:"reason,omitempty"`
}

// AcrossRepeats is one rule judged across repeats.
type AcrossRepeats struct {
	// Status is the worst of the repeats' statuses: the rule holds only if
	// it holds in every repeat.
	Status Status `json:"status"`
	// Repeats holds each repeat's verdict, in order.
	Repeats []Verdict `json:"repeats"`
	// Reason summarises the repeats that did not pass.
	Reason string `json:"reason,omitempty"`
}

// ClientUsage is the load generator's own resource use in a phase.
type ClientUsage struct {
	// CPU is the process's CPU use as a fraction of the machine (0..1).
	CPU float64
	// GCPauseMax is the longest garbage-collection pause.
	GCPauseMax time.Duration
}

// TargetUsage is the target process's resource use in a phase.
type TargetUsage struct {
	// CPU is the target's CPU use as a fraction of the machine (0..1).
	CPU float64
	// CPUMaxThread is the busiest thread's CPU use as a fraction of one core.
	CPUMaxThread float64
	// RSS is the resident set size in bytes.
	RSS int64
}

// Extras are the metrics a Summary does not hold. Zero values mean "not
// measured" where the doc says so, and rules reading them are
// INCONCLUSIVE.
type Extras struct {
	// Connections is the phase's planned connections (`connections`).
	Connections int64
	// ConnectionsEstablished is how many of them were established.
	ConnectionsEstablished int64
	// OfferedRate is the rate the open phase offered in 1/s, its arrivals
	// over its elapsed time (engine.MeasuredOfferedRate); 0 for the closed
	// model (offered_rate is then unavailable).
	OfferedRate float64
	// Server holds the target's counter deltas over the phase
	// (`server.<name>`); nil or a missing name means not fetched.
	Server map[string]float64
	// Client is the generator's resource use; nil means not measured.
	Client *ClientUsage
	// Target is the target's resource use; nil means not measured.
	Target *TargetUsage
	// Baseline is the environment of the same phase in a baseline run
	// (`baseline.<metric>`); nil means no baseline.
	Baseline *Env
}

// Env is the metrics of one phase of one repeat, as rules read them.
// Build it with NewEnv; the zero Env is a phase with nothing recorded.
type Env struct {
	m metrics
	// What the values rest on, for availability.
	samples map[string]int64 // latency group ("" = response) → samples
	fetched map[string]bool  // server counters that were fetched
	// uncertain server counters: delta known only within ± the value
	// (a merge of segments whose readings a dial-in came between)
	uncertain map[string]float64
	// unknown server counters: read, but their delta cannot be known
	// (engine.PhaseResult.ServerUnknown), with why
	unknown  map[string]string
	requests int64
	answered int64
	elapsed  time.Duration
	client   bool
	target   bool
	baseline *Env
	// steps are the environments of the phase's flow steps, by name
	// (step.NAME.*); each is read only for the per-step metrics.
	steps map[string]*Env
}

// NewEnv builds the rule environment of a phase from its Summary (nil
// reads as empty) and the extras. Metric names and units are those of
// docs/design.md, "Metrics":
// counters are int64, rates float64 per second, error_rate a fraction 0..1,
// latencies time.Duration; p50…stddev are response times of ok requests,
// service.* service times of ok requests, failed.* response times of
// failed requests (every class), corrected.* the coordinated-omission-
// corrected response times of a closed phase with expected_rate (empty,
// so INCONCLUSIVE, elsewhere). unknown_id and duplicate_id count replies
// no request waited for, closes_by[code] connections the server closed
// ("1000", "1006"). errors_by[code] and closes_by[code] are 0 for a code that did
// not occur.
func NewEnv(s *measure.Summary, extra Extras) Env {
	ph := &metric.Phase{Summary: s, Connections: extra.Connections, ConnectionsEstablished: extra.ConnectionsEstablished}
	if extra.OfferedRate > 0 {
		ph.OfferedRate = &extra.OfferedRate
	}
	if c := extra.Client; c != nil {
		ph.Client = &metric.Client{CPU: c.CPU, Cores: 1, GCPauseMax: c.GCPauseMax}
	}
	if t := extra.Target; t != nil {
		ph.Target = &metric.Target{CPU: t.CPU, CPUMaxThread: t.CPUMaxThread, RSS: t.RSS}
	}
	return EnvOf(ph, extra.Server, extra.Baseline)
}

// EnvOf builds the rule environment of a measured phase: every metric of
// the catalogue (metric.All) read from ph, the target's counter deltas
// server (`server.<name>`; nil or a missing name means not fetched), and
// the baseline's environment of the same phase (nil: none).
func EnvOf(ph *metric.Phase, server map[string]float64, baseline *Env) Env {
	s := ph.Summary
	if s == nil {
		s = &measure.Summary{}
	}
	e := Env{
		m:        metrics{dists: map[string]*measure.Dist{}},
		samples:  map[string]int64{},
		requests: s.Requests,
		answered: s.Responded,
		elapsed:  s.Elapsed,
		client:   ph.Client != nil,
		target:   ph.Target != nil,
		baseline: baseline,
	}
	m := &e.m
	derive()
	e.fill(ph)
	m.ErrorsBy = maps.Clone(s.ErrorsByCode)
	if m.ErrorsBy == nil {
		m.ErrorsBy = map[string]int64{}
	}
	m.ClosesBy = maps.Clone(s.ClosesByCode)
	if m.ClosesBy == nil {
		m.ClosesBy = map[string]int64{}
	}
	m.UnknownID, m.DuplicateID = s.UnknownID, s.DuplicateID
	m.Server = maps.Clone(server)
	if m.Server == nil {
		m.Server = map[string]float64{}
	}
	// A fetched counter is in the map even when its delta is 0.
	e.fetched = map[string]bool{}
	for k := range server {
		e.fetched[k] = true
	}
	return e
}

// Uncertain marks server counters whose delta is known only within ±
// the value given (engine.PhaseResult.ServerUncertain): a rule that needs
// one is inconclusive, saying so. It returns e.
func (e Env) Uncertain(u map[string]float64) Env {
	e.uncertain = u
	return e
}

// Unknown marks server counters that were read but whose delta cannot be
// known, with why (engine.PhaseResult.ServerUnknown: a counter that went
// backwards, one not a finite number …): a rule that needs one is
// inconclusive, saying why. It returns e.
func (e Env) Unknown(u map[string]string) Env {
	e.unknown = u
	return e
}

// fill sets every metric of the catalogue (metric.All) that rules read
// to its value in ph (0 when it has none), and the distributions behind
// the latency groups, for their sample counts and other percentiles.
func (e *Env) fill(ph *metric.Phase) {
	for _, d := range []*metric.Dist{metric.Response, metric.Service, metric.Failed, metric.Corrected} {
		x := d.Of(ph)
		if x == nil {
			x = &measure.Dist{}
		}
		e.samples[d.Group] = x.Count()
		e.m.dists[d.Group] = x
	}
	for _, d := range metric.All() {
		if d.Name == "" {
			continue
		}
		v, _ := d.Read(ph)
		g, name := d.Group()
		ref{group: g, name: name}.set(&e.m, typed(d.Unit, v))
	}
}

// WithSteps returns e with the flow steps of its phase, by step name:
// each step's metrics (`step.NAME.p99`) are read from its Phase
// (metric.StepPhase of the step's summary) with the same catalogue
// readers and sample guards as the phase's own. nil means a phase without
// flows: a rule that reads a step there is INCONCLUSIVE ("no step NAME
// in this phase"); the plan rejects such rules before any traffic
// (Rule.CheckSteps).
func (e Env) WithSteps(steps map[string]*metric.Phase) Env {
	e.steps, e.m.Steps = nil, nil
	if len(steps) == 0 {
		return e
	}
	e.steps, e.m.Steps = map[string]*Env{}, map[string]*metrics{}
	for name, ph := range steps {
		sub := EnvOf(ph, nil, nil)
		e.steps[name] = &sub
		e.m.Steps[name] = &sub.m
	}
	return e
}

// WithBaseline returns e with b as its baseline (`baseline.<metric>`);
// b nil means none.
func (e Env) WithBaseline(b *Env) Env {
	e.baseline = b
	return e
}

// availability says whether a metric's value supports a verdict in env;
// note explains a missing or thin value.
func availability(env *Env, r ref) (ok bool, note string) {
	if r.view == "baseline" {
		if env.baseline == nil {
			return false, "no baseline"
		}
		return availability(env.baseline, r.base())
	}
	if r.step != "" {
		sub := env.steps[r.step]
		if sub == nil {
			return false, "no step " + quote(r.step) + " in this phase"
		}
		return availability(sub, ref{group: r.group, name: r.name})
	}
	def := r.def()
	switch def.need {
	case dist:
		n := env.samples[r.group]
		if n == 0 {
			return false, "0 samples"
		}
		if need := minSamples(def.p); n < need {
			return false, fmt.Sprintf("%d %s, needs ≥ %d", n, plural(n, "sample"), need)
		}
	case anyRequest:
		if env.requests == 0 {
			return false, "0 requests"
		}
	case someElapsed:
		if env.elapsed <= 0 {
			return false, "phase of no duration"
		}
	case littleNeed:
		if env.elapsed <= 0 || env.answered == 0 {
			return false, "no responses"
		}
	case offeredNeed:
		if env.m.OfferedRate <= 0 {
			return false, "closed model: no offered rate"
		}
	case clientNeed:
		if !env.client {
			return false, "not measured"
		}
	case fetchedNeed:
		if len(env.fetched) == 0 && len(env.unknown) == 0 {
			return false, "the target's counters were not fetched"
		}
	case targetNeed:
		if !env.target {
			return false, "not measured"
		}
	case serverNeed:
		if r.name == "" {
			if len(env.m.Server) == 0 {
				return false, "not fetched"
			}
		} else if why, ok := env.unknown[r.name]; ok && !env.fetched[r.name] {
			return false, "its change over the phase is unknown: " + why
		} else if u, ok := env.uncertain[r.name]; ok && env.fetched[r.name] {
			return false, fmt.Sprintf("known only within ±%g: the segments' readings of it differed around a dial-in", u)
		} else if !env.fetched[r.name] {
			if len(env.fetched) == 0 {
				return false, "not fetched"
			}
			// Fetched, but the target has no such counter: say which it has.
			known := slices.Sorted(maps.Keys(env.fetched))
			msg := "the target has no counter " + quote(r.name)
			if s := suggest(r.name, known); len(s) > 0 {
				msg += "; did you mean " + orList(s) + "?"
			}
			if len(known) > 12 {
				known = append(known[:12], "…")
			}
			return false, msg + " (its counters: " + strings.Join(known, " ") + ")"
		}
	}
	return true, ""
}

// viewValue is a median(x) or worst(x) across repeats.
type viewValue struct {
	v    any
	ok   bool
	note string
}

// views computes the rule's median(x) and worst(x) over envs: worst is the
// max of a lower-is-better metric and the min of a higher-is-better one;
// median is the middle value, and with an even number of repeats the worse
// of the two middle ones (the upper for metrics without a direction), so a
// median is always a measured value and never an average of percentiles
// (docs/design.md, "Repeats"). Either is unavailable when the metric is
// unavailable in any repeat.
func (r *Rule) views(envs []*Env) map[ref]viewValue {
	out := map[ref]viewValue{}
	for _, x := range r.refs {
		if x.view != viewMedian && x.view != viewWorst {
			continue
		}
		b := x.base()
		vals := make([]any, 0, len(envs))
		vv := viewValue{ok: true}
		for i, e := range envs {
			if ok, note := availability(e, b); !ok {
				vv = viewValue{note: note}
				if len(envs) > 1 {
					vv.note = fmt.Sprintf("repeat %d: %s", i+1, note)
				}
				break
			}
			v := b.get(&e.m)
			if note := nonFinite(v); note != "" {
				vv = viewValue{note: note}
				if len(envs) > 1 {
					vv.note = fmt.Sprintf("repeat %d: %s", i+1, note)
				}
				break
			}
			vals = append(vals, v)
		}
		if vv.ok && len(vals) > 0 {
			slices.SortStableFunc(vals, compareValues)
			dir := b.def().dir
			switch {
			case x.view == viewWorst && dir == higherBetter:
				vv.v = vals[0]
			case x.view == viewWorst:
				vv.v = vals[len(vals)-1]
			case len(vals)%2 == 1:
				vv.v = vals[len(vals)/2]
			case dir == higherBetter:
				vv.v = vals[len(vals)/2-1]
			default:
				vv.v = vals[len(vals)/2]
			}
		}
		if vv.ok && len(vals) == 0 {
			vv = viewValue{note: "no repeats"}
		}
		out[x] = vv
	}
	return out
}

func plural(n int64, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func compareValues(a, b any) int {
	switch x := a.(type) {
	case int64:
		if y, ok := b.(int64); ok {
			return cmp.Compare(x, y)
		}
	case time.Duration:
		if y, ok := b.(time.Duration); ok {
			return cmp.Compare(x, y)
		}
	}
	fa, _ := toFloat(a)
	fb, _ := toFloat(b)
	return cmp.Compare(fa, fb)
}

// Eval judges the rule on one phase of one repeat. median(x) and worst(x)
// read x itself (one repeat); Judge computes them across repeats. Eval
// never panics.
func (r *Rule) Eval(env Env) Verdict {
	if r == nil {
		return Verdict{Status: Error, Reason: "no rule"}
	}
	return r.eval(&env, r.views([]*Env{&env}))
}

// ExtraPercentiles returns the percentiles (in percent, ascending,
// without repeats) that rules read beyond the ones every report shows
// (50, 90, 95, 99, 99.9), in any group, view or baseline: p75 and
// median(service.p99.99) give 75 and 99.99. Nil rules are skipped.
func ExtraPercentiles(rs []*Rule) []float64 {
	var out []float64
	for _, r := range rs {
		if r == nil {
			continue
		}
		for _, x := range r.refs {
			if q, ok := extraPercentile(x.name); ok && (x.group == "" || isLatencyGroup(x.group)) && !slices.Contains(out, q) {
				out = append(out, q)
			}
		}
	}
	slices.Sort(out)
	return out
}

// ServerCounters returns the target's counters the rules rs read by name
// (`server.requests`, `server["m{a=\"1\"}"]`, canonical: labels
// sorted), sorted. every is true when a rule reads the server group
// without a constant name (`len(server)`, `server[code]`): it may read
// any counter.
func ServerCounters(rs []*Rule) (names []string, every bool) {
	for _, r := range rs {
		if r == nil {
			continue
		}
		for _, x := range r.refs {
			switch {
			case x.group != "server":
			case x.name == "":
				every = true
			case !slices.Contains(names, x.name):
				names = append(names, x.name)
			}
		}
	}
	slices.Sort(names)
	return names, every
}

// Judge judges the rule on each repeat's environment of one phase. The rule
// holds only if it holds in every repeat: any Fail is Fail, else any Error
// is Error, else any Inconclusive is Inconclusive. median(x) and worst(x)
// are computed across all repeats. No repeats is Inconclusive.
func Judge(r *Rule, perRepeat []Env) AcrossRepeats {
	if r == nil {
		return AcrossRepeats{Status: Error, Reason: "no rule"}
	}
	if len(perRepeat) == 0 {
		return AcrossRepeats{Status: Inconclusive, Reason: "no repeats"}
	}
	envs := make([]*Env, len(perRepeat))
	for i := range perRepeat {
		envs[i] = &perRepeat[i]
	}
	views := r.views(envs)
	res := AcrossRepeats{Repeats: make([]Verdict, len(envs))}
	var reasons []string
	for i, e := range envs {
		v := r.eval(e, views)
		res.Repeats[i] = v
		res.Status = Worst(res.Status, v.Status)
		if v.Status != Pass {
			if len(envs) == 1 {
				reasons = append(reasons, v.Reason)
			} else {
				reasons = append(reasons, fmt.Sprintf("repeat %d: %s: %s", i+1, v.Status, v.Reason))
			}
		}
	}
	res.Reason = strings.Join(reasons, "; ")
	return res
}

// truth is a three-valued truth value (Kleene).
type truth int

const (
	unknownTruth truth = iota
	falseTruth
	trueTruth
)

// eval judges the rule on env with the given cross-repeat views.
func (r *Rule) eval(env *Env, views map[ref]viewValue) (v Verdict) {
	defer func() {
		if p := recover(); p != nil {
			v = Verdict{Status: Error, Reason: fmt.Sprintf("internal error: %v", p)}
		}
	}()
	in := root{metrics: env.m, Median: &metrics{}, Worst: &metrics{}, Baseline: &metrics{}}
	in.Steps = ownSteps(env.m.Steps)
	if in.ErrorsBy == nil {
		in.ErrorsBy = map[string]int64{}
	}
	if in.ClosesBy == nil {
		in.ClosesBy = map[string]int64{}
	}
	if in.Server == nil {
		in.Server = map[string]float64{}
	}
	if env.baseline != nil {
		b := env.baseline.m // a copy: percentiles without a field are set into it
		b.Steps = ownSteps(b.Steps)
		in.Baseline = &b
	}
	missing := map[ref]string{}
	var observed []string
	for _, x := range r.refs {
		ok, note := availability(env, x)
		var val any
		switch x.view {
		case viewMedian, viewWorst:
			vv := views[x]
			ok, note, val = vv.ok, vv.note, vv.v
			if ok {
				dst := in.Median
				if x.view == viewWorst {
					dst = in.Worst
				}
				x.base().set(dst, val)
			}
		case "baseline":
			if env.baseline != nil {
				val = x.base().get(in.Baseline)
				setExtra(x, in.Baseline, val)
			}
		default:
			val = x.get(&in.metrics)
			setExtra(x, &in.metrics, val)
		}
		if ok {
			if n := nonFinite(val); n != "" {
				ok, note = false, n
			}
		}
		observed = append(observed, x.String()+"="+formatObserved(val, ok, note))
		if !ok {
			missing[x] = note
		}
	}
	v.Observed = strings.Join(observed, " ")

	if len(missing) == 0 {
		out, err := vm.Run(r.prog, in)
		switch {
		case err == nil:
			if b, _ := out.(bool); b {
				v.Status = Pass
				return v
			}
		case !isUndefined(err):
			return Verdict{Status: Error, Observed: v.Observed, Reason: r.runError(err)}
		}
		// False, or some value undefined (a division by zero): judge
		// atom by atom below.
	}

	// Judge with three-valued logic, so that a rule false (or true)
	// whatever the unavailable or undefined values are still fails (or
	// passes), and only a truly open question is inconclusive.
	ctx := &judgeCtx{rule: r, in: in, missing: missing}
	t, why, err := r.top.judge(ctx)
	var notes []string
	for _, x := range r.refs {
		if note, ok := missing[x]; ok {
			notes = append(notes, x.String()+": "+note)
		}
	}
	notes = append(notes, ctx.undefined...)
	whatever := ""
	if len(notes) > 0 {
		whatever = " (whatever " + strings.Join(notes, ", ") + ")"
	}
	switch {
	case err != nil:
		return Verdict{Status: Error, Observed: v.Observed, Reason: r.runError(err)}
	case t == falseTruth:
		v.Status = Fail
		v.Reason = strings.Join(why, "; ") + whatever
		if v.Reason == "" {
			v.Reason = "false"
		}
	case t == trueTruth:
		v.Status = Pass
		v.Reason = "holds whatever " + strings.Join(notes, ", ")
	default:
		v.Status = Inconclusive
		v.Reason = strings.Join(notes, "; ")
	}
	return v
}

// ownSteps copies the flow steps' metrics for one evaluation, which sets
// percentiles without a field into them (setExtra): nothing is shared
// between evaluations.
func ownSteps(steps map[string]*metrics) map[string]*metrics {
	if steps == nil {
		return nil
	}
	out := make(map[string]*metrics, len(steps))
	for k, m := range steps {
		c := *m
		out[k] = &c
	}
	return out
}

// setExtra stores a percentile without a field of its own (p75), computed
// for this evaluation, where the rule reads it. m is the evaluation's own
// copy: its Pcts maps start nil, so nothing is shared between
// evaluations. Other metrics are left alone.
func setExtra(x ref, m *metrics, v any) {
	if _, ok := extraPercentile(x.name); ok {
		x.base().set(m, v)
	}
}

// nonFinite returns why a metric value cannot support a verdict because
// it is not a finite number (a counter fetched from a target as NaN or
// +Inf), or "".
func nonFinite(v any) string {
	bad := func(f float64) bool { return math.IsNaN(f) || math.IsInf(f, 0) }
	switch x := v.(type) {
	case float64:
		if bad(x) {
			return "not a finite number (" + formatFloat(x) + ")"
		}
	case map[string]float64:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if bad(x[k]) {
				return quote(k) + " is not a finite number (" + formatFloat(x[k]) + ")"
			}
		}
	}
	return ""
}

// isUndefined reports whether err is a value without a defined number
// (see undefinedError), as opposed to a failure to evaluate.
func isUndefined(err error) bool {
	var u *undefinedError
	return errors.As(err, &u)
}

// undefinedNote says which operation of the rule had no defined value:
// "division by zero: errors is 0", "integer overflow: requests * 2".
func (r *Rule) undefinedNote(err error) string {
	var u *undefinedError
	errors.As(err, &u)
	var fe *file.Error
	if errors.As(err, &fe) {
		if op, ok := r.ops[fe.From]; ok {
			if u.kind == "division by zero" {
				return u.kind + ": " + op.right + " is 0"
			}
			return u.kind + ": " + op.whole
		}
	}
	return u.kind
}

// runError describes an evaluation error at the user's column.
func (r *Rule) runError(err error) string {
	var fe *file.Error
	if errors.As(err, &fe) {
		return r.rw.errorAtText(fe.From, "%s", fe.Message).Error()
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// judgeCtx is what judging a rule's clauses reads and collects.
type judgeCtx struct {
	rule    *Rule
	in      root
	missing map[ref]string // metrics that cannot support a verdict
	// undefined notes the atoms that computed no defined value.
	undefined []string
}

// judge evaluates the clause in three-valued logic: an atom reading a
// missing metric is unknown; and is false if any side is false, true if
// both are true; or is true if any side is true, false if both are false.
// why lists the atoms that made the clause false, as written.
func (c *clause) judge(ctx *judgeCtx) (t truth, why []string, err error) {
	switch c.op {
	case "not":
		k, _, err := c.kids[0].judge(ctx)
		if err != nil {
			return 0, nil, err
		}
		switch k {
		case trueTruth:
			return falseTruth, []string{"not (" + c.kids[0].describe() + ") is false"}, nil
		case falseTruth:
			return trueTruth, nil, nil
		}
		return unknownTruth, nil, nil
	case "and", "or":
		ts := make([]truth, len(c.kids))
		var falses []string
		for i, k := range c.kids {
			kt, kwhy, err := k.judge(ctx)
			if err != nil {
				return 0, nil, err
			}
			ts[i] = kt
			if kt == falseTruth {
				falses = append(falses, kwhy...)
			}
		}
		want := trueTruth
		if c.op == "or" {
			want = falseTruth
		}
		// and: any false → false, all true → true; or: the mirror image.
		switch {
		case slices.Contains(ts, 3-want): // the absorbing value
			if want == trueTruth {
				return falseTruth, falses, nil
			}
			return trueTruth, nil, nil
		case !slices.Contains(ts, unknownTruth):
			if want == trueTruth {
				return trueTruth, nil, nil
			}
			return falseTruth, falses, nil
		}
		return unknownTruth, nil, nil
	}
	for _, x := range c.refs {
		if _, ok := ctx.missing[x]; ok {
			return unknownTruth, nil, nil
		}
	}
	out, err := vm.Run(c.prog, ctx.in)
	switch {
	case isUndefined(err):
		note := ctx.rule.undefinedNote(err)
		if !slices.Contains(ctx.undefined, note) {
			ctx.undefined = append(ctx.undefined, note)
		}
		return unknownTruth, nil, nil
	case err != nil:
		return 0, nil, err
	}
	if b, _ := out.(bool); b {
		return trueTruth, nil, nil
	}
	return falseTruth, []string{c.text + " is false" + c.difference(ctx.in)}, nil
}

// difference shows both sides of a false comparison and how far apart
// they are: ": 997 vs 1000, difference -3" (a − b); "" when the atom is
// not a comparison of two numbers or two durations.
func (c *clause) difference(in root) string {
	if c.sides == nil {
		return ""
	}
	a, errA := vm.Run(c.sides[0], in)
	b, errB := vm.Run(c.sides[1], in)
	if errA != nil || errB != nil {
		return ""
	}
	if da, ok := a.(time.Duration); ok {
		if db, ok := b.(time.Duration); ok {
			return fmt.Sprintf(": %s vs %s, difference %s", FormatValue(da), FormatValue(db), FormatValue(da-db))
		}
		return ""
	}
	fa, okA := toFloat(a)
	fb, okB := toFloat(b)
	if !okA || !okB {
		return ""
	}
	return fmt.Sprintf(": %s vs %s, difference %s", FormatValue(a), FormatValue(b), FormatValue(fa-fb))
}

func (c *clause) describe() string {
	if c.op == "" {
		return c.text
	}
	parts := make([]string, len(c.kids))
	for i, k := range c.kids {
		parts[i] = k.describe()
	}
	if c.op == "not" {
		return "not " + parts[0]
	}
	return strings.Join(parts, " "+c.op+" ")
}

// formatObserved renders one observed value: "12.3ms", "n/a (0 samples)",
// or a value too thin to judge with its sample count.
func formatObserved(v any, ok bool, note string) string {
	switch {
	case ok:
		return FormatValue(v)
	case v != nil && strings.Contains(note, "needs ≥"):
		return FormatValue(v) + " (" + note + ")"
	}
	return "n/a (" + note + ")"
}

// FormatValue renders a metric value for reports: durations rounded up to
// the microsecond (a reported percentile is an upper bound and stays one),
// integers exactly, floats to six significant digits without exponent.
func FormatValue(v any) string {
	switch x := v.(type) {
	case time.Duration:
		if x > 0 && x < math.MaxInt64-time.Microsecond {
			x = (x + time.Microsecond - 1).Truncate(time.Microsecond)
		}
		return x.String()
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case float64:
		return formatFloat(x)
	case map[string]int64:
		keys := slices.Sorted(maps.Keys(x))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ":" + strconv.FormatInt(x[k], 10)
		}
		return "{" + strings.Join(parts, " ") + "}"
	case map[string]float64:
		keys := slices.Sorted(maps.Keys(x))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ":" + formatFloat(x[k])
		}
		return "{" + strings.Join(parts, " ") + "}"
	}
	return fmt.Sprint(v)
}

func formatFloat(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'g', 6, 64)
	if strings.ContainsAny(s, "e") {
		g, _ := strconv.ParseFloat(s, 64)
		s = strconv.FormatFloat(g, 'f', -1, 64)
	}
	return s
}
