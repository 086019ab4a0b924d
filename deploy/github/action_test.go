package github

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"gopkg.in/yaml.v3"

	"github.com/runner-dev/runner/deploy/internal/cirun"
)

// actionFile is the composite action at the repository root (uses:
// runner-dev/runner@REF).
const actionFile = "../../action.yml"

// action is an action's metadata (docs.github.com: metadata syntax),
// decoded with KnownFields: a misspelt key is an error here.
type action struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Author      string `yaml:"author"`
	Branding    struct {
		Icon  string `yaml:"icon"`
		Color string `yaml:"color"`
	} `yaml:"branding"`
	Inputs map[string]struct {
		Description string  `yaml:"description"`
		Required    bool    `yaml:"required"`
		Default     *string `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Description string `yaml:"description"`
		Value       string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string      `yaml:"using"`
		Steps []yaml.Node `yaml:"steps"`
	} `yaml:"runs"`
}

// compositeStep is a step of a composite action: a script (run and
// shell) or an action (uses).
type compositeStep struct {
	ID               string            `yaml:"id"`
	Name             string            `yaml:"name"`
	If               string            `yaml:"if"`
	Uses             string            `yaml:"uses"`
	With             map[string]string `yaml:"with"`
	Run              string            `yaml:"run"`
	Shell            string            `yaml:"shell"`
	Env              map[string]string `yaml:"env"`
	WorkingDirectory string            `yaml:"working-directory"`
	ContinueOnError  any               `yaml:"continue-on-error"`
}

func loadAction(t *testing.T) (action, []compositeStep) {
	t.Helper()
	src, err := os.ReadFile(actionFile)
	if err != nil {
		t.Fatal(err)
	}
	var a action
	d := yaml.NewDecoder(bytes.NewReader(src))
	d.KnownFields(true)
	if err := d.Decode(&a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	steps := make([]compositeStep, len(a.Runs.Steps))
	for i, n := range a.Runs.Steps {
		var buf bytes.Buffer
		if err := yaml.NewEncoder(&buf).Encode(&n); err != nil {
			t.Fatal(err)
		}
		d := yaml.NewDecoder(&buf)
		d.KnownFields(true)
		if err := d.Decode(&steps[i]); err != nil {
			t.Fatalf("action.yml: step %d (line %d): %v", i+1, n.Line, err)
		}
	}
	return a, steps
}

// asWorkflow writes the action's steps as the one job of a reusable
// workflow whose inputs are the action's, and its outputs as the job's:
// actionlint (v1.7) lints workflows, not an action's steps, and checks
// there what it checks in a workflow: expressions and their contexts
// (inputs.X, steps.ID.outputs), the inputs of the actions used.
func asWorkflow(t *testing.T, src []byte) []byte {
	t.Helper()
	var a struct {
		Inputs map[string]struct {
			Required bool    `yaml:"required"`
			Default  *string `yaml:"default"`
		} `yaml:"inputs"`
		Outputs map[string]struct {
			Value string `yaml:"value"`
		} `yaml:"outputs"`
		Runs struct {
			Steps []yaml.Node `yaml:"steps"`
		} `yaml:"runs"`
	}
	if err := yaml.Unmarshal(src, &a); err != nil {
		t.Fatal(err)
	}
	inputs := map[string]map[string]any{}
	for name, in := range a.Inputs {
		spec := map[string]any{"type": "string", "required": in.Required}
		if in.Default != nil {
			spec["default"] = *in.Default
		}
		inputs[name] = spec
	}
	outputs := map[string]string{}
	for name, o := range a.Outputs {
		outputs[name] = o.Value
	}
	w := map[string]any{
		"on": map[string]any{"workflow_call": map[string]any{"inputs": inputs}},
		"jobs": map[string]any{"action": map[string]any{
			"runs-on": "ubuntu-latest",
			"outputs": outputs,
			"steps":   a.Runs.Steps,
		}},
	}
	out, err := yaml.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestActionActionlint: the action's steps, as a workflow job, pass
// actionlint.
func TestActionActionlint(t *testing.T) {
	src, err := os.ReadFile(actionFile)
	if err != nil {
		t.Fatal(err)
	}
	w := asWorkflow(t, src)
	for _, e := range lint(t, w) {
		t.Errorf("action.yml's steps as a workflow:%d:%d: %s [%s]\n%s", e.Line, e.Column, e.Message, e.Kind, w)
	}
}

// readmeWorkflow returns the README's workflow snippet. Its fence is
// ```yml: the README's ```yaml blocks are scenarios, which the schema's
// tests load.
func readmeWorkflow(t *testing.T) []byte {
	t.Helper()
	return cirun.ReadmeBlock(t, "yml", "# .github/workflows/load-test.yml")
}

// lintWithAction lints the README's workflow in a project that holds the
// action at its root, with the action used as the local ./ (actionlint
// then checks the inputs given and the outputs read against action.yml).
func lintWithAction(t *testing.T, workflow, act []byte) []*actionlint.Error {
	t.Helper()
	const uses = "runner-dev/runner@main"
	if !bytes.Contains(workflow, []byte("uses: "+uses)) {
		t.Fatalf("the README's workflow does not use %s:\n%s", uses, workflow)
	}
	workflow = bytes.Replace(workflow, []byte(uses), []byte("./"), 1)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".github", "workflows"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "action.yml"), act, 0o644); err != nil {
		t.Fatal(err)
	}
	return lintIn(t, dir, filepath.Join(dir, ".github", "workflows", "load-test.yml"), workflow)
}

