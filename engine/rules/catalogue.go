package rules

import (
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/metric"
	spelling "github.com/runner-dev/runner/internal/suggest"
)

// latency is one latency distribution's statistics, as rules read them.
type latency struct {
	P50    time.Duration `expr:"p50"`
	P90    time.Duration `expr:"p90"`
	P95    time.Duration `expr:"p95"`
	P99    time.Duration `expr:"p99"`
	P999   time.Duration `expr:"p999"`
	Max    time.Duration `expr:"max"`
	Min    time.Duration `expr:"min"`
	Mean   time.Duration `expr:"mean"`
	Stddev time.Duration `expr:"stddev"`
	// Pcts holds the other percentiles a rule reads (p75, p99.99), by
	// their identifier (percentileIdent), filled when the rule is judged.
	// The front end rewrites a read of p75 into a read of this map.
	Pcts map[string]time.Duration `expr:"p()"`
}

// pctsField is the expr name of latency.Pcts, which no rule can write.
const pctsField = "p()"

// clientVars are the load generator's own resource metrics.
type clientVars struct {
	CPU        float64       `expr:"cpu"`
	GCPauseMax time.Duration `expr:"gc_pause_max"`
}

// targetVars are the target process's resource metrics.
type targetVars struct {
	CPU          float64 `expr:"cpu"`
	CPUMaxThread float64 `expr:"cpu_max_thread"`
	RSS          int64   `expr:"rss"`
}

// metrics is the typed environment rules compile against
// (docs/design.md, "Metrics").
type metrics struct {
	latency

	Requests               int64         `expr:"requests"`
	OK                     int64         `expr:"ok"`
	Errors                 int64         `expr:"errors"`
	ErrorRate              float64       `expr:"error_rate"`
	Timeouts               int64         `expr:"timeouts"`
	Late                   int64         `expr:"late"`
	UnknownID              int64         `expr:"unknown_id"`
	DuplicateID            int64         `expr:"duplicate_id"`
	Dropped                int64         `expr:"dropped"`
	Arrivals               int64         `expr:"arrivals"`
	Cancelled              int64         `expr:"cancelled"`
	LeftOver               int64         `expr:"left_over"`
	Throughput             float64       `expr:"throughput"`
	CompletedRate          float64       `expr:"completed_rate"`
	OfferedRate            float64       `expr:"offered_rate"`
	AchievedRate           float64       `expr:"achieved_rate"`
	Duration               time.Duration `expr:"duration"`
	Samples                int64         `expr:"samples"`
	Connections            int64         `expr:"connections"`
	ConnectionsOpened      int64         `expr:"connections_opened"`
	ConnectionsEstablished int64         `expr:"connections_established"`
	Reconnects             int64         `expr:"reconnects"`
	Fetches                int64         `expr:"fetches"`
	InflightMean           float64       `expr:"inflight_mean"`
	LittleL                float64       `expr:"littleL"`

	Service latency `expr:"service"`
	Failed  latency `expr:"failed"`
	// Corrected is the coordinated-omission-corrected response time of
	// a closed phase with expected_rate; empty otherwise.
	Corrected latency            `expr:"corrected"`
	ErrorsBy  map[string]int64   `expr:"errors_by"`
	ClosesBy  map[string]int64   `expr:"closes_by"`
	Server    map[string]float64 `expr:"server"`
	Client    clientVars         `expr:"client"`
	Target    targetVars         `expr:"target"`
	// Steps are the metrics of each flow step of the phase, by step name
	// (`step.NAME.p99`); only the per-step metrics (metric.Def.Step) are
	// filled in them. A step the phase did not run is absent.
	Steps map[string]*metrics `expr:"step"`

	// Ints, Floats and Durs hold the catalogue's top-level metrics that
	// have no field here (metric.Add), by the Go type of their value; the
	// front end rewrites a read of one into a read of its map (extField).
	Ints   map[string]int64         `expr:"i()"`
	Floats map[string]float64       `expr:"f()"`
	Durs   map[string]time.Duration `expr:"d()"`

	// dists are the distributions behind the latency groups ("" is the
	// response time), for the percentiles of Pcts; nil in tests that set
	// values directly.
	dists map[string]*measure.Dist
}

