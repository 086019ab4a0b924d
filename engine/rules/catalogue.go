package rules

import (
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/runner-dev/runner/engine/measure"
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

// latencyStats are latency's names in display order, with the percentile
// each one is (0 for the non-percentile statistics).
var latencyStats = []struct {
	name string
	p    float64
}{
	{"p50", 50}, {"p90", 90}, {"p95", 95}, {"p99", 99}, {"p999", 99.9},
	{"max", 0}, {"min", 0}, {"mean", 0}, {"stddev", 0},
}

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
	serverNeed       // server.X: fetched
)

// metricDef describes one name a rule can read.
type metricDef struct {
	unit unit
	dir  direction
	need need
	p    float64 // the percentile of a latency statistic, 0 otherwise
}

// groups are the names that hold members: `service.p99`, `errors_by["503"]`.
var groups = []string{"service", "failed", "corrected", "errors_by", "closes_by", "server", "client", "target", "baseline"}

var (
	// topLevel maps each top-level metric to its definition.
	topLevel = map[string]metricDef{}
	// topNames are the top-level metric names in display order.
	topNames []string
	// members maps a group to its members' definitions (nil for the map
	// groups errors_by and server, whose members are any key).
	members = map[string]map[string]metricDef{}
	// memberNames are a group's member names in display order.
	memberNames = map[string][]string{}
)

func init() {
	lower := []string{"errors", "error_rate", "timeouts", "late", "unknown_id", "duplicate_id", "dropped", "cancelled",
		"left_over", "reconnects", "connections_opened", "inflight_mean", "littleL"}
	higher := []string{"requests", "ok", "samples", "throughput", "completed_rate",
		"achieved_rate", "connections_established"}
	needs := map[string]need{
		"error_rate": anyRequest, "throughput": someElapsed, "completed_rate": someElapsed,
		"achieved_rate": someElapsed, "inflight_mean": someElapsed, "littleL": littleNeed,
		"offered_rate": offeredNeed,
	}
	latencyDefs := map[string]metricDef{}
	var latencyNames []string
	for _, s := range latencyStats {
		latencyDefs[s.name] = metricDef{unit: durationUnit, dir: lowerBetter, need: dist, p: s.p}
		latencyNames = append(latencyNames, s.name)
	}
	t := reflect.TypeFor[metrics]()
	for i := range t.NumField() {
		f := t.Field(i)
		name := f.Tag.Get("expr")
		if f.Anonymous || name == "" || slices.Contains(groups, name) {
			continue
		}
		def := metricDef{unit: unitOfType(f.Type), need: needs[name]}
		switch {
		case slices.Contains(lower, name):
			def.dir = lowerBetter
		case slices.Contains(higher, name):
			def.dir = higherBetter
		}
		topLevel[name] = def
		topNames = append(topNames, name)
	}
	for _, s := range latencyStats {
		topLevel[s.name] = latencyDefs[s.name]
	}
	topNames = append(slices.Clone(latencyNames), topNames...)
	members["service"], memberNames["service"] = latencyDefs, latencyNames
	members["failed"], memberNames["failed"] = latencyDefs, latencyNames
	members["corrected"], memberNames["corrected"] = latencyDefs, latencyNames
	members["client"] = map[string]metricDef{
		"cpu":          {unit: numberUnit, dir: lowerBetter, need: clientNeed},
		"gc_pause_max": {unit: durationUnit, dir: lowerBetter, need: clientNeed},
	}
	memberNames["client"] = []string{"cpu", "gc_pause_max"}
	members["target"] = map[string]metricDef{
		"cpu":            {unit: numberUnit, dir: lowerBetter, need: targetNeed},
		"cpu_max_thread": {unit: numberUnit, dir: lowerBetter, need: targetNeed},
		"rss":            {unit: numberUnit, dir: lowerBetter, need: targetNeed},
	}
	memberNames["target"] = []string{"cpu", "cpu_max_thread", "rss"}
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
	view  string // "", viewMedian, viewWorst or "baseline"
	group string // "", "service", "failed", "corrected", "errors_by", "closes_by", "server", "client", "target"
	name  string // metric or member; "" for a map group read with a computed key
}

// String renders r as a rule would write it.
func (r ref) String() string {
	var s string
	switch {
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
func (r ref) base() ref { return ref{group: r.group, name: r.name} }

// get reads r's value (without its view) from m.
func (r ref) get(m *metrics) any {
	switch r.group {
	case "":
		if q, ok := extraPercentile(r.name); ok {
			return extraGet(&m.latency, m.dists[""], r.name, q)
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

// set writes v as r's value (without its view) into m.
func (r ref) set(m *metrics, v any) {
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

// minSamples is how many samples a latency statistic needs before a rule
// may judge it. A percentile pN needs n ≥ 10 / (1 − N/100): at least ten
// samples expected above it, so the value rests on more than one or two
// outliers (p50: 20, p90: 100, p95: 200, p99: 1000, p99.9: 10000).
// min, max, mean and stddev need one sample.
func minSamples(p float64) int64 {
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

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// suggest returns the known names nearest to name (up to three ties),
// comparing case- and underscore-insensitively first, or nil when none is
// within max(2, len/3) edits.
func suggest(name string, known []string) []string {
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "_", "") }
	limit := max(2, len([]rune(name))/3)
	var best []string
	bestD := limit + 1
	for _, k := range known {
		d := editDistance(name, k)
		if norm(name) == norm(k) {
			d = 0
		}
		switch {
		case d > limit:
		case d < bestD:
			best, bestD = []string{k}, d
		case d == bestD && len(best) < 3:
			best = append(best, k)
		}
	}
	return best
}