func TestReadmeWorkflowActionlint(t *testing.T) {
	act, err := os.ReadFile(actionFile)
	if err != nil {
		t.Fatal(err)
	}
	w := readmeWorkflow(t)
	for _, e := range lintWithAction(t, w, act) {
		t.Errorf("README workflow:%d:%d: %s [%s]", e.Line, e.Column, e.Message, e.Kind)
	}
}

// TestActionActionlintFindsErrors: the checks above do read the action:
// a step output that does not exist, an input the action does not
// declare, an output it does not have, a missing required input, and an
// action metadata error are each found.
func TestActionActionlintFindsErrors(t *testing.T) {
	act, err := os.ReadFile(actionFile)
	if err != nil {
		t.Fatal(err)
	}
	w := readmeWorkflow(t)
	for _, m := range []struct {
		in                  string // "action" or "workflow"
		from, to, want      string
		actionInWorkflowRun bool
	}{
		{"action", "steps.run.outputs.exit-code }}", "steps.runs.outputs.exit-code }}", `"runs"`, false},
		{"action", "inputs.artifact-name }}", "inputs.artifact_name }}", "artifact_name", false},
		{"action", "if-no-files-found: warn", "if-no-file-found: warn", "if-no-file-found", false},
		{"workflow", "scenario: scenarios/quickstart.yaml", "scenarios: scenarios/quickstart.yaml", "scenarios", true},
		{"workflow", "steps.load.outputs.verdict", "steps.load.outputs.outcome", "outcome", true},
		{"action", "  scenario:\n", "  scenario_file:\n", "scenario", true},
		{"action", "using: composite", "using: compost", "compost", true},
	} {
		a, wf := act, w
		switch m.in {
		case "action":
			a = []byte(strings.Replace(string(act), m.from, m.to, 1))
			if bytes.Equal(a, act) {
				t.Fatalf("action.yml has no %q to change", m.from)
			}
		case "workflow":
			wf = []byte(strings.Replace(string(w), m.from, m.to, 1))
			if bytes.Equal(wf, w) {
				t.Fatalf("the README workflow has no %q to change", m.from)
			}
		}
		var errs []*actionlint.Error
		if m.actionInWorkflowRun {
			errs = lintWithAction(t, wf, a)
		} else {
			errs = lint(t, asWorkflow(t, a))
		}
		if !slices.ContainsFunc(errs, func(e *actionlint.Error) bool { return strings.Contains(e.Message, m.want) }) {
			t.Errorf("%s: %q → %q: actionlint found %v, nothing about %s", m.in, m.from, m.to, errs, m.want)
		}
	}
}

