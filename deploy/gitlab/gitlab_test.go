// Package gitlab holds the tests of the GitLab CI/CD scale-out recipe
// (scale-out.gitlab-ci.yml): it decodes with GitLab's keywords only, and
// the plan → segment → merge chain carries the start instant, N and the
// segments' files as the recipe says. No network is needed.
package gitlab

import (
	"bytes"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const file = "scale-out.gitlab-ci.yml"

// pipeline is a .gitlab-ci.yml: the global keywords, and every other key a
// job. The structs below name GitLab's keywords (docs.gitlab.com/ci/yaml)
// and are decoded with KnownFields, so that a misspelt keyword, which
// GitLab would refuse, is an error here too. Keywords the recipe does not
// use are `any`.
type pipeline struct {
	Default   *defaults         `yaml:"default"`
	Include   any               `yaml:"include"`
	Stages    []string          `yaml:"stages"`
	Variables map[string]string `yaml:"variables"`
	Workflow  any               `yaml:"workflow"`
	Jobs      map[string]job    `yaml:",inline"`
}

type defaults struct {
	AfterScript   []string  `yaml:"after_script"`
	Artifacts     artifacts `yaml:"artifacts"`
	BeforeScript  []string  `yaml:"before_script"`
	Cache         any       `yaml:"cache"`
	Hooks         any       `yaml:"hooks"`
	IDTokens      any       `yaml:"id_tokens"`
	Identity      any       `yaml:"identity"`
	Image         any       `yaml:"image"`
	Interruptible any       `yaml:"interruptible"`
	Retry         any       `yaml:"retry"`
	Services      any       `yaml:"services"`
	Tags          []string  `yaml:"tags"`
	Timeout       string    `yaml:"timeout"`
}

type job struct {
	AfterScript        []string          `yaml:"after_script"`
	AllowFailure       any               `yaml:"allow_failure"`
	Artifacts          *artifacts        `yaml:"artifacts"`
	BeforeScript       []string          `yaml:"before_script"`
	Cache              any               `yaml:"cache"`
	Coverage           any               `yaml:"coverage"`
	DastConfiguration  any               `yaml:"dast_configuration"`
	Dependencies       []string          `yaml:"dependencies"`
	Environment        any               `yaml:"environment"`
	Extends            any               `yaml:"extends"`
	Hooks              any               `yaml:"hooks"`
	IDTokens           any               `yaml:"id_tokens"`
	Identity           any               `yaml:"identity"`
	Image              any               `yaml:"image"`
	Inherit            any               `yaml:"inherit"`
	Interruptible      any               `yaml:"interruptible"`
	ManualConfirmation any               `yaml:"manual_confirmation"`
	Needs              []need            `yaml:"needs"`
	Pages              any               `yaml:"pages"`
	Parallel           any               `yaml:"parallel"`
	Release            any               `yaml:"release"`
	ResourceGroup      string            `yaml:"resource_group"`
	Retry              any               `yaml:"retry"`
	Rules              any               `yaml:"rules"`
	Run                any               `yaml:"run"`
	Script             []string          `yaml:"script"`
	Secrets            any               `yaml:"secrets"`
	Services           any               `yaml:"services"`
	Stage              string            `yaml:"stage"`
	StartIn            string            `yaml:"start_in"`
	Tags               []string          `yaml:"tags"`
	Timeout            string            `yaml:"timeout"`
	Trigger            any               `yaml:"trigger"`
	Variables          map[string]string `yaml:"variables"`
	When               string            `yaml:"when"`
}

type artifacts struct {
	Paths     []string `yaml:"paths"`
	Exclude   []string `yaml:"exclude"`
	ExposeAs  string   `yaml:"expose_as"`
	Name      string   `yaml:"name"`
	Untracked bool     `yaml:"untracked"`
	When      string   `yaml:"when"`
	Access    string   `yaml:"access"`
	ExpireIn  string   `yaml:"expire_in"`
	Reports   *reports `yaml:"reports"`
}

type reports struct {
	Accessibility      any    `yaml:"accessibility"`
	Annotations        any    `yaml:"annotations"`
	APIFuzzing         any    `yaml:"api_fuzzing"`
	BrowserPerformance any    `yaml:"browser_performance"`
	CodeQuality        any    `yaml:"codequality"`
	ContainerScanning  any    `yaml:"container_scanning"`
	CoverageFuzzing    any    `yaml:"coverage_fuzzing"`
	CoverageReport     any    `yaml:"coverage_report"`
	CycloneDX          any    `yaml:"cyclonedx"`
	DAST               any    `yaml:"dast"`
	DependencyScanning any    `yaml:"dependency_scanning"`
	Dotenv             string `yaml:"dotenv"`
	JUnit              string `yaml:"junit"`
	LoadPerformance    any    `yaml:"load_performance"`
	Metrics            any    `yaml:"metrics"`
	Requirements       any    `yaml:"requirements"`
	SAST               any    `yaml:"sast"`
	SecretDetection    any    `yaml:"secret_detection"`
	Terraform          any    `yaml:"terraform"`
}

// need is an entry of needs: a job's name, or {job, artifacts, optional}.
type need struct {
	Job       string `yaml:"job"`
	Artifacts *bool  `yaml:"artifacts"`
	Optional  bool   `yaml:"optional"`
}

func (n *need) UnmarshalYAML(v *yaml.Node) error {
	if v.Kind == yaml.ScalarNode {
		n.Job = v.Value
		return nil
	}
	type plain need
	return v.Decode((*plain)(n))
}

func decode(src []byte) (pipeline, error) {
	p, err := decodeAll(src)
	for name := range p.Jobs {
		if strings.HasPrefix(name, ".") { // hidden: a template, not a job
			delete(p.Jobs, name)
		}
	}
	return p, err
}

func load(t *testing.T) pipeline {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := decode(src)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, name := range []string{"plan", "segment", "merge"} {
		if _, ok := p.Jobs[name]; !ok {
			t.Fatalf("no job %q", name)
		}
	}
	return p
}

// TestKeywordsOnly: every key is a GitLab keyword, and a misspelt one is
// refused (so that the decoding means something).
func TestKeywordsOnly(t *testing.T) {
	p := load(t)
	whens := []string{"", "on_success", "on_failure", "always", "manual", "delayed", "never"}
	for name, j := range p.Jobs {
		if !slices.Contains(p.Stages, j.Stage) {
			t.Errorf("job %s: stage %q is not one of %v", name, j.Stage, p.Stages)
		}
		if !slices.Contains(whens, j.When) {
			t.Errorf("job %s: when %q", name, j.When)
		}
		if a := j.Artifacts; a != nil && !slices.Contains([]string{"", "on_success", "on_failure", "always"}, a.When) {
			t.Errorf("job %s: artifacts:when %q", name, a.When)
		}
		if len(j.Script) == 0 {
			t.Errorf("job %s has no script", name)
		}
		for _, n := range j.Needs {
			dep, ok := p.Jobs[n.Job]
			if !ok {
				t.Errorf("job %s needs %q, which is no job", name, n.Job)
			} else if slices.Index(p.Stages, dep.Stage) >= slices.Index(p.Stages, j.Stage) {
				t.Errorf("job %s (stage %s) needs %s of stage %s, not an earlier one", name, j.Stage, n.Job, dep.Stage)
			}
		}
	}
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range [][2]string{{"  artifacts:\n", "  artifact:\n"}, {"      dotenv:", "      dot_env:"}} {
		bad := bytes.Replace(src, []byte(m[0]), []byte(m[1]), 1)
		if bytes.Equal(bad, src) {
			t.Fatalf("no %q to misspell", m[0])
		}
		if _, err := decode(bad); err == nil {
			t.Errorf("%q → %q decoded", m[0], m[1])
		}
	}
}

// words splits a script line into words, quotes removed (the recipe's
// commands quote no spaces).
func words(line string) []string {
	f := strings.Fields(line)
	for i := range f {
		f[i] = strings.Trim(f[i], `"'`)
	}
	return f
}

// command returns the words of the job's script line that runs prog sub,
// and whether it is the script's last line.
func command(t *testing.T, name string, j job, prog, sub string) ([]string, bool) {
	t.Helper()
	for i, line := range j.Script {
		if w := words(line); len(w) >= 2 && w[0] == prog && w[1] == sub {
			return w, i == len(j.Script)-1
		}
	}
	t.Fatalf("job %s runs no %s %s", name, prog, sub)
	return nil, false
}

func flag(t *testing.T, argv []string, name string) string {
	t.Helper()
	i := slices.Index(argv, name)
	if i < 0 || i+1 >= len(argv) {
		t.Fatalf("%q has no %s VALUE", argv, name)
	}
	return argv[i+1]
}

func needs(j job, name string) bool {
	return slices.ContainsFunc(j.Needs, func(n need) bool { return n.Job == name && (n.Artifacts == nil || *n.Artifacts) })
}

// TestChain: stages plan → segments → merge; the plan's start instant
// reaches the segments in a dotenv report; N parallel segments with
// --segment auto; the merge, run whatever the segments did, reads the
// directory they keep, fails with runner merge's exit code and publishes
// the JUnit report it writes.
func TestChain(t *testing.T) {
	p := load(t)
	if !slices.Equal(p.Stages, []string{"plan", "segments", "merge"}) {
		t.Errorf("stages %v, want [plan segments merge]", p.Stages)
	}
	plan, seg, merge := p.Jobs["plan"], p.Jobs["segment"], p.Jobs["merge"]

	// The plan: START_AT into a dotenv report, fixed last.
	if plan.Artifacts == nil || plan.Artifacts.Reports == nil || plan.Artifacts.Reports.Dotenv == "" {
		t.Fatal("plan has no artifacts:reports:dotenv")
	}
	env := plan.Artifacts.Reports.Dotenv
	want := `echo "START_AT=$(date -u -d "+$START_DELAY" +%Y-%m-%dT%H:%M:%SZ)" >` + env
	if i := slices.Index(plan.Script, want); i < 0 || i != len(plan.Script)-1 {
		t.Errorf("plan's last script line is not\n\t%s\n(the RFC 3339 UTC instant START_DELAY ahead, into the dotenv report)", want)
	}
	if p.Variables["START_DELAY"] == "" {
		t.Error("no variable START_DELAY")
	}
	if !slices.Contains(plan.Artifacts.Paths, "bin/runner") {
		t.Errorf("plan keeps %v, not the binary bin/runner the other jobs run", plan.Artifacts.Paths)
	}

	// The segments.
	if seg.Stage != "segments" || merge.Stage != "merge" || plan.Stage != "plan" {
		t.Errorf("stages of plan, segment, merge: %s, %s, %s", plan.Stage, seg.Stage, merge.Stage)
	}
	if n, ok := seg.Parallel.(int); !ok || n != 4 {
		t.Errorf("segment parallel: %v, want 4 (N)", seg.Parallel)
	}
	if !needs(seg, "plan") {
		t.Error("segment does not need plan with its artifacts (the binary, START_AT)")
	}
	run, _ := command(t, "segment", seg, "bin/runner", "run")
	if v := flag(t, run, "--segment"); v != "auto" {
		t.Errorf("--segment %s, want auto (K from CI_NODE_INDEX, N from CI_NODE_TOTAL)", v)
	}
	if v := flag(t, run, "--start-at"); v != "$START_AT" {
		t.Errorf("--start-at %s, want $START_AT (from the plan's dotenv)", v)
	}
	if run[len(run)-1] != "$SCENARIO" {
		t.Errorf("the segment runs %s, want $SCENARIO", run[len(run)-1])
	}
	if _, err := os.Stat("../../" + p.Variables["SCENARIO"]); err != nil {
		t.Errorf("SCENARIO %s: %v", p.Variables["SCENARIO"], err)
	}
	out := flag(t, run, "--json")
	if !strings.Contains(path.Base(out), "{segment}") {
		t.Errorf("--json %s: no {segment} in the name, so the segments' files would overwrite each other in the merge", out)
	}
	dir := path.Dir(out)
	if seg.Artifacts == nil || !slices.ContainsFunc(seg.Artifacts.Paths, func(p string) bool { return strings.TrimSuffix(p, "/") == dir }) {
		t.Fatalf("segment does not keep %s/ as an artifact", dir)
	}
	if seg.Artifacts.When != "always" {
		t.Errorf("segment artifacts:when %q, want always (a failed segment's JSON says why)", seg.Artifacts.When)
	}

	// The merge.
	if !needs(merge, "segment") || !needs(merge, "plan") {
		t.Errorf("merge needs %+v, want segment (all N, with their artifacts) and plan (the binary)", merge.Needs)
	}
	if merge.When != "always" {
		t.Errorf("merge when: %q, want always (after a failed segment too: the merge names it, and fails)", merge.When)
	}
	mc, last := command(t, "merge", merge, "bin/runner", "merge")
	if mc[len(mc)-1] != dir {
		t.Errorf("merge reads %s; the segments keep %s", mc[len(mc)-1], dir)
	}
	if !last || slices.ContainsFunc(mc, func(w string) bool { return strings.ContainsAny(w, "|;&") }) {
		t.Errorf("runner merge is not the script's last command, alone: its exit code must be the job's")
	}
	if merge.AllowFailure != nil {
		t.Errorf("merge allow_failure: %v: the merge is the gate", merge.AllowFailure)
	}
	a := merge.Artifacts
	if a == nil || a.Reports == nil || a.Reports.JUnit == "" {
		t.Fatal("merge publishes no artifacts:reports:junit")
	}
	if j := flag(t, mc, "--junit"); a.Reports.JUnit != j {
		t.Errorf("merge publishes JUnit %s but writes --junit %s", a.Reports.JUnit, j)
	}
	if a.When != "always" {
		t.Errorf("merge artifacts:when %q, want always (a failed verdict's reports matter most)", a.When)
	}
	md := flag(t, mc, "--markdown")
	if !slices.ContainsFunc(a.Paths, func(p string) bool { return strings.TrimSuffix(p, "/") == path.Dir(md) }) {
		t.Errorf("merge does not keep its reports' directory %s", path.Dir(md))
	}
}