// root is what a compiled rule runs against: the phase's metrics, the
// cross-repeat views that median(x) and worst(x) are rewritten to read,
// and the baseline. The view names cannot be written in a rule.
type root struct {
	metrics
	Median   *metrics `expr:"median()"`
	Worst    *metrics `expr:"worst()"`
	Baseline *metrics `expr:"baseline"`
}

const (
	viewMedian = "median()"
	viewWorst  = "worst()"
)

// unit is a rule value's dimension, for the front end's unit check.
type unit int

const (
	unknownUnit unit = iota
	numberUnit
	durationUnit
	boolUnit
	stringUnit
)

func (u unit) String() string {
	return [...]string{"value", "number", "duration", "bool", "string"}[u]
}

// direction says which way a metric gets worse, for worst(x) and for the
// even-count median.
type direction int

const (
	neutral      direction = iota // no better or worse: worst(x) is an error
	lowerBetter                   // worst = max
	higherBetter                  // worst = min
)

// need says what a metric's value requires to support a verdict.
type need int

const (
	always      need = iota
	dist             // a latency statistic: enough samples (see minSamples)
	anyRequest       // error_rate: at least one request
	someElapsed      // rates: a phase that lasted
	littleNeed       // littleL: a phase that lasted and a response
	offeredNeed      // offered_rate: an open model
	clientNeed       // client.*: measured
	targetNeed       // target.*: measured
	fetchedNeed      // fetches: the target's counters were read
	serverNeed       // server.X: fetched
)

// metricDef describes one name a rule can read.
type metricDef struct {
	unit unit
	dir  direction
	need need
	p    float64 // the percentile of a latency statistic, 0 otherwise
	// step is true when the metric is read per flow step too
	// (metric.Def.Step): step.NAME.p99.
	step bool
}

// groups are the names that hold members: `service.p99`, `errors_by["503"]`.
var groups = []string{"service", "failed", "corrected", "errors_by", "closes_by", "server", "client", "target", "step", "baseline"}

// stepGroup is the group that holds the flow steps: step.NAME.METRIC.
const stepGroup = "step"

var (
	// topLevel maps each top-level metric to its definition.
	topLevel map[string]metricDef
	// topNames are the top-level metric names in display order.
	topNames []string
	// members maps a group to its members' definitions (nil for the map
	// groups errors_by and server, whose members are any key).
	members map[string]map[string]metricDef
	// memberNames are a group's member names in display order.
	memberNames map[string][]string
	// stepNames are the metrics read per flow step (after step.NAME.),
	// in display order: p99, requests, service.p99.
	stepNames []string
	// extUnits are the top-level metrics of the catalogue without a field
	// in metrics: a rule reads them from the map of their unit (extField).
	extUnits map[string]metric.Unit
	// derivedFrom is the catalogue version the tables above came from.
	derivedFrom = -1
	deriveMu    sync.Mutex
)

func init() { derive() }

// derive makes the name tables again from the metric catalogue
// (metric.All) when it changed since they were made: every name a rule
// can read, its unit, direction and what it needs, is the catalogue's.
func derive() {
	deriveMu.Lock()
	defer deriveMu.Unlock()
	v := metric.Version()
	if v == derivedFrom {
		return
	}
	top, mem, memNames, ext := map[string]metricDef{}, map[string]map[string]metricDef{}, map[string][]string{}, map[string]metric.Unit{}
	var names, steps []string
	for _, d := range metric.All() {
		if d.Name == "" {
			continue
		}
		def := metricDef{unit: numberUnit, dir: directionOf(d.Worse), need: needOf(d.Need), p: d.P, step: d.Step}
		if d.Step {
			steps = append(steps, d.Name)
		}
		if d.Unit == metric.Duration {
			def.unit = durationUnit
		}
		g, m := d.Group()
		if g == "" {
			top[m] = def
			names = append(names, m)
			if !fieldByTag(reflect.ValueOf(&metrics{}).Elem(), m).IsValid() {
				ext[m] = d.Unit
			}
			continue
		}
		if mem[g] == nil {
			mem[g] = map[string]metricDef{}
		}
		mem[g][m] = def
		memNames[g] = append(memNames[g], m)
	}
	topLevel, topNames, members, memberNames, extUnits, stepNames, derivedFrom = top, names, mem, memNames, ext, steps, v
}

func directionOf(w metric.Direction) direction {
	switch w {
	case metric.HigherIsWorse:
		return lowerBetter
	case metric.LowerIsWorse:
		return higherBetter
	}
	return neutral
}

