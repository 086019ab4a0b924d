// Package counters is the reconciliation kit of internal/execute: it reads a
// target's own counters, in
// the formats targets expose them: a JSON object (over HTTP, or in a
// WebSocket control reply), the Prometheus text format and memcached's
// stats. A counter is a
// name and a number; the runner compares the deltas of two readings with
// its own counts.
package counters

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// MaxSize bounds a reading: 1 MiB.
const MaxSize = 1 << 20

// ReadAll reads a reading of at most MaxSize bytes. Error: a longer one
// (cut, it would lose the series past the cut, or end mid-line), or the
// reader's error.
func ReadAll(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSize {
		return nil, fmt.Errorf("the reading is larger than %d MiB, the most runner reads", MaxSize>>20)
	}
	return b, nil
}

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
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not JSON: more after the first value")
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
	if err := flatten("", obj, out); err != nil {
		return nil, err
	}
	return out, nil
}

// flatten adds the numbers of v to out, nested objects with dots. A
// name reached twice ({"a.b": 1, "a": {"b": 2}}) is an error, not a
// silent pick.
func flatten(prefix string, v map[string]any, out map[string]float64) error {
	for _, k := range slices.Sorted(maps.Keys(v)) {
		switch x := v[k].(type) {
		case json.Number:
			f, err := x.Float64()
			if err != nil {
				return fmt.Errorf("counter %s%s: %v", prefix, k, err)
			}
			if _, dup := out[prefix+k]; dup {
				return fmt.Errorf("counter %s%s given twice (a dotted name and a nested object)", prefix, k)
			}
			out[prefix+k] = f
		case map[string]any:
			if err := flatten(prefix+k+".", x, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// Prometheus reads the Prometheus text exposition format (at most
// MaxSize bytes). Each counter and untyped sample is a counter named as
// exposed, in its canonical form (Canonical): `name`, or
// `name{a="x",b="y"}` with its labels sorted by name; a summary or
// histogram gives name_sum and name_count (with labels). A sample of
// NaN or ±Inf is left out: it has no number to compare. A gauge is read
// only when gauge(name) is true (nil: no gauge): a gauge is a level, not a
// count, so it reconciles nothing unless a rule asks for it by name, and
// an exporter's dozens of gauges (HAProxy's: uptime, memory, current
// sessions) would otherwise fill the report. Errors: a malformed
// exposition, with its line; a series given twice.
func Prometheus(r io.Reader, gauge func(name string) bool) (map[string]float64, error) {
	b, err := ReadAll(r)
	if err != nil {
		return nil, err
	}
	fams, err := families(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	set := func(k string, v float64) error {
		if _, dup := out[k]; dup {
			return fmt.Errorf("series %s given twice", k)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			// No number to compare (HAProxy's "not applicable": the
			// check counters of a server without health checks), nor
			// one a JSON result can hold: left out.
			return nil
		}
		out[k] = v
		return nil
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			labels := labelText(m.GetLabel())
			var err error
			switch {
			case m.Counter != nil:
				err = set(name+labels, m.GetCounter().GetValue())
			case m.Gauge != nil:
				if gauge != nil && gauge(name+labels) {
					err = set(name+labels, m.GetGauge().GetValue())
				}
			case m.Untyped != nil:
				err = set(name+labels, m.GetUntyped().GetValue())
			case m.Summary != nil:
				err = errors.Join(set(name+"_sum"+labels, m.GetSummary().GetSampleSum()),
					set(name+"_count"+labels, float64(m.GetSummary().GetSampleCount())))
			case m.Histogram != nil:
				err = errors.Join(set(name+"_sum"+labels, m.GetHistogram().GetSampleSum()),
					set(name+"_count"+labels, float64(m.GetHistogram().GetSampleCount())))
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// families parses an exposition in the Prometheus text format.
func families(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

// Canonical returns a series name as Prometheus reads it:
// `name{b="y",a="x"}` becomes `name{a="x",b="y"}` (labels sorted by name,
// values quoted as Go quotes them, no spaces), so that a rule may write a
// series' labels in any order, as the exporter does, and still find it.
// A name without labels, or one that is not a series of the text format
// (a JSON counter such as group.requests), is returned unchanged.
func Canonical(name string) string {
	if !strings.Contains(name, "{") || !strings.HasSuffix(name, "}") || strings.Contains(name, "\n") {
		return name
	}
	fams, err := families(strings.NewReader(name + " 0\n"))
	if err != nil || len(fams) != 1 {
		return name
	}
	for n, f := range fams {
		if ms := f.GetMetric(); len(ms) == 1 {
			return n + labelText(ms[0].GetLabel())
		}
	}
	return name
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

// MemcachedStats reads the reply of memcached's text-protocol "stats"
// command: lines "STAT name value" up to a line "END" (each line ended by
// \r\n, or \n), at most MaxSize bytes. Each value that is a number is a
// counter named as memcached names it (cmd_get, get_hits, get_misses,
// cmd_set, …); the others (version, libevent) are left out. Levels such
// as curr_items are read too: only the counters a rule names are
// compared. Errors: a reply memcached sends for a command it refuses
// (ERROR, CLIENT_ERROR …, SERVER_ERROR …), a line that is not a STAT
// line, a name given twice, no END within MaxSize bytes (or before the
// stream ends), with the line's number.
func MemcachedStats(r io.Reader) (map[string]float64, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, MaxSize+1), 4096)
	out := map[string]float64{}
	read := 0
	for n := 1; ; n++ {
		line, err := br.ReadString('\n')
		read += len(line)
		if read > MaxSize {
			return nil, fmt.Errorf("no END within %d MiB, the most runner reads", MaxSize>>20)
		}
		if err != nil {
			if err == io.EOF {
				return nil, fmt.Errorf("the reply ended at line %d before its END line", n)
			}
			return nil, err
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		f := strings.Fields(line)
		switch {
		case line == "END":
			return out, nil
		case len(f) > 0 && (f[0] == "ERROR" || f[0] == "CLIENT_ERROR" || f[0] == "SERVER_ERROR"):
			return nil, fmt.Errorf("memcached refused stats: %q", line)
		case len(f) != 3 || f[0] != "STAT":
			return nil, fmt.Errorf("line %d is not a STAT line: %q", n, clip(line))
		}
		if _, dup := out[f[1]]; dup {
			return nil, fmt.Errorf("line %d: stat %s given twice", n, f[1])
		}
		if v, err := strconv.ParseFloat(f[2], 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
			out[f[1]] = v
		}
	}
}

// clip shortens a line quoted in an error to 80 bytes.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
