// Package metric is the one catalogue of the headline metrics of a
// (repeat, phase): each metric is declared once, in Catalogue, with its
// name in rules, its key in the JSON report, its TSV column, which way it
// gets worse, its unit, the samples a percentile needs, and the function
// that reads it from a phase. The rules' environment and `runner
// validate`'s list of names (engine/rules), the JSON metrics block
// (engine.Metrics), the repeat summary (engine.Across), the TSV columns
// (reports) and `runner compare` (reports/compare) all read this table.
//
// It imports only engine/measure, so that every one of them can import
// it.
package metric

import (
	"math"
	"strings"
	"sync"
	"time"

	"github.com/runner-dev/runner/engine/measure"
)

// Unit is what a metric's value (as Def.Read returns it) counts.
type Unit int

const (
	// Count is a whole number of events (requests, errors), exact up to
	// 2⁵³.
	Count Unit = iota
	// PerSecond is a rate: events per second.
	PerSecond
	// Fraction is a share in [0, 1] (error_rate).
	Fraction
	// Mean is a mean number of requests at once (Little's L,
	// inflight_mean).
	Mean
	// Duration is a time in nanoseconds (a time.Duration as float64,
	// exact up to 2⁵³ ns, about 104 days); reports show milliseconds.
	Duration
	// CoreShare is CPU time over wall time: 1.0 is one core busy (or, for
	// a share of the machine or of the cores it could use, all of them).
	CoreShare
	// Bytes is a size in bytes.
	Bytes
)

// Suffix is the unit as `runner compare` writes it after a metric's
// name: "/s", "ms", or "" for a number without a unit.
func (u Unit) Suffix() string {
	switch u {
	case PerSecond:
		return "/s"
	case Duration:
		return "ms"
	}
	return ""
}

// Direction is which way a metric gets worse. It picks worst(x) in
// rules (the max of a metric where higher is worse, the min of one where
// lower is worse) and the median of an even count of repeats (the worse
// of the two middle values), and tells `runner compare` a regression.
type Direction int

const (
	// Neutral: no better or worse (worst(x) is an error in a rule).
	Neutral Direction = iota
	// HigherIsWorse: latencies, errors, Little's L.
	HigherIsWorse
	// LowerIsWorse: throughput, rates achieved, counts of successes.
	LowerIsWorse
)

// Need is what a metric's value must rest on to support a verdict; a
// rule that reads it otherwise is INCONCLUSIVE.
type Need int

const (
	// Always: every value is conclusive.
	Always Need = iota
	// Samples: a latency statistic needs Def.MinSamples samples in its
	// distribution.
	Samples
	// Requests: at least one request sent (error_rate).
	Requests
	// Elapsed: a phase that lasted (the rates).
	Elapsed
	// Responses: a phase that lasted and a response (Little's L).
	Responses
	// OpenModel: an open phase (offered_rate).
	OpenModel
	// ClientMeasured: the load generator's resource use was measured.
	ClientMeasured
	// TargetMeasured: the target process's resource use was measured.
	TargetMeasured
	// CountersFetched: the target's counters were read before and after
	// the phase (fetches).
	CountersFetched
)

// Client is the load generator's own resource use in a phase.
type Client struct {
	// CPU is this process's CPU time over the phase's wall time, in
	// cores (1.0: one core busy; getrusage user+system).
	CPU float64
	// Cores is how many cores it could use (≥ 1); client.cpu is CPU/Cores.
	Cores float64
	// GCPauseMax is the longest garbage-collector pause.
	GCPauseMax time.Duration
}

// Target is the target process's resource use in a phase.
type Target struct {
	// CPU is its CPU time over wall time as a share of the machine (0..1).
	CPU float64
	// CPUMaxThread is its busiest thread's, as a share of one core.
	CPUMaxThread float64
	// RSS is its resident set at the phase's end, in bytes.
	RSS int64
}