func needOf(n metric.Need) need {
	return map[metric.Need]need{
		metric.Always: always, metric.Samples: dist, metric.Requests: anyRequest, metric.Elapsed: someElapsed,
		metric.Responses: littleNeed, metric.OpenModel: offeredNeed, metric.ClientMeasured: clientNeed,
		metric.TargetMeasured: targetNeed, metric.CountersFetched: fetchedNeed,
	}[n]
}

// The maps of the catalogue's top-level metrics without a field of their
// own, by the Go type of their value (extField).
const (
	extInts   = "i()"
	extFloats = "f()"
	extDurs   = "d()"
)

// extField is the expr name of the map an extension metric name is read
// from, or "" when name has a field of its own (or is no metric).
func extField(name string) string {
	derive()
	u, ok := extUnits[name]
	switch {
	case !ok:
		return ""
	case u == metric.Count || u == metric.Bytes:
		return extInts
	case u == metric.Duration:
		return extDurs
	}
	return extFloats
}

// isExtField reports whether name is the expr name of an extension map.
func isExtField(name string) bool { return name == extInts || name == extFloats || name == extDurs }

// typed converts a catalogue value (float64 in its unit) to the Go type a
// rule reads: int64 counts and bytes, time.Duration durations, float64
// otherwise.
func typed(u metric.Unit, v float64) any {
	switch u {
	case metric.Count, metric.Bytes:
		return int64(v)
	case metric.Duration:
		return time.Duration(v)
	}
	return v
}

func unitOfType(t reflect.Type) unit {
	switch {
	case t == reflect.TypeFor[time.Duration]():
		return durationUnit
	case t.Kind() == reflect.Int64 || t.Kind() == reflect.Float64 || t.Kind() == reflect.Int:
		return numberUnit
	}
	return unknownUnit
}

// ref is one metric a rule reads.
type ref struct {
	view string // "", viewMedian, viewWorst or "baseline"
	// step is the flow step whose metric it is (step.login.p99), "" for
	// the phase's own.
	step  string
	group string // "", "service", "failed", "corrected", "errors_by", "closes_by", "server", "client", "target"
	name  string // metric or member; "" for a map group read with a computed key
}

// stepPrefix is how a rule names flow step name: "step.login", or
// `step["log-in"]` for a name that cannot follow a dot.
func stepPrefix(name string) string {
	if isIdent(name) {
		return stepGroup + "." + name
	}
	return stepGroup + "[" + quote(name) + "]"
}

// String renders r as a rule would write it.
func (r ref) String() string {
	var s string
	switch {
	case r.step != "" && r.group == "" && r.name == "":
		s = stepPrefix(r.step) // the step itself, in messages
	case r.group == "":
		s = displayName(r.name)
	case isLatencyGroup(r.group):
		s = r.group + "." + displayName(r.name)
	case r.name == "":
		s = r.group
	case r.group == "errors_by" || r.group == "closes_by" || r.group == "server" && !isIdent(r.name):
		s = r.group + "[" + quote(r.name) + "]"
	default:
		s = r.group + "." + r.name
	}
	if r.step != "" && (r.group != "" || r.name != "") {
		s = stepPrefix(r.step) + "." + s
	}
	switch r.view {
	case viewMedian, viewWorst:
		return strings.TrimSuffix(r.view, "()") + "(" + s + ")"
	case "baseline":
		return "baseline." + s
	}
	return s
}

