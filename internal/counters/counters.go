// Package counters reads a target's own counters for reconciliation, in
// the formats targets expose them: a JSON object (over HTTP, or in a
// WebSocket control reply) and the Prometheus text format. A counter is a
// name and a number; the runner compares the deltas of two readings with
// its own counts.
package counters

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// MaxSize bounds a reading: 1 MiB.
const MaxSize = 1 << 20

// JSON reads the counters of a JSON reply: the object at field (a dot
// path; "" for the whole reply). Numbers are counters; nested objects
// flatten with dots (`{"a": {"b": 1}}` is a.b); other values are ignored.
// Errors: not JSON, no object at field (the message names what is there).
func JSON(b []byte, field string) (map[string]float64, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if field != "" {
		for _, k := range strings.Split(field, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("no field %s in the reply", field)
			}
			if v, ok = m[k]; !ok {
				return nil, fmt.Errorf("no field %s in the reply; it has %s", field, strings.Join(slices.Sorted(maps.Keys(m)), ", "))
			}
		}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		what := "the reply"
		if field != "" {
			what = field
		}
		return nil, fmt.Errorf("%s is not a JSON object of counters", what)
	}
	out := map[string]float64{}
	flatten("", obj, out)
	return out, nil
}

func flatten(prefix string, v map[string]any, out map[string]float64) {
	for k, x := range v {
		switch x := x.(type) {
		case json.Number:
			if f, err := x.Float64(); err == nil {
				out[prefix+k] = f
			}
		case map[string]any:
			flatten(prefix+k+".", x, out)
		}
	}
}

// Prometheus reads the Prometheus text exposition format (at most
// MaxSize bytes). Each counter, gauge and untyped sample is a counter
// named as exposed: `name`, or `name{a="x",b="y"}` with its labels
// sorted by name; a summary or histogram gives name_sum and name_count
// (with labels). Errors: a malformed exposition, with its line.
func Prometheus(r io.Reader) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(io.LimitReader(r, MaxSize))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			labels := labelText(m.GetLabel())
			switch {
			case m.Counter != nil:
				out[name+labels] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[name+labels] = m.GetGauge().GetValue()
			case m.Untyped != nil:
				out[name+labels] = m.GetUntyped().GetValue()
			case m.Summary != nil:
				out[name+"_sum"+labels] = m.GetSummary().GetSampleSum()
				out[name+"_count"+labels] = float64(m.GetSummary().GetSampleCount())
			case m.Histogram != nil:
				out[name+"_sum"+labels] = m.GetHistogram().GetSampleSum()
				out[name+"_count"+labels] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out, nil
}

// labelText renders labels as {a="x",b="y"}, sorted by name; "" for none.
func labelText(ls []*dto.LabelPair) string {
	if len(ls) == 0 {
		return ""
	}
	slices.SortFunc(ls, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", l.GetName(), l.GetValue())
	}
	b.WriteByte('}')
	return b.String()
}
