// Package cirun is a kit for the tests of the CI recipes under deploy/:
// it builds the runner binary and writes small scenarios whose verdicts
// are known, so that a recipe's shell steps can be run for real against
// a spawned reference target (loopback only, about a second each).
package cirun

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
)

// Binary builds cmd/runner into a directory of its own, removed when the
// test ends, and returns the binary's path; that directory can be put on
// PATH. The Go build cache makes every build after the first a link.
func Binary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "runner")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	out, err := exec.Command("go", "build", "-o", bin, "github.com/runner-dev/runner/cmd/runner").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./cmd/runner: %v\n%s", err, out)
	}
	return bin
}

// Shell returns the path of the shell named (bash, sh); without it the
// test is skipped, but fails under CI=true, where it must be.
func Shell(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s not found, and CI must run this test", name)
	}
	t.Skipf("%s not found", name)
	return ""
}

// The scenarios Scenarios writes: each a 400 ms open phase (50/s, 20
// requests) against a spawned reference HTTP target, named as its file.
const (
	Pass    = "ci-pass"    // errors == 0: PASS, exit 0
	Fail    = "ci-fail"    // requests > 1000000: FAIL, exit 1
	Invalid = "ci-invalid" // an unknown key: exit 2, nothing sent
)

// Scenarios writes the scenarios Pass, Fail and Invalid into dir as
// NAME.yaml.
func Scenarios(t *testing.T, dir string) {
	t.Helper()
	const body = `version: 1
name: %s
target: {serve: http}
driver: {http: {method: GET, path: /}}
phases:
  - {name: steady, open: {rate: 50/s, connections: 2}, duration: 400ms}
assert:
  - %s
`
	for name, rule := range map[string]string{Pass: "errors == 0", Fail: "requests > 1000000", Invalid: "errors == 0\nspeed: fast"} {
		src := []byte(fmt.Sprintf(body, name, rule))
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ExitCode returns the exit code of a command that ran (0 when err is
// nil); an error other than a non-zero exit fails the test.
func ExitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

// ReadmeBlock returns the README's fenced block ```FENCE whose first line
// is first, that line included; none fails the test. The README is found
// from the test's directory upwards.
func ReadmeBlock(t *testing.T, fence, first string) []byte {
	t.Helper()
	readme := "README.md"
	for range 5 {
		if _, err := os.Stat(readme); err == nil {
			break
		}
		readme = filepath.Join("..", readme)
	}
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```" + regexp.QuoteMeta(fence) + "\n(" + regexp.QuoteMeta(first) + "\n.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatalf("README has no ```%s block that begins %s", fence, first)
	}
	return m[1]
}
