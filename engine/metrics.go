package engine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/runner-dev/runner/engine/metric"
)

// Metrics are the headline figures of one (repeat, phase), derived from
// its Summary once, so that readers of the JSON report need not decode
// histograms. Rates are per second; latencies are milliseconds; a value
// that cannot be computed (no samples) is null.
type Metrics struct {
	Throughput    float64  `json:"throughput"`
	AchievedRate  float64  `json:"achieved_rate"`
	CompletedRate float64  `json:"completed_rate"`
	OfferedRate   *float64 `json:"offered_rate"`
	ErrorRate     *float64 `json:"error_rate"`
	LittleL       float64  `json:"little_l"`
	InflightMean  float64  `json:"inflight_mean"`
	Response      Latency  `json:"response_time"`
	Service       Latency  `json:"service_time"`
	// SendLag is how long sent requests waited in the client before
	// going out (Sent − Intended): the generator's own delay plus the
	// wait for a free connection; all 0 in the closed model.
	SendLag Latency `json:"send_lag"`
	// SendEarly is how early requests went out before their intended
	// start (Intended − Sent), of those an open phase's dispatch window
	// sent early; no samples without a window.
	SendEarly Latency `json:"send_early"`
	// Corrected is the coordinated-omission-corrected response time of a
	// closed phase with expected_rate (HdrHistogram's corrected
	// recording: a response longer than the expected interval adds the
	// samples it held back); absent otherwise.
	Corrected *Latency `json:"corrected_response_time,omitempty"`
	// Extra holds the catalogue's metrics (metric.All) whose JSON key has
	// no field here, by key; nil is null. It is written after the fields.
	Extra map[string]*float64 `json:"-"`
}

// Latency is a distribution's nearest-rank percentiles and exact extremes
// and mean, in milliseconds.
type Latency struct {
	Samples int64    `json:"samples"`
	Min     *float64 `json:"min_ms"`
	P50     *float64 `json:"p50_ms"`
	P90     *float64 `json:"p90_ms"`
	P95     *float64 `json:"p95_ms"`
	P99     *float64 `json:"p99_ms"`
	P999    *float64 `json:"p999_ms"`
	Max     *float64 `json:"max_ms"`
	Mean    *float64 `json:"mean_ms"`
}

// MeasuredOfferedRate is the arrival rate an open phase actually
// offered: its arrivals (sent, dropped or never sent) per second of its
// elapsed time. For uniform arrivals it is the planned rate
// (PhasePlan.PlannedOfferedRate); for Poisson arrivals it is the rate of
// the arrivals drawn, so that a random draw is not mistaken for a target
// that could not keep up. ok is false for the closed model and for a
// phase of no duration.
func MeasuredOfferedRate(pr *PhaseResult) (float64, bool) {
	if pr.Phase == nil || pr.Phase.Model != Open || pr.Summary.Elapsed <= 0 {
		return 0, false
	}
	return float64(pr.Summary.Arrivals) / pr.Summary.Elapsed.Seconds(), true
}

// MetricPhase is what the metric catalogue (metric.All) reads this
// phase's metrics from: its Summary, connections, measured offered rate,
// and the client's and the target's resource use.
func (pr *PhaseResult) MetricPhase() *metric.Phase {
	ph := &metric.Phase{
		Summary:                pr.Summary,
		Connections:            int64(pr.ConnectionsRequested),
		ConnectionsEstablished: int64(pr.ConnectionsEstablished),
		Fetches:                int64(pr.Fetches),
		// client.cpu is a share of the cores the runner could use, as
		// recorded with the phase.
		Client: &metric.Client{CPU: pr.ClientCPU, Cores: pr.clientCores(), GCPauseMax: pr.GCPauseMax},
	}
	if r, ok := MeasuredOfferedRate(pr); ok {
		ph.OfferedRate = &r
	}
	if t := pr.Target; t != nil {
		ph.Target = &metric.Target{CPU: t.CPU, CPUMaxThread: t.CPUMaxThread, RSS: t.RSS}
	}
	return ph
}

