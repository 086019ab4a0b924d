package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/reports"
)

// Diff is one setup parameter whose value differs: between the sides
// (Base and New), or among the reports pooled on one side (Base holds
// every value seen there, New is empty).
type Diff struct {
	Param     string
	Base, New string
}

// Ignored are the scenario keys that are not compared, with the reason:
// they do not change what is sent to the target or how it is measured.
var Ignored = []struct{ Key, Why string }{
	{"description", "free text"},
	{"repeats", "the number of samples, shown as n on each side, not a condition of the measurement"},
	{"assert", "rules are judged after the run; they change no measured value"},
	{"outputs", "where result files go"},
	{"target", "compared as the target parameter below (the spawned command line, or the URL); target.pid names a process instance, not a setting"},
}

// unset stands for a parameter a report does not have.
const unset = "(unset)"

// setupOf lists the setup parameters of one run: the scenario's values
// (flattened key paths of its JSON form, less Ignored), the target, the
// runner and Go versions, the machine and the commits.
func setupOf(r *reports.Run) map[string]string {
	p := map[string]string{}
	if r.Scenario != nil {
		if b, err := json.Marshal(r.Scenario); err == nil {
			var v map[string]any
			d := json.NewDecoder(bytes.NewReader(b))
			d.UseNumber()
			if d.Decode(&v) == nil {
				for _, ig := range Ignored {
					delete(v, ig.Key)
				}
				flatten("scenario", v, p)
			}
		}
	}
	if r.Plan != nil {
		// The window a phase ran with, not the key the scenario wrote:
		// unset at 5,001/s is a 1 ms window, unset at 5,000/s none, and
		// an explicit 1ms at 6,000/s the same as unset.
		for k := range p {
			if strings.HasSuffix(k, ".open.dispatch_window") {
				delete(p, k)
			}
		}
		for i, ph := range r.Plan.Phases {
			if ph.Model == engine.Open {
				p[fmt.Sprintf("plan.phases[%d].dispatch_window", i)] = ph.DispatchWindow.String()
			}
		}
	}
	switch {
	case strings.TrimSpace(r.TargetSpawned) != "":
		p["target"] = strings.TrimSpace(r.TargetSpawned)
	case r.Scenario != nil && r.Scenario.Target.URL != "":
		p["target"] = r.Scenario.Target.URL
	default:
		p["target"] = r.Target
	}
	e := r.Env
	p["runner version"] = e.Runner
	p["go version"] = e.GoVersion
	p["machine: os/arch"] = e.OS + "/" + e.Arch
	p["machine: kernel"] = e.Kernel
	p["machine: cpu model"] = e.CPUModel
	p["machine: cores"] = strconv.Itoa(e.Cores)
	p["machine: gomaxprocs"] = strconv.Itoa(e.GOMAXPROCS)
	p["runner commit"] = e.RunnerCommit
	p["workdir commit"] = e.WorkdirCommit
	for k, v := range p {
		if v == "" {
			p[k] = unset
		}
	}
	return p
}

// flatten writes every leaf of v under its key path: a.b[0].c.
func flatten(path string, v any, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			flatten(path+"."+k, x, out)
		}
	case []any:
		if len(v) == 0 {
			out[path] = "[]"
		}
		for i, x := range v {
			flatten(fmt.Sprintf("%s[%d]", path, i), x, out)
		}
	case nil:
		out[path] = "null"
	case string:
		out[path] = strconv.Quote(v)
	default:
		out[path] = fmt.Sprint(v)
	}
}

// paramOrder sorts parameters: the target, the scenario's keys, then the
// environment in a fixed order.
func paramOrder(a, b string) int {
	rank := func(s string) int {
		switch {
		case s == "target":
			return 0
		case strings.HasPrefix(s, "scenario."), strings.HasPrefix(s, "plan."):
			return 1
		}
		return 2 + slices.Index(envOrder, s)
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra - rb
	}
	return strings.Compare(a, b)
}

var envOrder = []string{"runner version", "go version", "machine: os/arch", "machine: kernel", "machine: cpu model", "machine: cores", "machine: gomaxprocs", "runner commit", "workdir commit"}

// sideSetup collects each parameter's distinct values over a side's
// reports, in sorted order.
func sideSetup(runs []*reports.Run) map[string][]string {
	var each []map[string]string
	keys := map[string]bool{}
	for _, r := range runs {
		s := setupOf(r)
		each = append(each, s)
		for k := range s {
			keys[k] = true
		}
	}
	vals := map[string][]string{}
	for k := range keys {
		seen := map[string]bool{}
		for _, s := range each {
			v, ok := s[k]
			if !ok {
				v = unset
			}
			if !seen[v] {
				seen[v] = true
				vals[k] = append(vals[k], v)
			}
		}
		sort.Strings(vals[k])
	}
	return vals
}

// setupDiffs compares the sides' setups; it also returns the parameters
// that differ among the reports pooled on each side.
func setupDiffs(base, new []*reports.Run) (diffs, baseMixed, newMixed []Diff) {
	bv := sideSetup(base)
	nv := sideSetup(new)
	keys := map[string]bool{}
	for k := range bv {
		keys[k] = true
	}
	for k := range nv {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.SortFunc(sorted, paramOrder)
	get := func(m map[string][]string, k string) []string {
		if v, ok := m[k]; ok {
			return v
		}
		return []string{unset}
	}
	for _, k := range sorted {
		b, n := get(bv, k), get(nv, k)
		if !slices.Equal(b, n) {
			diffs = append(diffs, Diff{Param: k, Base: strings.Join(b, " | "), New: strings.Join(n, " | ")})
		}
		if len(b) > 1 {
			baseMixed = append(baseMixed, Diff{Param: k, Base: strings.Join(b, " | ")})
		}
		if len(n) > 1 {
			newMixed = append(newMixed, Diff{Param: k, Base: strings.Join(n, " | ")})
		}
	}
	return diffs, baseMixed, newMixed
}
