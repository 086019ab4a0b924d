package http

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/capture"
	"github.com/runner-dev/runner/drivers/internal/template"
	"github.com/runner-dev/runner/schema"
)

// flowSet is what a flow driver adds to a Driver: the mix the engine
// chooses from and, for each step, the Driver that renders, judges and
// captures its request.
type flowSet struct {
	flows []drivers.Flow
	steps [][]*Driver // by flow, then step
}

// namedCapture is one capture of a step: where the value comes from, and
// the name later steps read it by.
type namedCapture struct {
	name string
	code string // drivers.CaptureCode(name)
	c    *capture.Capture
	// inPath: a later step reads the value in its path (checkPath).
	inPath bool
	// expr is the capture's expression as a template of {{seq}},
	// {{data.NAME}} and earlier steps' captures, its values escaped
	// (capture.Escapers); nil when it has no hole and c is evaluated as
	// it is.
	expr *tmpl
}

// newFlows builds a flow driver (drivers.FlowDriver) for cfg.Flows: the
// connection side (target, TLS, timeout, keep-alive, cookies) from cfg,
// and each step's request from cfg with the step's method, path, body and
// success, and its headers over cfg's. A step's templates may read
// {{seq}} (the iteration's number), {{data.NAME}} (the iteration's row)
// and what earlier steps of its flow capture; so may its captures' json
// paths and regexes, their values escaped (compileCapture). Errors name
// the step: flows[i].steps[j].…
func newFlows(cfg schema.HTTP, baseURL, dir string) (*Driver, error) {
	base := cfg
	base.Flows = nil
	on := cookiesOn(cfg) // on by default with flows
	base.Cookies = &on
	base.Method, base.Path, base.Body, base.BodySize, base.Success = "", "", "", 0, ""
	d, err := newSpec(base, baseURL, dir, nil, nil)
	if err != nil {
		return nil, err
	}
	d.flow = &flowSet{}
	var errs []error
	for i, f := range cfg.Flows {
		df := drivers.Flow{Name: f.Name, Weight: max(f.Weight, 1)}
		var steps []*Driver
		var captured []string // by the steps before this one
		for j, st := range f.Steps {
			at := fmt.Sprintf("flows[%d].steps[%d]", i, j)
			sc := base
			sc.Method, sc.Path, sc.Body, sc.Success = st.Method, st.Path, st.Body, st.Success
			sc.Headers = maps.Clone(cfg.Headers)
			for name, v := range st.Headers {
				// A step's header replaces the driver's of the same
				// name, whatever its case.
				if k, ok := headerKey(sc.Headers, name); ok {
					delete(sc.Headers, k)
				}
				if sc.Headers == nil {
					sc.Headers = map[string]string{}
				}
				sc.Headers[name] = v
			}
			sd, err := newSpec(sc, baseURL, dir, captured, d.data)
			if err != nil {
				errs = append(errs, prefixed(at, err))
				sd = &Driver{}
			}
			earlier := slices.Clone(captured)
			for _, name := range slices.Sorted(maps.Keys(st.Capture)) {
				// Later steps may read it even when this step has
				// errors of its own: each is said once, where it is.
				captured = append(captured, name)
				nc, err := compileCapture(name, st.Capture[name], d.data, earlier)
				var ce *drivers.ConfigError
				switch {
				case errors.As(err, &ce):
					errs = append(errs, prefixed(at+".capture."+name, err))
					continue
				case err != nil:
					errs = append(errs, bad(at+".capture."+name, err))
					continue
				}
				sd.captures = append(sd.captures, nc)
				sd.captureBody = sd.captureBody || nc.c.NeedsBody()
				sd.captureHeaders = sd.captureHeaders || !nc.c.NeedsBody()
			}
			steps = append(steps, sd)
			df.Steps = append(df.Steps, drivers.Step{Name: st.Name, Think: time.Duration(st.ThinkTime)})
		}
		// A value a later step puts in its path is checked as a path
		// is: a space or '#' from the target would reshape the request
		// line.
		inPath := map[string]bool{}
		for _, sd := range steps {
			for _, v := range sd.target.vars {
				inPath[v] = true
			}
		}
		for _, sd := range steps {
			for k := range sd.captures {
				sd.captures[k].inPath = inPath[sd.captures[k].name]
			}
		}
		d.flow.flows = append(d.flow.flows, df)
		d.flow.steps = append(d.flow.steps, steps)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return d, nil
}

// compileCapture compiles the capture name of spec. Its json path or
// regex is a template of {{seq}}, {{data.NAME}} (a column of data) and
// {{NAME}} for the values captured lists (those of earlier steps); a
// regex with holes is checked with each hole as "x". Errors are
// configuration errors keyed "json" or "regex" for a template that does
// not parse or a regex that does not compile with its holes, and plain
// errors (the capture's own) otherwise.
func compileCapture(name string, spec schema.Capture, data *template.Data, captured []string) (namedCapture, error) {
	nc := namedCapture{name: name, code: drivers.CaptureCode(name)}
	key, expr := "json", &spec.JSON
	if spec.Regex != "" {
		key, expr = "regex", &spec.Regex
	}
	var t tmpl
	if (spec.JSON == "") != (spec.Regex == "") && spec.Header == "" {
		var err error
		if t, err = parseTemplate(*expr, data, captured...); err != nil {
			return nc, bad(key, err)
		}
		if len(t.holes) > 0 {
			*expr = strings.Join(t.lits, "x")
		}
	}
	c, err := capture.Compile(spec)
	if err != nil {
		if len(t.holes) > 0 {
			return nc, bad(key, fmt.Errorf("with each {{…}} as x: %w", err))
		}
		return nc, err
	}
	nc.c = c
	if len(t.holes) > 0 {
		t.esc = c.Escapers(t.lits)
		nc.expr = &t
	}
	return nc, nil
}

// prefixed puts at before the keys of err's configuration errors.
func prefixed(at string, err error) error {
	var out []error
	for _, e := range unjoin(err) {
		var ce *drivers.ConfigError
		if errors.As(e, &ce) {
			out = append(out, bad(at+"."+ce.Key, ce.Err))
			continue
		}
		out = append(out, fmt.Errorf("%s: %w", at, e))
	}
	return errors.Join(out...)
}

// unjoin splits an errors.Join into its errors.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// Flows returns the flows of a flow driver (drivers.FlowDriver); nil
// for a driver of one request, which then runs no flows.
func (d *Driver) Flows() []drivers.Flow {
	if d.flow == nil {
		return nil
	}
	return d.flow.flows
}

// spec is the Driver that renders and judges r: the step's in a flow
// driver, else d itself.
func (d *Driver) spec(r drivers.Request) *Driver {
	if d.flow == nil {
		return d
	}
	return d.flow.steps[r.Flow][r.Step]
}