// Phase is what a metric is read from: one measured (repeat, phase).
type Phase struct {
	// Summary holds every count and distribution; nil reads as empty.
	Summary *measure.Summary
	// Connections is the phase's planned connections (at the top of a
	// ramp); ConnectionsEstablished how many were open when it started.
	Connections, ConnectionsEstablished int64
	// OfferedRate is the rate an open phase offered, in arrivals per
	// second of its elapsed time (engine.MeasuredOfferedRate); nil for
	// the closed model or a phase of no duration.
	OfferedRate *float64
	// Client and Target are nil when not measured.
	Client *Client
	Target *Target
	// Fetches is how many of the runner's own counter fetches fall
	// between the readings a phase's counter deltas are taken from
	// (engine.PhaseResult.Fetches); 0 when counters are not fetched.
	Fetches int64

	failed *measure.Dist // Summary.FailedAll, merged once
}

func (p *Phase) summary() *measure.Summary {
	if p.Summary == nil {
		return &measure.Summary{}
	}
	return p.Summary
}

// StepPhase is what the metrics of one flow step are read from: a Phase
// with only the step's Summary (nil reads as empty). Only metrics with
// Def.Step read anything meaningful from it.
func StepPhase(s *measure.Summary) *Phase { return &Phase{Summary: s} }

// Dist is one latency distribution of a phase.
type Dist struct {
	// Group is its group in rules ("" for the response time, whose
	// statistics are top-level: p99; "service" for service.p99); Rules
	// is false when rules cannot read it.
	Group string
	Rules bool
	// JSON is its object's key in the JSON metrics block ("" none).
	JSON string
	// Step is true when a flow step has this distribution of its own
	// (its statistics are then read per step: step.NAME.service.p99).
	Step bool
	// Of returns the distribution; nil when the phase has none (then
	// every statistic is unavailable and it is left out of the JSON).
	Of func(*Phase) *measure.Dist
}

// The latency distributions of a phase.
var (
	// Response is the response time of ok requests.
	Response = &Dist{Group: "", Rules: true, JSON: "response_time", Step: true, Of: func(p *Phase) *measure.Dist { return &p.summary().Response }}
	// Service is the service time of ok requests (from the send).
	Service = &Dist{Group: "service", Rules: true, JSON: "service_time", Step: true, Of: func(p *Phase) *measure.Dist { return &p.summary().Service }}
	// Failed is the response time of failed requests, every class merged.
	Failed = &Dist{Group: "failed", Rules: true, Step: true, Of: func(p *Phase) *measure.Dist {
		if p.failed == nil {
			p.failed = p.summary().FailedAll()
		}
		return p.failed
	}}
	// Corrected is the coordinated-omission-corrected response time of a
	// closed phase with expected_rate; nil elsewhere.
	Corrected = &Dist{Group: "corrected", Rules: true, JSON: "corrected_response_time", Of: func(p *Phase) *measure.Dist { return p.summary().Corrected }}
	// SendLag is how long sent requests waited in the client (Sent −
	// Intended).
	SendLag = &Dist{Group: "send_lag", JSON: "send_lag", Of: func(p *Phase) *measure.Dist { return &p.summary().SendLag }}
	// SendEarly is how early requests went out before their intended
	// start (Intended − Sent), of those sent early by a dispatch window.
	SendEarly = &Dist{Group: "send_early", JSON: "send_early", Of: func(p *Phase) *measure.Dist { return &p.summary().SendEarly }}
)