// MetricsOf computes the headline figures of a finished phase: every
// metric of the catalogue with a JSON key (metric.Def.JSON), durations in
// milliseconds.
func MetricsOf(pr *PhaseResult) *Metrics {
	ph := pr.MetricPhase()
	m := &Metrics{}
	for _, d := range metric.All() {
		if d.JSON == "" {
			continue
		}
		v, ok := d.Read(ph)
		if d.Unit == metric.Duration {
			v = metric.Ms(v)
		}
		m.set(d.JSON, v, ok)
	}
	return m
}

// field finds the field of struct v whose JSON name is key; ok is false
// when there is none.
func field(v reflect.Value, key string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == key && name != "-" {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// slot finds the field of the JSON path key ("response_time.p99_ms"),
// allocating a nil *Latency on the way when alloc is set; ok is false
// when the path has no field (or crosses a nil one and alloc is not set).
func (m *Metrics) slot(key string, alloc bool) (reflect.Value, bool) {
	v := reflect.ValueOf(m).Elem()
	for part := range strings.SplitSeq(key, ".") {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !alloc {
					return reflect.Value{}, false
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		f, ok := field(v, part)
		if !ok {
			return reflect.Value{}, false
		}
		v = f
	}
	return v, true
}

// set stores a value under its JSON path: nothing for a value without
// (ok false) where the field is a pointer (null) or the path crosses one
// (omitted); a catalogue metric without a field goes to Extra.
func (m *Metrics) set(key string, v float64, ok bool) {
	if _, isField := (&Metrics{}).slot(key, true); !isField {
		if m.Extra == nil {
			m.Extra = map[string]*float64{}
		}
		m.Extra[key] = nil
		if ok {
			m.Extra[key] = &v
		}
		return
	}
	f, found := m.slot(key, ok)
	switch {
	case !found: // no value, under an object that is absent
	case f.Kind() == reflect.Pointer:
		if ok {
			f.Set(reflect.ValueOf(&v))
		}
	case f.Kind() == reflect.Int64:
		f.SetInt(int64(v))
	default:
		f.SetFloat(v)
	}
}

// Value reads the metric of JSON path key ("little_l",
// "response_time.p99_ms"); ok is false when it is null or absent.
func (m *Metrics) Value(key string) (float64, bool) {
	if m == nil {
		return 0, false
	}
	f, found := m.slot(key, false)
	switch {
	case !found:
		if p := m.Extra[key]; p != nil {
			return *p, true
		}
		return 0, false
	case f.Kind() == reflect.Pointer:
		if f.IsNil() {
			return 0, false
		}
		return f.Elem().Float(), true
	case f.Kind() == reflect.Int64:
		return float64(f.Int()), true
	}
	return f.Float(), true
}

// metricsFields is Metrics without its methods, for the default JSON
// encoding of its fields.
type metricsFields Metrics

// MarshalJSON writes the fields as they are, then the catalogue metrics
// without a field of their own (Extra) under their JSON keys, in
// catalogue order.
func (m Metrics) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(metricsFields(m))
	if err != nil || len(m.Extra) == 0 {
		return b, err
	}
	b = b[:len(b)-1]
	for _, d := range metric.All() {
		v, ok := m.Extra[d.JSON]
		if !ok || d.JSON == "" {
			continue
		}
		k, _ := json.Marshal(d.JSON)
		x, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		b = append(append(append(append(b, ','), k...), ':'), x...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (m *Metrics) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, (*metricsFields)(m)); err != nil {
		return err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	for _, d := range metric.All() {
		x, ok := raw[d.JSON]
		if !ok || d.JSON == "" {
			continue
		}
		if _, field := (&Metrics{}).slot(d.JSON, true); field {
			continue
		}
		var v *float64
		if err := json.Unmarshal(x, &v); err != nil {
			return fmt.Errorf("metrics.%s: %w", d.JSON, err)
		}
		if m.Extra == nil {
			m.Extra = map[string]*float64{}
		}
		m.Extra[d.JSON] = v
	}
	return nil
}
