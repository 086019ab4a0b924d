package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/internal/execute"
	"github.com/runner-dev/runner/schema"
)

// envName is a variable name ${NAME} can read: letters, digits and _,
// not starting with a digit.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// scenarioEnv is the lookup of ${NAME} for a command given -e KEY=VALUE
// flags: those values first, then the process's environment. A flag
// without "=" or with a name ${NAME} cannot read is an error naming it.
func scenarioEnv(flags []string) (func(string) (string, bool), error) {
	set := map[string]string{}
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		if !ok || !envName.MatchString(k) {
			return nil, fmt.Errorf("-e %q: want KEY=VALUE, KEY of letters, digits and _ (not starting with a digit)", f)
		}
		set[k] = v
	}
	return func(name string) (string, bool) {
		if v, ok := set[name]; ok {
			return v, true
		}
		return os.LookupEnv(name)
	}, nil
}

// stdinName is how a scenario read from standard input (`-`) is named in
// messages and reports; data files it names are relative to the working
// directory.
const stdinName = "stdin.yaml"

// compileArg compiles the scenario an argument names: a file, or "-" for
// standard input (read once, at most schema.MaxFile bytes), with the
// overrides o made to its YAML first.
func (a *app) compileArg(arg string, env func(string) (string, bool), o overrides, readStdin *bool) (*schema.Scenario, *engine.Plan, error) {
	if arg != "-" && o.empty() {
		return execute.CompileEnv(arg, env)
	}
	if arg != "-" {
		b, err := readScenario(arg)
		if err != nil {
			return nil, nil, err
		}
		if b, err = o.apply(b); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", arg, err)
		}
		return execute.CompileData(arg, b, env)
	}
	if *readStdin {
		return nil, nil, fmt.Errorf("-: standard input can be given once")
	}
	*readStdin = true
	b, err := io.ReadAll(io.LimitReader(a.stdin, schema.MaxFile+1))
	if err != nil {
		return nil, nil, fmt.Errorf("-: reading standard input: %w", err)
	}
	if len(b) > schema.MaxFile {
		return nil, nil, fmt.Errorf("-: standard input holds more than %d bytes", schema.MaxFile)
	}
	if b, err = o.apply(b); err != nil {
		return nil, nil, fmt.Errorf("-: %w", err)
	}
	return execute.CompileData(stdinName, b, env)
}