// TestActionShape: the inputs and outputs README "runner in CI" names;
// a script step for each shell command, with expressions only in env (a
// scenario name is never pasted into a script); the reports uploaded
// whatever the verdict, before the last step fails the job with the
// exit code the run step recorded.
func TestActionShape(t *testing.T) {
	a, steps := loadAction(t)
	if a.Runs.Using != "composite" {
		t.Fatalf("runs.using %q, want composite", a.Runs.Using)
	}
	var ins []string
	for name := range a.Inputs {
		ins = append(ins, name)
	}
	slices.Sort(ins)
	if want := []string{"args", "artifact-name", "results", "scenario", "upload", "version"}; !slices.Equal(ins, want) {
		t.Errorf("inputs %v, want %v", ins, want)
	}
	if !a.Inputs["scenario"].Required {
		t.Error("input scenario is not required")
	}
	for name, in := range a.Inputs {
		if in.Description == "" {
			t.Errorf("input %s has no description", name)
		}
	}
	for _, name := range []string{"exit-code", "verdict", "results"} {
		if v := a.Outputs[name].Value; v != "${{ steps.run.outputs."+name+" }}" {
			t.Errorf("output %s = %q, want the run step's", name, v)
		}
	}
	run, upload, last := -1, -1, len(steps)-1
	for i, s := range steps {
		if s.Run != "" {
			if s.Shell != "bash" {
				t.Errorf("step %q: shell %q, want bash (a composite step must name it)", s.Name, s.Shell)
			}
			if strings.Contains(s.Run, "${{") {
				t.Errorf("step %q pastes an expression into its script; pass it in env", s.Name)
			}
		}
		if s.ID == "run" {
			run = i
		}
		if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
			upload = i
			if s.If != "${{ always() && inputs.upload == 'true' }}" {
				t.Errorf("upload if: %q: want it whatever the verdict, unless upload is false", s.If)
			}
			if s.With["path"] != "${{ inputs.results }}" || s.With["name"] != "${{ inputs.artifact-name }}" {
				t.Errorf("upload with %v: want path inputs.results, name inputs.artifact-name", s.With)
			}
		}
	}
	if run < 0 || upload < run || last <= upload {
		t.Fatalf("steps: run at %d, upload at %d, last %d: want run, then upload, then the failing step", run, upload, last)
	}
	rs := steps[run]
	if rs.Env["SCENARIO"] != "${{ inputs.scenario }}" || rs.Env["ARGS"] != "${{ inputs.args }}" || rs.Env["RESULTS"] != "${{ inputs.results }}" {
		t.Errorf("run step env %v", rs.Env)
	}
	if strings.Contains(rs.Run, "cat") && strings.Contains(rs.Run, ".md") {
		t.Error("the run step copies a Markdown report to the summary, which runner run does itself")
	}
	ls := steps[last]
	if ls.If != "" || ls.Env["CODE"] != "${{ steps.run.outputs.exit-code }}" {
		t.Errorf("last step: if %q, env %v: want it to run after a passing upload with the run's exit code", ls.If, ls.Env)
	}
}

// TestActionInstall runs the install step's script as the runner machine
// would, with no version input: it builds runner from the action's
// checkout (this one), puts it on GITHUB_PATH, and the binary says it is
// the ref the action was used at.
func TestActionInstall(t *testing.T) {
	bash := cirun.Shell(t, "bash")
	_, steps := loadAction(t)
	i := slices.IndexFunc(steps, func(s compositeStep) bool { return s.Name == "Install runner" })
	if i < 0 {
		t.Fatal("no step Install runner")
	}
	s := steps[i]
	if s.Env["VERSION"] != "${{ inputs.version }}" || s.Env["ACTION_PATH"] != "${{ github.action_path }}" || s.Env["ACTION_REF"] != "${{ github.action_ref }}" {
		t.Errorf("install step env %v", s.Env)
	}
	tmp, path := t.TempDir(), filepath.Join(t.TempDir(), "path")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, "--noprofile", "--norc", "-eo", "pipefail", "-c", s.Run)
	cmd.Env = append(os.Environ(), "VERSION=", "ACTION_PATH="+root, "ACTION_REF=v0.9.9-test", "RUNNER_TEMP="+tmp, "GITHUB_PATH="+path, "RUNNER_OS=Linux")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("install step: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "runner v0.9.9-test (commit ") {
		t.Errorf("the installed runner says %q, want the action's ref v0.9.9-test as its version", out)
	}
	dirs, err := os.ReadFile(path)
	if want := filepath.Join(tmp, "runner-bin") + "\n"; err != nil || string(dirs) != want {
		t.Errorf("GITHUB_PATH: %q, %v; want %q", dirs, err, want)
	}
}

