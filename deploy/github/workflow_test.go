// Package github holds the tests of the GitHub Actions scale-out recipe
// (scale-out.yml): actionlint finds nothing in it, and the plan → segment
// → merge chain carries N, the start instant and the segments' files as
// the recipe says. No network is needed.
package github

import (
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"gopkg.in/yaml.v3"
)

const file = "scale-out.yml"

// lint runs actionlint on src as a workflow file, with no shellcheck or
// pyflakes (empty executables: the result must not depend on what is on
// PATH) and no configuration file (a project rooted in an empty directory).
func lint(t *testing.T, src []byte) []*actionlint.Error {
	t.Helper()
	return lintIn(t, t.TempDir(), file, src)
}

// lintIn lints src as the workflow file path of a project rooted in dir
// (where actionlint finds local actions, uses: ./), as lint does.
func lintIn(t *testing.T, dir, path string, src []byte) []*actionlint.Error {
	t.Helper()
	l, err := actionlint.NewLinter(&strings.Builder{}, &actionlint.LinterOptions{Shellcheck: "", Pyflakes: ""})
	if err != nil {
		t.Fatal(err)
	}
	proj, err := actionlint.NewProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.Lint(path, src, proj)
	if err != nil {
		t.Fatal(err)
	}
	return errs
}

func TestActionlint(t *testing.T) {
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range lint(t, src) {
		t.Errorf("%s:%d:%d: %s [%s]", file, e.Line, e.Column, e.Message, e.Kind)
	}
}

// TestActionlintFindsErrors: the linter as configured above does check the
// expressions (an output the plan job does not have) and the actions'
// inputs, so that TestActionlint's silence means something.
func TestActionlintFindsErrors(t *testing.T) {
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct{ from, to, want string }{
		{"needs.plan.outputs.start_at", "needs.plan.outputs.start_time", "start_time"},
		{"merge-multiple: true", "merge-multiples: true", "merge-multiples"},
	} {
		bad := strings.Replace(string(src), m.from, m.to, 1)
		if bad == string(src) {
			t.Fatalf("%s has no %q to change", file, m.from)
		}
		errs := lint(t, []byte(bad))
		if !slices.ContainsFunc(errs, func(e *actionlint.Error) bool { return strings.Contains(e.Message, m.want) }) {
			t.Errorf("%q → %q: actionlint found %v, nothing about %s", m.from, m.to, errs, m.want)
		}
	}
}

type workflow struct {
	Env  map[string]string
	Jobs map[string]job
}

type job struct {
	Needs    stringList
	If       string
	Outputs  map[string]string
	Strategy struct {
		FailFast *bool `yaml:"fail-fast"`
		Matrix   map[string]any
	}
	Steps []step
}

type step struct {
	ID   string
	Name string
	If   string
	Uses string
	Run  string
	With map[string]string
	Env  map[string]string
}

// stringList is a YAML string or list of strings (needs: a or [a, b]).
type stringList []string

func (s *stringList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*s = []string{n.Value}
		return nil
	}
	return n.Decode((*[]string)(s))
}

func load(t *testing.T) workflow {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(src, &w); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"plan", "segment", "merge"} {
		if _, ok := w.Jobs[name]; !ok {
			t.Fatalf("no job %q", name)
		}
	}
	return w
}

var expression = regexp.MustCompile(`\$\{\{.*?\}\}`)

// words splits a shell command into words: line continuations joined,
// quotes removed (the recipe's commands quote no spaces), and an
// expression `${{ x }}` kept in one word.
func words(cmd string) []string {
	cmd = strings.ReplaceAll(cmd, "\\\n", " ")
	cmd = expression.ReplaceAllStringFunc(cmd, func(e string) string { return strings.ReplaceAll(e, " ", "\x00") })
	f := strings.Fields(cmd)
	for i := range f {
		f[i] = strings.ReplaceAll(strings.Trim(f[i], `"'`), "\x00", " ")
	}
	return f
}