// isIdent reports whether s can follow a dot in a rule: a letter or _
// then letters, digits or _.
func isIdent(s string) bool {
	for i, c := range s {
		if !(c == '_' || unicode.IsLetter(c) || i > 0 && unicode.IsDigit(c)) {
			return false
		}
	}
	return s != ""
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// def returns r's definition.
func (r ref) def() metricDef {
	if r.group == "" || isLatencyGroup(r.group) {
		if q, ok := extraPercentile(r.name); ok {
			return metricDef{unit: durationUnit, dir: lowerBetter, need: dist, p: q}
		}
	}
	switch r.group {
	case "":
		return topLevel[r.name]
	case "errors_by", "closes_by":
		return metricDef{unit: numberUnit, dir: lowerBetter}
	case "server":
		return metricDef{unit: numberUnit, need: serverNeed}
	}
	return members[r.group][r.name]
}

// isLatencyGroup reports whether group is a latency distribution's.
func isLatencyGroup(group string) bool {
	return group == "service" || group == "failed" || group == "corrected"
}

// fixedPercentiles are the percentiles with a field of their own, by
// name.
var fixedPercentiles = map[string]float64{"p50": 50, "p90": 90, "p95": 95, "p99": 99, "p999": 99.9}

// maxPercentileDecimals is how many decimal places a percentile may have:
// measure.Dist.Percentile reads six, and minSamples is exact to six.
const maxPercentileDecimals = 6

// percentileIdent is the identifier a rule's percentile q reads: the
// fixed names p50 p90 p95 p99 p999 for theirs, else "p" and q with "_"
// for the decimal point (p75, p99_99). q is in (0, 100).
func percentileIdent(q float64) string {
	for name, f := range fixedPercentiles {
		if f == q {
			return name
		}
	}
	return "p" + strings.ReplaceAll(strconv.FormatFloat(q, 'f', -1, 64), ".", "_")
}

// PercentileName is how reports name percentile q: p50, p75, p99.9,
// p99.99.
func PercentileName(q float64) string {
	if q == 99.9 {
		return "p99.9"
	}
	return displayName(percentileIdent(q))
}

// displayName renders an identifier as a rule writes it: p99_99 is
// p99.99; other names are themselves.
func displayName(name string) string {
	if _, ok := extraPercentile(name); ok {
		return strings.ReplaceAll(name, "_", ".")
	}
	return name
}

// extraPercentile reads an identifier made by percentileIdent for a
// percentile without a field of its own: p1 … p99 (one or two digits, no
// leading zero) and p<int>_<frac> (p99_99). ok is false for anything
// else, the fixed names included.
func extraPercentile(name string) (q float64, ok bool) {
	if _, fixed := fixedPercentiles[name]; fixed || !strings.HasPrefix(name, "p") {
		return 0, false
	}
	whole, frac, dotted := strings.Cut(name[1:], "_")
	if !allDigits(whole) || len(whole) > 2 || len(whole) > 1 && whole[0] == '0' ||
		dotted && (!allDigits(frac) || len(frac) > maxPercentileDecimals || frac[len(frac)-1] == '0') {
		return 0, false
	}
	q, err := strconv.ParseFloat(strings.ReplaceAll(name[1:], "_", "."), 64)
	if err != nil || !(q > 0 && q < 100) {
		return 0, false
	}
	return q, true
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// percentileHint explains a p-name that is no percentile a rule can
// read (p100, p0, p9999), or returns "".
func percentileHint(name string) string {
	if !strings.HasPrefix(name, "p") || !allDigits(name[1:]) {
		return ""
	}
	switch {
	case strings.TrimLeft(name[1:], "0") == "":
		return name + " would be the minimum: write min"
	case name == "p100":
		return "p100 is the maximum: write max"
	case strings.HasPrefix(name, "p99") && len(name) > 4:
		return "for the 99." + name[3:] + "th percentile write p99." + name[3:] + " (p999 stays p99.9)"
	}
	return "a percentile is p1 … p99, p999 (99.9), or any pN.N or p(N.N) between 0 and 100, e.g. p75, p99.99"
}

// base is r without its view.
func (r ref) base() ref { return ref{step: r.step, group: r.group, name: r.name} }

// get reads r's value (without its view) from m: a flow step's from its
// metrics in m.Steps (zero values when m has no such step).
func (r ref) get(m *metrics) any {
	if r.step != "" {
		sub := m.Steps[r.step]
		if sub == nil {
			sub = &metrics{}
		}
		return ref{group: r.group, name: r.name}.get(sub)
	}
	switch r.group {
	case "":
		if q, ok := extraPercentile(r.name); ok {
			return extraGet(&m.latency, m.dists[""], r.name, q)
		}
		if f := extField(r.name); f != "" {
			return extGet(m, f, r.name)
		}
		return fieldByTag(reflect.ValueOf(m).Elem(), r.name).Interface()
	case "errors_by":
		if r.name == "" {
			return m.ErrorsBy
		}
		return m.ErrorsBy[r.name]
	case "closes_by":
		if r.name == "" {
			return m.ClosesBy
		}
		return m.ClosesBy[r.name]
	case "server":
		if r.name == "" {
			return m.Server
		}
		return m.Server[r.name]
	}
	g := fieldByTag(reflect.ValueOf(m).Elem(), r.group)
	if q, ok := extraPercentile(r.name); ok {
		return extraGet(g.Addr().Interface().(*latency), m.dists[r.group], r.name, q)
	}
	return fieldByTag(g, r.name).Interface()
}

// extraGet returns percentile q (identifier name) of l: its value in
// l.Pcts, else computed from d (0 when d is nil or empty).
func extraGet(l *latency, d *measure.Dist, name string, q float64) time.Duration {
	if v, ok := l.Pcts[name]; ok {
		return v
	}
	v, _ := d.Percentile(q)
	return v
}

// set writes v as r's value (without its view) into m: a flow step's
// into its metrics in m.Steps, made when m has none.
func (r ref) set(m *metrics, v any) {
	if r.step != "" {
		if m.Steps == nil {
			m.Steps = map[string]*metrics{}
		}
		sub := m.Steps[r.step]
		if sub == nil {
			sub = &metrics{}
			m.Steps[r.step] = sub
		}
		ref{group: r.group, name: r.name}.set(sub, v)
		return
	}
	if _, ok := extraPercentile(r.name); ok && (r.group == "" || isLatencyGroup(r.group)) {
		l := &m.latency
		if r.group != "" {
			l = fieldByTag(reflect.ValueOf(m).Elem(), r.group).Addr().Interface().(*latency)
		}
		if l.Pcts == nil {
			l.Pcts = map[string]time.Duration{}
		}
		l.Pcts[r.name], _ = v.(time.Duration)
		return
	}
	switch r.group {
	case "":
		if f := extField(r.name); f != "" {
			extSet(m, f, r.name, v)
			return
		}
		fieldByTag(reflect.ValueOf(m).Elem(), r.name).Set(reflect.ValueOf(v))
	case "errors_by":
		if n, ok := v.(int64); ok && r.name != "" {
			if m.ErrorsBy == nil {
				m.ErrorsBy = map[string]int64{}
			}
			m.ErrorsBy[r.name] = n
		}
	case "closes_by":
		if n, ok := v.(int64); ok && r.name != "" {
			if m.ClosesBy == nil {
				m.ClosesBy = map[string]int64{}
			}
			m.ClosesBy[r.name] = n
		}
	case "server":
		if f, ok := v.(float64); ok && r.name != "" {
			if m.Server == nil {
				m.Server = map[string]float64{}
			}
			m.Server[r.name] = f
		}
	default:
		g := fieldByTag(reflect.ValueOf(m).Elem(), r.group)
		fieldByTag(g, r.name).Set(reflect.ValueOf(v))
	}
}

// extGet reads extension metric name from its map f of m.
func extGet(m *metrics, f, name string) any {
	switch f {
	case extInts:
		return m.Ints[name]
	case extDurs:
		return m.Durs[name]
	}
	return m.Floats[name]
}

// extSet writes v as extension metric name into its map f of m.
func extSet(m *metrics, f, name string, v any) {
	switch x := v.(type) {
	case int64:
		if f == extInts {
			if m.Ints == nil {
				m.Ints = map[string]int64{}
			}
			m.Ints[name] = x
		}
	case time.Duration:
		if f == extDurs {
			if m.Durs == nil {
				m.Durs = map[string]time.Duration{}
			}
			m.Durs[name] = x
		}
	case float64:
		if f == extFloats {
			if m.Floats == nil {
				m.Floats = map[string]float64{}
			}
			m.Floats[name] = x
		}
	}
}

// fieldByTag returns the field of struct v (or of its embedded structs)
// whose expr tag is name.
func fieldByTag(v reflect.Value, name string) reflect.Value {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Tag.Get("expr") == name {
			return v.Field(i)
		}
		if f.Anonymous {
			if fv := fieldByTag(v.Field(i), name); fv.IsValid() {
				return fv
			}
		}
	}
	return reflect.Value{}
}

// minSamples is how many samples a latency statistic of percentile p
// needs before a rule may judge it (metric.MinSamples: 10 / (1 − p/100)).
func minSamples(p float64) int64 { return metric.MinSamples(p) }

// suggest returns the known names nearest to name (up to three ties, in
// known's order), or nil when none is within max(2, len/3) slips
// (internal/suggest: case ignored, a transposition one slip), so that a
// misspelt metric and a misspelt scenario key get the same suggestions.
func suggest(name string, known []string) []string {
	best := spelling.Nearest(name, known, max(2, len([]rune(name))/3))
	return best[:min(len(best), 3)]
}
