package schema

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/runner-dev/runner/internal/suggest"
)

// unknownKey reports a key that has no place at path, with the most
// plausible correction it can find.
func (l *loader) unknownKey(p pair, path string, valid []string) {
	if l.truncated {
		return // nobody will read it; spare the search
	}
	msg := "unknown key"
	if hint := correction(p.key.Value, path, valid, p.value); hint != "" {
		msg += "; " + hint
	} else {
		msg += "; expected one of: " + strings.Join(valid, ", ")
	}
	l.errorf(p.key, join(path, p.key.Value), "%s", msg)
}

// correction finds the correction for unknown key name at path, in order
// of confidence:
//  1. a one-letter slip of a key valid here ("inflght")
//  2. a key valid elsewhere, i.e. misplaced ("phases" under driver.http)
//  3. a larger slip of a key valid here
//  4. the name another load tool uses for a key of ours ("arrival_rate")
//  5. a slip of a key valid elsewhere
//
// It returns "" when nothing is plausible.
func correction(name, path string, valid []string, value *yaml.Node) string {
	if len(name) > 64 {
		return ""
	}
	if k, ok := nearest(name, valid, 1); ok && len([]rune(name)) >= 3 {
		return fmt.Sprintf("did you mean %q?", k)
	}
	level := template(path)
	if where := placesOf(name, level); where != "" {
		return fmt.Sprintf("%q belongs %s", name, where)
	}
	if k, ok := nearest(name, valid, suggest.Limit(name)); ok {
		return fmt.Sprintf("did you mean %q?", k)
	}
	if hint := foreign(name, level, valid, value); hint != "" {
		return hint
	}
	if k, ok := nearest(name, allKeys(), suggest.Limit(name)); ok {
		if where := placesOf(k, level); where != "" {
			return fmt.Sprintf("did you mean %q? it belongs %s", k, where)
		}
	}
	return ""
}

// nearest is the candidate closest to word within maxDist slips, ties
// going to the earlier one (suggest.Nearest's first).
func nearest(word string, candidates []string, maxDist int) (string, bool) {
	if ks := suggest.Nearest(word, candidates, maxDist); len(ks) > 0 {
		return ks[0], true
	}
	return "", false
}

var indexes = regexp.MustCompile(`\[[0-9]+\]`)

// template turns a key path into the form the key index uses: phases[3].open → phases[].open.
func template(path string) string { return indexes.ReplaceAllString(path, "[]") }

// keyIndex maps every key of the format to the levels (path templates)
// where it is valid; "" is the top level.
var keyIndex = sync.OnceValue(func() map[string][]string {
	idx := map[string][]string{}
	var walk func(t reflect.Type, level string)
	walk = func(t reflect.Type, level string) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			if t.Kind() == reflect.Slice {
				level += "[]"
			}
			t = t.Elem()
		}
		switch t {
		case rateSpecType:
			idx["from"] = append(idx["from"], level)
			idx["to"] = append(idx["to"], level)
			return
		case ruleType:
			idx["rule"] = append(idx["rule"], level)
			idx["phase"] = append(idx["phase"], level)
			return
		}
		if t.Kind() != reflect.Struct || t == durationType {
			return
		}
		for _, f := range fieldsOf(t) {
			idx[f.key] = append(idx[f.key], level)
			walk(f.typ, join(level, f.key))
		}
	}
	walk(reflect.TypeFor[Scenario](), "")
	return idx
})

var allKeys = sync.OnceValue(func() []string {
	var keys []string
	for k := range keyIndex() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
})

// placesOf says where key belongs, other than at level: "at the top
// level", "under driver.http", "under phases[].closed, phases[].open or
// phases[].ramp". It returns "" if key belongs nowhere else.
func placesOf(key, level string) string {
	var places []string
	top := false
	for _, p := range keyIndex()[key] {
		switch p {
		case level:
		case "":
			top = true
		default:
			places = append(places, p)
		}
	}
	switch {
	case top && len(places) == 0:
		return "at the top level"
	case top:
		return "at the top level or under " + orList(places)
	case len(places) > 0:
		return "under " + orList(places)
	}
	return ""
}

// orList joins "a", "b", "c" as "a, b or c".
func orList(items []string) string {
	if len(items) == 1 {
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// foreignKeys are the names other load tools (Artillery, k6, JMeter,
// Locust, wrk) give to things this format calls differently. keys lists
// our names, the most specific first: "rate" inside open, else "open".
var foreignKeys = []struct {
	names []string
	keys  []string
	hint  string // how to write the value in the container key, with %s for the value
}{
	{[]string{"arrival_rate", "rps", "qps", "tps", "rate_per_second", "requests_per_second", "throughput", "arrivals_per_second"}, []string{"rate", "open"}, "open: {rate: %s}"},
	{[]string{"vus", "users", "virtual_users", "concurrency", "threads", "workers", "clients", "conns", "max_vus"}, []string{"connections", "closed"}, "closed: {connections: %s}"},
	{[]string{"iterations", "count", "total_requests", "max_requests", "num_requests"}, []string{"requests"}, ""},
	{[]string{"thresholds", "checks", "assertions", "expectations", "criteria"}, []string{"assert"}, ""},
	{[]string{"stages", "ramp_up", "rampup", "ramping", "ramp_to"}, []string{"ramp"}, ""},
	{[]string{"think", "sleep", "pause", "wait", "pacing"}, []string{"think_time"}, ""},
	{[]string{"base_url", "host", "endpoint", "address", "server", "target_url"}, []string{"url"}, ""},
	{[]string{"time", "length", "hold", "period", "run_time"}, []string{"duration"}, ""},
	{[]string{"protocol", "engine", "engines", "scenarios"}, []string{"driver"}, ""},
	{[]string{"loop", "loops", "runs", "repeat_count", "repetitions"}, []string{"repeats"}, ""},
}

// foreign recognises a key that another tool uses (allowing one slip in
// names of six letters or more) and names ours.
func foreign(name, level string, valid []string, value *yaml.Node) string {
	norm := normalize(name)
	for _, f := range foreignKeys {
		matched := false
		for _, n := range f.names {
			n = normalize(n)
			if norm == n || len(n) >= 6 && suggest.Distance(norm, n) <= 1 {
				matched = true
				break
			}
		}
		if !matched {
			continue
		}
		for i, k := range f.keys {
			if !slices.Contains(valid, k) {
				continue
			}
			if i > 0 && f.hint != "" {
				v := "…"
				if value != nil && value.Kind == yaml.ScalarNode && value.Value != "" {
					v = value.Value
				}
				return fmt.Sprintf("did you mean %q? (write "+f.hint+")", k, v)
			}
			return fmt.Sprintf("did you mean %q?", k)
		}
		if where := placesOf(f.keys[0], level); where != "" {
			return fmt.Sprintf("did you mean %q? it belongs %s", f.keys[0], where)
		}
	}
	return ""
}

var separators = strings.NewReplacer("_", "", "-", "", " ", "")

// normalize makes arrival_rate, arrivalRate and arrival-rate the same.
func normalize(s string) string {
	return strings.ToLower(separators.Replace(s))
}