// TestActionScripts runs the run step's and the last step's scripts with
// bash, as the runner machine would (GITHUB_OUTPUT, GITHUB_STEP_SUMMARY,
// the inputs in env), with runner built from this checkout on PATH: a
// passing, a failing and an invalid scenario give their exit codes and
// verdicts as outputs without failing the run step, leave their reports,
// and the last step exits with the code.
func TestActionScripts(t *testing.T) {
	bash := cirun.Shell(t, "bash")
	_, steps := loadAction(t)
	var runStep, lastStep compositeStep
	for _, s := range steps {
		if s.ID == "run" {
			runStep = s
		}
	}
	lastStep = steps[len(steps)-1]
	bin := cirun.Binary(t)
	work := t.TempDir()
	cirun.Scenarios(t, work)

	for _, c := range []struct {
		scenario string
		code     int
		verdict  string
		reports  bool
	}{
		{cirun.Pass, 0, "pass", true},
		{cirun.Fail, 1, "fail", true},
		{cirun.Invalid, 2, "invalid", false},
	} {
		t.Run(c.verdict, func(t *testing.T) {
			results := "out-" + c.verdict
			output := filepath.Join(t.TempDir(), "output")
			summary := filepath.Join(t.TempDir(), "summary")
			env := append(os.Environ(),
				"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
				"GITHUB_OUTPUT="+output, "GITHUB_STEP_SUMMARY="+summary,
				"SCENARIO="+c.scenario+".yaml", "ARGS=-q --log-level warn", "RESULTS="+results)
			cmd := exec.Command(bash, "--noprofile", "--norc", "-eo", "pipefail", "-c", runStep.Run)
			cmd.Dir, cmd.Env = work, env
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("the run step failed (it must record the code, not fail): %v\n%s", err, out)
			}
			got, err := os.ReadFile(output)
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("exit-code=%d\nverdict=%s\nresults=%s\n", c.code, c.verdict, results)
			if string(got) != want {
				t.Errorf("GITHUB_OUTPUT:\n%s\nwant\n%s", got, want)
			}
			sum, _ := os.ReadFile(summary)
			if c.reports {
				// runner's own Markdown report.
				if !bytes.Contains(sum, []byte(c.scenario)) || !bytes.Contains(sum, []byte(strings.ToUpper(c.verdict))) {
					t.Errorf("step summary has no %s report for %s:\n%s", strings.ToUpper(c.verdict), c.scenario, sum)
				}
				for _, f := range []string{c.scenario + ".json", c.scenario + ".md", c.scenario + ".html", "junit.xml", "results.tsv"} {
					if _, err := os.Stat(filepath.Join(work, results, f)); err != nil {
						t.Errorf("no report %s: %v", f, err)
					}
				}
			} else if want := fmt.Sprintf("**runner: %s** (exit %d)", c.verdict, c.code); !bytes.Contains(sum, []byte(want)) {
				t.Errorf("step summary %q: want the line %q", sum, want)
			}

			last := exec.Command(bash, "--noprofile", "--norc", "-eo", "pipefail", "-c", lastStep.Run)
			last.Env = append(os.Environ(), fmt.Sprintf("CODE=%d", c.code), "VERDICT="+c.verdict)
			out, err := last.CombinedOutput()
			if code := cirun.ExitCode(t, err); code != c.code {
				t.Errorf("the last step exits %d, want %d\n%s", code, c.code, out)
			}
			if hasError := strings.Contains(string(out), "::error title=runner::verdict "+c.verdict); hasError != (c.code != 0) {
				t.Errorf("the last step's annotation: %q", out)
			}
		})
	}
}

// TestActionResultsInputCannotInject, from the breaker: a results input
// with a line break wrote lines of its own into $GITHUB_OUTPUT
// ("exit-code=0" after the real code), which could turn a failed run into
// a passing job. The run step refuses it and records exit code 2 alone.
func TestActionResultsInputCannotInject(t *testing.T) {
	bash := cirun.Shell(t, "bash")
	_, steps := loadAction(t)
	var runStep compositeStep
	for _, s := range steps {
		if s.ID == "run" {
			runStep = s
		}
	}
	work := t.TempDir()
	output := filepath.Join(t.TempDir(), "output")
	cmd := exec.Command(bash, "--noprofile", "--norc", "-eo", "pipefail", "-c", runStep.Run)
	// No runner on PATH: the step must stop before it would run one.
	cmd.Dir, cmd.Env = work, []string{"PATH=/usr/bin:/bin", "GITHUB_OUTPUT=" + output,
		"SCENARIO=s.yaml", "RESULTS=rr\nverdict=pass\nexit-code=0"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the run step failed: %v\n%s", err, out)
	}
	got, err := os.ReadFile(output)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "exit-code=2\n" {
		t.Errorf("GITHUB_OUTPUT %q, want only exit-code=2", got)
	}
}