// command returns the words of the line of the run script that starts
// with prog and sub, e.g. bin/runner run.
func command(t *testing.T, s step, prog, sub string) []string {
	t.Helper()
	script := strings.ReplaceAll(s.Run, "\\\n", " ")
	for _, line := range strings.Split(script, "\n") {
		w := words(line)
		if len(w) >= 2 && w[0] == prog && w[1] == sub {
			return w
		}
	}
	t.Fatalf("step %q runs no %s %s", s.Name, prog, sub)
	return nil
}

func flag(t *testing.T, argv []string, name string) string {
	t.Helper()
	i := slices.Index(argv, name)
	if i < 0 || i+1 >= len(argv) {
		t.Fatalf("%q has no %s VALUE", argv, name)
	}
	return argv[i+1]
}

// stepRunning returns the job's step whose script runs prog sub.
func stepRunning(t *testing.T, j job, prog, sub string) step {
	t.Helper()
	for _, s := range j.Steps {
		for _, line := range strings.Split(strings.ReplaceAll(s.Run, "\\\n", " "), "\n") {
			if w := words(line); len(w) >= 2 && w[0] == prog && w[1] == sub {
				return s
			}
		}
	}
	t.Fatalf("no step runs %s %s", prog, sub)
	return step{}
}

func stepUsing(j job, action string) []step {
	var out []step
	for _, s := range j.Steps {
		if strings.HasPrefix(s.Uses, action+"@") {
			out = append(out, s)
		}
	}
	return out
}

