package gitlab

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mattn/go-shellwords"
	"golang.org/x/mod/modfile"
	"gopkg.in/yaml.v3"

	"github.com/runner-dev/runner/deploy/internal/cirun"
)

// template is the job template users extend (README "runner in CI").
const template = "runner.gitlab-ci.yml"

// decodeAll decodes a .gitlab-ci.yml with GitLab's keywords only, hidden
// jobs (.name) kept.
func decodeAll(src []byte) (pipeline, error) {
	var p pipeline
	d := yaml.NewDecoder(bytes.NewReader(src))
	d.KnownFields(true)
	err := d.Decode(&p)
	return p, err
}

func loadTemplate(t *testing.T) job {
	t.Helper()
	src, err := os.ReadFile(template)
	if err != nil {
		t.Fatal(err)
	}
	p, err := decodeAll(src)
	if err != nil {
		t.Fatalf("%s: %v", template, err)
	}
	if len(p.Jobs) != 1 || p.Stages != nil || p.Variables != nil || p.Default != nil || p.Workflow != nil {
		t.Fatalf("%s: want the hidden job .runner alone (an include must not change the includer's pipeline), got %d job(s) and global keys", template, len(p.Jobs))
	}
	j, ok := p.Jobs[".runner"]
	if !ok {
		t.Fatalf("%s: no job .runner", template)
	}
	return j
}

// runLine returns the words of the template's script command that runs
// runner run, up to the || that keeps its exit code, quotes removed.
func runLine(t *testing.T, j job) []string {
	t.Helper()
	for _, line := range j.Script {
		for _, cmd := range strings.Split(line, ";") {
			before, after, kept := strings.Cut(cmd, "||")
			w, err := shellwords.Parse(before)
			if err != nil || len(w) < 2 || w[0] != "runner" || w[1] != "run" {
				continue
			}
			if !kept || strings.TrimSpace(after) != "code=$?" {
				t.Fatalf("%s: runner run's exit code is not kept (… || code=$?): %s", template, line)
			}
			return w
		}
	}
	t.Fatalf("%s: no script line runs runner run", template)
	return nil
}

// TestTemplate: the reports runner writes are the artifacts kept and the
// JUnit report published, whatever the verdict; the job's exit code is
// runner's, also passed on in a dotenv report; the image's Go is go.mod's.
func TestTemplate(t *testing.T) {
	j := loadTemplate(t)
	run := runLine(t, j)
	if got := run[len(run)-2:]; !slices.Equal(got, []string{"$RUNNER_ARGS", "$RUNNER_SCENARIO"}) {
		t.Errorf("runner run ends with %v, want $RUNNER_ARGS $RUNNER_SCENARIO (unquoted: several files and flags)", got)
	}
	for _, v := range []string{"RUNNER_SCENARIO", "RUNNER_ARGS", "RUNNER_VERSION"} {
		if _, ok := j.Variables[v]; !ok {
			t.Errorf("variable %s is not declared", v)
		}
	}
	a := j.Artifacts
	if a == nil || a.Reports == nil || a.When != "always" {
		t.Fatalf("artifacts %+v: want when: always, with reports", a)
	}
	junit := flag(t, run, "--junit")
	if a.Reports.JUnit != junit {
		t.Errorf("publishes JUnit %s, runner writes %s", a.Reports.JUnit, junit)
	}
	for _, f := range []string{"--json", "--markdown", "--html", "--junit"} {
		dir := path.Dir(flag(t, run, f))
		if !slices.ContainsFunc(a.Paths, func(p string) bool { return strings.TrimSuffix(p, "/") == dir }) {
			t.Errorf("%s writes into %s, which is not kept (paths %v)", f, dir, a.Paths)
		}
	}
	if n := len(j.Script); n < 2 || j.Script[n-1] != `exit "$code"` || j.Script[n-2] != `echo "RUNNER_EXIT_CODE=$code" >`+a.Reports.Dotenv {
		t.Errorf("the script does not end by writing RUNNER_EXIT_CODE into the dotenv report %s, then exit \"$code\": %q", a.Reports.Dotenv, j.Script)
	}
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax("go.mod", gomod, nil)
	if err != nil {
		t.Fatal(err)
	}
	if img, _ := j.Image.(string); !strings.HasPrefix(img, "golang:"+f.Go.Version) {
		t.Errorf("image %v, want golang:%s… (go.mod's Go)", j.Image, f.Go.Version)
	}
	if !slices.ContainsFunc(j.BeforeScript, func(l string) bool {
		return strings.Contains(l, `go install "github.com/runner-dev/runner/cmd/runner@$RUNNER_VERSION"`)
	}) {
		t.Error("before_script does not go install runner@$RUNNER_VERSION")
	}
}

