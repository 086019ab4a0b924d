package execute

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/rules"
	"github.com/runner-dev/runner/internal/redact"
	"github.com/runner-dev/runner/schema"
	"github.com/runner-dev/runner/targets/frametarget"
	"github.com/runner-dev/runner/targets/httptarget"
	"github.com/runner-dev/runner/targets/wsgateway"
)

// Compile loads, validates and compiles one scenario file without sending
// anything. Every problem of the file is in the returned error, each as
// `file:line:col: key.path: message`.
func Compile(file string) (*schema.Scenario, *engine.Plan, error) {
	return CompileEnv(file, nil)
}

// CompileEnv is Compile with env looking up `${NAME}` variables (nil
// means the process's environment), e.g. the process's environment under
// `runner run -e KEY=VALUE`.
func CompileEnv(file string, env func(string) (string, bool)) (*schema.Scenario, *engine.Plan, error) {
	c := ruleCache{}
	sc, err := schema.LoadWith(file, c.options(env))
	if err != nil {
		return nil, nil, err
	}
	return compileScenario(sc, c)
}

// CompileData is Compile of a scenario's bytes, named file (data files
// it names are relative to file's directory); env looks up `${NAME}`
// variables (nil means the process's environment).
func CompileData(file string, data []byte, env func(string) (string, bool)) (*schema.Scenario, *engine.Plan, error) {
	c := ruleCache{}
	sc, err := schema.ParseWith(file, data, c.options(env))
	if err != nil {
		return nil, nil, err
	}
	return compileScenario(sc, c)
}

// ruleCache holds each rule the loader compiled, by source: the plan
// takes them from it, so that a rule is compiled once.
type ruleCache map[string]*rules.Rule

// options are the loader's options with the engine's rule language: each
// rule is compiled once, into c, and RuleReads reads what it compiled.
func (c ruleCache) options(env func(string) (string, bool)) schema.Options {
	return schema.Options{
		Env: env,
		CheckRule: func(src string) error {
			r, err := rules.Compile(src)
			if err == nil {
				c[src] = r
			}
			return err
		},
		RuleReads: func(src string) []string { return c[src].Metrics() },
	}
}

// compileScenario builds the driver of a loaded scenario against its URL
// (a placeholder for a reference target) and compiles its plan with the
// rules the loader compiled; errors as Compile's.
func compileScenario(sc *schema.Scenario, compiled ruleCache) (*schema.Scenario, *engine.Plan, error) {
	base := sc.Target.URL
	if base == "" {
		base = placeholderURL(sc)
	}
	var errs []error
	if parse := targetArgs[sc.Target.Serve]; parse != nil {
		// The spawned target would reject them and exit before it is
		// ready; say so now, before anything runs.
		if err := parse(sc.Target.Args); err != nil {
			errs = append(errs, argsError(sc, err))
		}
	}
	lim := engine.Limits{MaxInflight: 1, Compiled: compiled}
	if d, err := NewDriver(sc, base); err != nil {
		for _, e := range Problems(err) {
			errs = append(errs, driverError(sc, d.Key, e))
		}
		lim.MaxInflight = -1 // unknown: the driver's errors come first
	} else {
		lim.MaxInflight, lim.Timeout, lim.InflightHint = d.MaxInflight, d.Timeout, d.InflightHint
		lim.TimeoutKey = d.Key + ".timeout"
	}
	pl, err := engine.Compile(sc, lim)
	if err != nil {
		errs = append(errs, Problems(err)...)
	}
	if err := errors.Join(redactErrors(sc, errs)...); err != nil {
		return sc, nil, err
	}
	return sc, pl, nil
}

// targetArgs checks the arguments of each reference target a scenario can
// spawn (target.serve) as the target itself will parse them.
var targetArgs = map[string]func(args []string) error{
	"http":       func(a []string) error { _, err := httptarget.ParseArgs(a); return err },
	"ws-gateway": func(a []string) error { _, err := wsgateway.ParseArgs(a); return err },
	"frame":      func(a []string) error { _, err := frametarget.ParseArgs(a); return err },
}

// redactErrors removes sc's secrets from the messages of problems found
// after loading (a driver or the engine may quote a value read from
// ${ENV}; the loader's own messages show the source text instead).
func redactErrors(sc *schema.Scenario, errs []error) []error {
	red := redact.New(sc.Secrets)
	if red.Empty() {
		return errs
	}
	out := make([]error, len(errs))
	for i, err := range errs {
		if e, ok := err.(*schema.Error); ok {
			c := *e
			c.Msg = red.String(c.Msg)
			out[i] = &c
			continue
		}
		out[i] = errors.New(red.String(err.Error()))
	}
	return out
}

// problem is a problem of scenario sc at key path, positioned there.
func problem(sc *schema.Scenario, path, msg string) *schema.Error {
	line, col := sc.Pos(path)
	return &schema.Error{File: sc.File, Line: line, Col: col, Path: path, Msg: msg}
}

// argsError reports a reference target's arguments that it would reject,
// at the argument the message is about if it can tell which.
func argsError(sc *schema.Scenario, err error) *schema.Error {
	msg := err.Error()
	at := "target.args"
	if i, ok := argIndex(msg, sc.Target.Args); ok {
		at = fmt.Sprintf("target.args[%d]", i)
	}
	e := problem(sc, at, strings.ReplaceAll(msg, "\n", "; ")+" (runner serve "+sc.Target.Serve+" --help lists the flags)")
	e.Path = "target.args"
	return e
}

// argIndex finds the argument a command-line error is about: the value it
// quotes (`invalid value "x" for flag -delay`), the flag it names (`flag
// provided but not defined: -x`), or the value of the flag whose check
// failed (`error-status 700: want 200-599`).
func argIndex(msg string, args []string) (int, bool) {
	for i, a := range args {
		if strings.Contains(msg, strconv.Quote(a)) {
			return i, true
		}
	}
	for i, a := range args {
		name, _, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == a || name == "" {
			continue // not a flag
		}
		switch {
		case strings.HasSuffix(msg, "-"+name) || strings.Contains(msg, "-"+name+":"):
			return i, true
		case strings.HasPrefix(msg, name+" "):
			if !inline && i+1 < len(args) {
				return i + 1, true
			}
			return i, true
		}
	}
	return 0, false
}

// driverError positions a problem that the driver under key (e.g.
// driver.http) found in its configuration, at the key its
// drivers.ConfigError names, or at the driver's mapping.
func driverError(sc *schema.Scenario, key string, err error) *schema.Error {
	at := key
	var ce *drivers.ConfigError
	if errors.As(err, &ce) {
		if strings.HasPrefix(ce.Key, "target.") {
			at = ce.Key
		} else {
			at = key + "." + ce.Key
		}
	}
	e := problem(sc, at, err.Error())
	e.Path = key
	return e
}

// Problems lists the problems an error of Compile or CompileData holds,
// one error each, in order (errors.Join trees flattened).
func Problems(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, Problems(e)...)
		}
		return out
	}
	return []error{err}
}