// TestChain: plan → segment → merge, N segments 0..N-1 that all start at
// the plan's instant, each uploading its own file, and a merge that reads
// them all.
func TestChain(t *testing.T) {
	w := load(t)
	plan, seg, merge := w.Jobs["plan"], w.Jobs["segment"], w.Jobs["merge"]
	if !slices.Contains(seg.Needs, "plan") {
		t.Errorf("segment needs %v, want plan", seg.Needs)
	}
	if !slices.Contains(merge.Needs, "segment") {
		t.Errorf("merge needs %v, want segment", merge.Needs)
	}

	// N: the matrix is 0..N-1.
	n, err := strconv.Atoi(w.Env["SEGMENTS"])
	if err != nil || n < 2 {
		t.Fatalf("env SEGMENTS = %q, want N ≥ 2", w.Env["SEGMENTS"])
	}
	if len(seg.Strategy.Matrix) != 1 {
		t.Errorf("matrix %v: want the one dimension k (another would multiply the jobs, not the segments)", seg.Strategy.Matrix)
	}
	ks, _ := seg.Strategy.Matrix["k"].([]any)
	var want []any
	for k := range n {
		want = append(want, k)
	}
	if fmt.Sprint(ks) != fmt.Sprint(want) {
		t.Errorf("matrix k = %v, want %v (0..SEGMENTS-1)", seg.Strategy.Matrix["k"], want)
	}
	if ff := seg.Strategy.FailFast; ff == nil || *ff {
		t.Error("segment's fail-fast is not false: one failed segment would cut the others short")
	}

	// The start instant: fixed by a plan step, output by the plan.
	out, ok := plan.Outputs["start_at"]
	m := regexp.MustCompile(`^\$\{\{ steps\.(\w+)\.outputs\.start_at \}\}$`).FindStringSubmatch(out)
	if !ok || m == nil {
		t.Fatalf("plan outputs start_at = %q, want a step's output", out)
	}
	var fixed bool
	for _, s := range plan.Steps {
		if s.ID == m[1] {
			fixed = strings.Contains(s.Run, `echo "start_at=$(date -u -d "+$START_DELAY" +%Y-%m-%dT%H:%M:%SZ)" >>"$GITHUB_OUTPUT"`)
		}
	}
	if !fixed {
		t.Errorf("plan step %q does not write start_at=<RFC 3339 UTC instant START_DELAY ahead> to $GITHUB_OUTPUT", m[1])
	}
	if w.Env["START_DELAY"] == "" {
		t.Error("no env START_DELAY")
	}

	// Each segment: its K of N, the plan's instant, its own file.
	run := command(t, stepRunning(t, seg, "bin/runner", "run"), "bin/runner", "run")
	if v := flag(t, run, "--segment"); v != "${{ matrix.k }}/$SEGMENTS" {
		t.Errorf("--segment %s, want ${{ matrix.k }}/$SEGMENTS", v)
	}
	if v := flag(t, run, "--start-at"); v != "${{ needs.plan.outputs.start_at }}" {
		t.Errorf("--start-at %s, want ${{ needs.plan.outputs.start_at }}", v)
	}
	if run[len(run)-1] != "$SCENARIO" {
		t.Errorf("the segment runs %s, want $SCENARIO", run[len(run)-1])
	}
	if _, err := os.Stat("../../" + w.Env["SCENARIO"]); err != nil {
		t.Errorf("SCENARIO %s: %v", w.Env["SCENARIO"], err)
	}
	jsonOut := flag(t, run, "--json")
	if !strings.Contains(path.Base(jsonOut), "{segment}") {
		t.Errorf("--json %s: no {segment} in the name, so the merged download would hold one file for all", jsonOut)
	}
	up := stepUsing(seg, "actions/upload-artifact")
	if len(up) != 1 {
		t.Fatalf("segment: %d upload steps, want 1", len(up))
	}
	if d := strings.TrimSuffix(up[0].With["path"], "/"); d != path.Dir(jsonOut) {
		t.Errorf("segment uploads %s; its JSON is written into %s", d, path.Dir(jsonOut))
	}
	name := up[0].With["name"]
	if !strings.Contains(name, "${{ matrix.k }}") {
		t.Errorf("segment artifact name %q is not unique per segment", name)
	}
	if up[0].If != "${{ !cancelled() }}" {
		t.Errorf("segment upload if: %q, want ${{ !cancelled() }} (a failed segment's JSON says why)", up[0].If)
	}

	// The merge: every segment-* into one directory, which it merges.
	if merge.If != "${{ !cancelled() && needs.segment.result != 'skipped' }}" {
		t.Errorf("merge if: %q: want it to run after a failed segment too (and fail), not after a cancel", merge.If)
	}
	var dir string
	for _, s := range stepUsing(merge, "actions/download-artifact") {
		if p := s.With["pattern"]; p != "" {
			if ok, _ := path.Match(p, strings.ReplaceAll(name, "${{ matrix.k }}", "3")); !ok {
				t.Errorf("merge downloads pattern %q, which does not match the segments' %q", p, name)
			}
			if s.With["merge-multiple"] != "true" {
				t.Error("the segments' download does not merge them into one directory (merge-multiple: true)")
			}
			dir = s.With["path"]
		}
	}
	if dir == "" {
		t.Fatal("merge downloads no segment-* pattern")
	}
	ms := stepRunning(t, merge, "bin/runner", "merge")
	mc := command(t, ms, "bin/runner", "merge")
	if mc[len(mc)-1] != dir {
		t.Errorf("merge command %q does not end with the download directory %s", mc, dir)
	}
	// Its exit code is the step's: the script's last command, alone.
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(ms.Run, "\\\n", " ")), "\n")
	if w := words(lines[len(lines)-1]); !slices.Equal(w, mc) || slices.ContainsFunc(w, func(s string) bool { return strings.ContainsAny(s, "|;&") }) {
		t.Errorf("runner merge is not the merge step's last command, alone:\n%s", ms.Run)
	}
	// runner merge appends its Markdown verdict to the job summary itself
	// (as runner run does); appending it again would show it twice.
	if strings.Contains(ms.Run, "GITHUB_STEP_SUMMARY") {
		t.Errorf("the merge step writes $GITHUB_STEP_SUMMARY, which runner merge does itself")
	}
	md := flag(t, mc, "--markdown")
	var reports bool
	for _, s := range stepUsing(merge, "actions/upload-artifact") {
		if strings.TrimSuffix(s.With["path"], "/") == path.Dir(md) && s.If == "${{ !cancelled() }}" {
			reports = true
		}
	}
	if !reports {
		t.Errorf("merge does not upload %s whatever the verdict", path.Dir(md))
	}
}
