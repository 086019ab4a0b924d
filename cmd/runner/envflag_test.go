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