// TestTemplateFindsErrors: a misspelt keyword and a JUnit path that is
// not the one written are refused, so that the checks above mean something.
func TestTemplateFindsErrors(t *testing.T) {
	src, err := os.ReadFile(template)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(src, []byte("    reports:\n"), []byte("    report:\n"), 1)
	if _, err := decodeAll(bad); bytes.Equal(bad, src) || err == nil {
		t.Error("artifacts: report: (for reports:) decoded")
	}
}

// readmeGitlab returns the README's GitLab snippet. Its fence is ```yml:
// the README's ```yaml blocks are scenarios, which the schema's tests load.
func readmeGitlab(t *testing.T) []byte {
	t.Helper()
	return cirun.ReadmeBlock(t, "yml", "# .gitlab-ci.yml")
}

// TestReadmeGitlab: the README's snippet is GitLab's keywords only,
// includes this template, extends .runner, sets only variables that the
// template reads, and names a scenario that exists.
func TestReadmeGitlab(t *testing.T) {
	tj := loadTemplate(t)
	p, err := decodeAll(readmeGitlab(t))
	if err != nil {
		t.Fatalf("README's .gitlab-ci.yml: %v", err)
	}
	inc, _ := p.Include.([]any)
	var local string
	for _, i := range inc {
		if m, ok := i.(map[string]any); ok {
			local, _ = m["local"].(string)
		}
	}
	if path.Base(local) != template {
		t.Errorf("README's snippet includes %v, want a copy of %s", p.Include, template)
	}
	j, ok := p.Jobs["load-test"]
	if !ok || j.Extends != ".runner" {
		t.Fatalf("README's snippet: no job load-test that extends .runner")
	}
	for v := range j.Variables {
		if _, ok := tj.Variables[v]; !ok {
			t.Errorf("README's snippet sets %s, which %s does not read", v, template)
		}
	}
	if _, err := os.Stat("../../" + j.Variables["RUNNER_SCENARIO"]); err != nil {
		t.Errorf("RUNNER_SCENARIO: %v", err)
	}
}

// TestTemplateScript runs the template's script (not its before_script,
// which installs runner from the network) with bash, as GitLab does
// (set -eo pipefail), runner built from this checkout on PATH: a passing,
// a failing and an invalid scenario, and none, give the job runner's exit
// code, the dotenv report and, when runner wrote one, the JUnit report.
func TestTemplateScript(t *testing.T) {
	bash := cirun.Shell(t, "bash")
	j := loadTemplate(t)
	bin := cirun.Binary(t)
	script := strings.Join(j.Script, "\n")
	for _, c := range []struct {
		scenario string
		code     int
		junit    bool
	}{
		{cirun.Pass + ".yaml", 0, true},
		{cirun.Fail + ".yaml", 1, true},
		{cirun.Invalid + ".yaml", 2, false},
		{"", 2, false},
	} {
		t.Run(fmt.Sprint(c.code, c.scenario), func(t *testing.T) {
			work := t.TempDir()
			cirun.Scenarios(t, work)
			cmd := exec.Command(bash, "-eo", "pipefail", "-c", script)
			cmd.Dir = work
			cmd.Env = append(os.Environ(),
				"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
				"RUNNER_SCENARIO="+c.scenario, "RUNNER_ARGS=-q --log-level warn")
			out, err := cmd.CombinedOutput()
			if code := cirun.ExitCode(t, err); code != c.code {
				t.Fatalf("the script exits %d, want %d\n%s", code, c.code, out)
			}
			if c.scenario == "" {
				if !strings.Contains(string(out), "set RUNNER_SCENARIO") {
					t.Errorf("no RUNNER_SCENARIO: %s", out)
				}
				return
			}
			env, err := os.ReadFile(filepath.Join(work, j.Artifacts.Reports.Dotenv))
			if want := fmt.Sprintf("RUNNER_EXIT_CODE=%d\n", c.code); err != nil || string(env) != want {
				t.Errorf("dotenv report: %q, %v; want %q", env, err, want)
			}
			_, err = os.Stat(filepath.Join(work, j.Artifacts.Reports.JUnit))
			if (err == nil) != c.junit {
				t.Errorf("JUnit report %s: %v; want it written: %v", j.Artifacts.Reports.JUnit, err, c.junit)
			}
		})
	}
}
