package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/reports"
)

// envScenario reads its path, its connections and a header from the
// environment.
const envScenario = `version: 1
name: env
target: {url: "${URL}"}
driver: {http: {path: "/${WHERE}", headers: {X-Token: "${TOKEN}"}, timeout: 1s}}
phases: [{closed: {connections: "${CONNS:-1}"}, requests: 20}]
assert: [errors == 0]
`

// -e KEY=VALUE sets ${KEY} for runner run, plan and validate, ahead of
// the process's environment; a value read into a string is a secret like
// any ${ENV}; a malformed flag is a usage error.
func TestEnvFlag(t *testing.T) {
	url := target(t)
	t.Setenv("CONNS", "7")
	file := scenario(t, "env.yaml", envScenario)
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	code, out, errOut := cli(t, "run", "-q", "-e", "URL="+url, "-e", "WHERE=from-the-flag", "-e", "TOKEN=s3cr3t-token", "-e", "CONNS=3", "--json", jsonPath, file)
	if code != exitPass {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	r, err := reports.Load(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Plan.Phases[0].Connections; got != 3 {
		t.Errorf("-e CONNS=3 with CONNS=7 in the environment: %d connections, want the flag's", got)
	}
	if r.Scenario.Driver.HTTP.Path != "/[redacted]" {
		t.Errorf("the -e value read into the path is not redacted: %q", r.Scenario.Driver.HTTP.Path)
	}
	b, _ := os.ReadFile(jsonPath)
	if strings.Contains(string(b)+out+errOut, "s3cr3t-token") {
		t.Error("the -e value of a header reached the report or the console")
	}
	if code, out, _ := cli(t, "plan", "-e", "URL="+url, "-e", "WHERE=w", "-e", "TOKEN=x", "-e", "CONNS=5", file); code != 0 || !strings.Contains(out, "5 connection(s)") {
		t.Errorf("plan -e: exit %d:\n%s", code, out)
	}
	if code, _, errOut := cli(t, "validate", "-e", "URL="+url, file); code != exitInvalid || !strings.Contains(errOut, "TOKEN is not set") {
		t.Errorf("validate without TOKEN: exit %d: %s", code, errOut)
	}
	for _, bad := range []string{"NOEQUALS", "1X=2", "=v"} {
		if code, _, errOut := cli(t, "run", "-e", bad, file); code != exitInvalid || !strings.Contains(errOut, "want KEY=VALUE") {
			t.Errorf("-e %q: exit %d: %s", bad, code, errOut)
		}
	}
}

// `-` reads the scenario from standard input, once.
func TestScenarioFromStdin(t *testing.T) {
	url := target(t)
	stdin := func(a *app) { a.stdin = strings.NewReader(envScenario) }
	code, out, errOut := cliWith(t, stdin, "run", "-q", "-e", "URL="+url, "-e", "WHERE=x", "-e", "TOKEN=t", "-")
	if code != exitPass || !strings.Contains(out, "runner · env") {
		t.Fatalf("run -: exit %d: %s%s", code, out, errOut)
	}
	code, out, errOut = cliWith(t, stdin, "validate", "-e", "URL="+url, "-e", "WHERE=x", "-e", "TOKEN=t", "-")
	if code != 0 || !strings.Contains(out, "-: valid") {
		t.Fatalf("validate -: exit %d: %s%s", code, out, errOut)
	}
	code, _, errOut = cliWith(t, stdin, "validate", "-e", "URL="+url, "-e", "WHERE=x", "-e", "TOKEN=t", "-", "-")
	if code != exitInvalid || !strings.Contains(errOut, "standard input can be given once") {
		t.Fatalf("validate - -: exit %d: %s", code, errOut)
	}
	code, _, errOut = cliWith(t, func(a *app) { a.stdin = strings.NewReader("version: 1\nphases: [\n") }, "validate", "-")
	if code != exitInvalid || !strings.Contains(errOut, "stdin.yaml:") {
		t.Fatalf("bad YAML on stdin: exit %d: %s", code, errOut)
	}
}

// runner --version and -v print what runner version prints: the version,
// the commit, Go and the platform.
func TestVersionFlag(t *testing.T) {
	_, want, _ := cli(t, "version")
	if !strings.HasPrefix(want, "runner ") || !strings.Contains(want, "commit ") {
		t.Fatalf("runner version: %q", want)
	}
	for _, flag := range []string{"--version", "-v"} {
		if code, out, errOut := cli(t, flag); code != 0 || out != want {
			t.Errorf("runner %s: exit %d, %q%s; want %q", flag, code, out, errOut, want)
		}
	}
}

// --set, --duration, --rate and --connections change the scenario before
// it is loaded, so the loader checks the result as if it were written in
// the file; paths that do not exist and values the loader refuses are
// errors naming them.
func TestOverrides(t *testing.T) {
	file := "../../scenarios/quickstart.yaml"
	code, out, errOut := cli(t, "plan", "--duration", "3s", "--rate", "50/s", "--connections", "3", "--set", "repeats=2", "--set", "phases.warmup.closed.connections=2", file)
	for _, want := range []string{"2 repeat(s)", "closed, 2 connection(s)", "open, 3 connection(s)", "50/s constant", "expected     150 requests; time 3s"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("plan with overrides: exit %d, no %q in:\n%s%s", code, want, out, errOut)
		}
	}
	// The warmup keeps its own duration.
	if !strings.Contains(out, "bound        duration 1s") {
		t.Errorf("--duration changed the warmup:\n%s", out)
	}
	if code, out, _ := cli(t, "plan", "--set", "phases.1.open.rate={from: 10/s, to: 90/s}", file); code != 0 || !strings.Contains(out, "10/s → 90/s") {
		t.Errorf("--set a mapping by index: exit %d:\n%s", code, out)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--set", "phases.nosuch.duration=1s"}, `no item "nosuch"`},
		{[]string{"--set", "repeats"}, "want PATH=VALUE"},
		{[]string{"--rate", "fast"}, "rate"},
		// A flag's bad value is named as the flag's, not as the line of
		// the file it replaces (the fresh user's --duration 30 said
		// "s.yaml:10:66: phases[0].duration").
		{[]string{"--duration", "30"}, "--duration 30: expected a duration with unit"},
		{[]string{"--rate", "100"}, "--rate 100: expected a rate with unit"},
		{[]string{"--connections", "0"}, "--connections 0: expected a whole number"},
		{[]string{"--set", "phases.steady.duration=30"}, "duration"},
		{[]string{"--set", "repeats.x=1"}, "is a value, not a mapping"},
	} {
		code, out, errOut := cli(t, append(append([]string{"validate"}, c.args...), file)...)
		if code != exitInvalid || !strings.Contains(errOut, c.says) {
			t.Errorf("%v: exit %d: %s%s; want it to say %q", c.args, code, out, errOut, c.says)
		}
	}
}