// Def declares one metric.
type Def struct {
	// Name is how a rule reads it ("p99", "littleL", "service.p99",
	// "client.cpu"); "" when rules cannot.
	Name string
	// JSON is its key in the JSON report's metrics block, as a path
	// ("little_l", "response_time.p99_ms"); "" when absent there.
	JSON string
	// TSV is its TSV column ("service_p99"); "" for none. Missing is the
	// cell when Read has no value ("n/a" for a statistic without samples,
	// "-" for what does not apply).
	TSV, Missing string
	// Across is its key in the repeat summary (engine.Across: median and
	// range over the repeats); "" when not summarised there.
	Across string
	// Compare is its position in `runner compare`'s table (1 first);
	// 0 when not compared. Judged is true when a change has a good and a
	// bad direction whatever the setup (latency, error rate); throughput,
	// the achieved rate and Little's L follow the offered load, so their
	// change is only higher or lower.
	Compare int
	Judged  bool
	// Unit is what Read returns; Worse which way the metric gets worse.
	Unit  Unit
	Worse Direction
	// Need is what its value must rest on for a verdict.
	Need Need
	// Step is true when rules read it per flow step too, as
	// step.NAME.<Name>, from a Phase that holds only the step's Summary
	// (StepPhase): the metrics of a step's own requests (latencies,
	// counts, rates, errors, error_rate). It is false for what a step
	// does not have of its own: connections, the phase's duration, the
	// arrival process (dropped, offered_rate), the correlation of
	// replies (unknown_id, duplicate_id), the counter fetches and the
	// client's and target's resources; a rule that reads one of those
	// per step is a compile error. Metrics added with Add are not read
	// per step unless they set it.
	Step bool
	// Dist is the distribution a latency statistic is of (nil
	// otherwise); P its percentile (0 for min, max, mean, stddev and
	// non-percentiles).
	Dist *Dist
	P    float64
	// Read returns the value from a phase, in Unit; ok is false when it
	// cannot be computed (no samples, no request, closed model, not
	// measured).
	Read func(*Phase) (v float64, ok bool)
}

// MinSamples is the samples Def's value needs for a conclusive verdict:
// MinSamples(P) for a latency statistic, 0 for others.
func (d *Def) MinSamples() int64 {
	if d.Need != Samples {
		return 0
	}
	return MinSamples(d.P)
}

// Ms converts a Duration value (nanoseconds) to milliseconds.
func Ms(ns float64) float64 { return ns / float64(time.Millisecond) }

// MinSamples is how many samples a latency statistic needs before a rule
// may judge it or `runner compare` test it. A percentile pN needs
// n ≥ 10 / (1 − N/100): at least ten samples expected above it, so the
// value rests on more than one or two outliers (p50: 20, p90: 100, p95:
// 200, p99: 1000, p99.9: 10000); the value itself is the nearest rank,
// rank = ⌈p/100·n⌉ (measure.Dist.Percentile). min, max, mean and stddev
// (p = 0) need one sample.
func MinSamples(p float64) int64 {
	if !(p > 0) {
		return 1
	}
	// In micro-percent m to stay exact: n ≥ 10 / (1 − m/10⁸) = 10⁹ / (10⁸ − m).
	tail := int64(100_000_000) - int64(math.Round(p*1_000_000))
	if tail <= 0 {
		return math.MaxInt64
	}
	return (1_000_000_000 + tail - 1) / tail
}

var (
	mu      sync.RWMutex
	table   []Def
	version int
)

func init() { table = builtin() }

// All returns the catalogue in its order (the order rules list names in).
// The slice must not be modified.
func All() []Def {
	mu.RLock()
	defer mu.RUnlock()
	return table
}

// Version changes whenever Add changes the catalogue, so that readers that
// derive tables from it know to derive them again.
func Version() int {
	mu.RLock()
	defer mu.RUnlock()
	return version
}

// Add appends d to the catalogue and returns the function that removes it
// again: one metric added here is read by rules, JSON, TSV, the repeat
// summary and compare. Meant for tests: readers already running see the
// change at their next read.
func Add(d Def) (remove func()) {
	mu.Lock()
	defer mu.Unlock()
	prev := table
	table = append(table[:len(table):len(table)], d)
	version++
	return func() {
		mu.Lock()
		defer mu.Unlock()
		table = prev
		version++
	}
}

// ByName returns the metric rules read as name, or nil.
func ByName(name string) *Def {
	for _, d := range All() {
		if d.Name == name && name != "" {
			return &d
		}
	}
	return nil
}

// Group splits a rule name into its group and member: "service.p99" is
// ("service", "p99"), "p99" is ("", "p99").
func (d *Def) Group() (group, member string) {
	if g, m, ok := strings.Cut(d.Name, "."); ok {
		return g, m
	}
	return "", d.Name
}
