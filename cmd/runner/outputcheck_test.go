package main

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/reports"
)

// outputScenario is a short closed-model scenario against base, with
// extra YAML appended (e.g. an outputs key).
func outputScenario(t *testing.T, base, extra string) string {
	return scenario(t, "out.yaml", `version: 1
name: out
target: {url: "`+base+`"}
driver: {http: {path: /}}
phases:
  - {closed: {connections: 1}, requests: 20}
assert: [errors == 0]
`+extra)
}

// TestUnwritableOutputs_ExitBeforeTraffic: an output path that cannot be
// written (outputs.tsv or outputs.json, or their flags) is a usage error
// found before any traffic: exit 2, a message naming the path, and not
// one request at the target. (It used to send the load, print an error
// line and PASS, and exit 0.)
func TestUnwritableOutputs_ExitBeforeTraffic(t *testing.T) {
	base := target(t)
	dir := t.TempDir()
	// A FIFO stands in for /dev/full: before the fix a run as root renamed
	// its report over the device, which no test may risk.
	fifo := filepath.Join(dir, "fifo.json")
	if err := mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	plain := outputScenario(t, base, "")
	for _, tt := range []struct {
		name string
		file string
		args []string
		path string
	}{
		{"tsv in /proc", plain, []string{"--tsv", "/proc/nope.tsv"}, "/proc/nope.tsv"},
		{"tsv is a directory", plain, []string{"--tsv", dir}, dir},
		{"outputs.tsv in /proc", outputScenario(t, base, "outputs: {tsv: /proc/nope.tsv}\n"), nil, "/proc/nope.tsv"},
		{"json in /proc", plain, []string{"--json", "/proc/nope.json"}, "/proc/nope.json"},
		{"json is a directory", plain, []string{"--json", dir}, dir},
		{"json is a fifo", plain, []string{"--json", fifo}, fifo},
		{"tsv is a fifo", plain, []string{"--tsv", fifo}, fifo},
		{"tsv is a device", plain, []string{"--tsv", "/dev/full"}, "/dev/full"},
		{"outputs.json in /proc", outputScenario(t, base, "outputs: {json: /proc/nope.json}\n"), nil, "/proc/nope.json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", "--log-level", "disabled"}, tt.args...)
			code, out, stderr := cli(t, append(args, tt.file)...)
			if code != exitInvalid || !strings.Contains(stderr, tt.path) || !strings.Contains(stderr, "nothing was sent") {
				t.Errorf("exit %d, want 2 with a message naming %s\nstdout:\n%s\nstderr:\n%s", code, tt.path, out, stderr)
			}
			if n := stats(t, base)["requests"]; n != 0 {
				t.Fatalf("the target received %g requests before the outputs were checked", n)
			}
		})
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode().Type() != os.ModeNamedPipe {
		t.Fatalf("the FIFO was replaced: %v %v", st.Mode(), err)
	}
}

// TestUnwritableOutputs_LostDuringRunExit3: a write that still fails
// during or after the run (TSV rows to /dev/full, which accepts the open;
// the final JSON report) loses results: exit 3, never 0, saying which
// file, and the verdict is not PASS.
func TestUnwritableOutputs_LostDuringRunExit3(t *testing.T) {
	base := target(t)
	p := outputScenario(t, base, "")
	js := filepath.Join(t.TempDir(), "r.json")

	t.Run("tsv", func(t *testing.T) {
		// The path passes the check before traffic; then the append fails
		// (a disk that fills up during the run).
		tsv := filepath.Join(t.TempDir(), "r.tsv")
		full := func(a *app) {
			a.appendTSV = func(path string, _ [][]string) error {
				return errors.New("append to " + path + ": no space left on device")
			}
		}
		code, out, stderr := cliWith(t, full, "run", "--log-level", "disabled", "--tsv", tsv, "--json", js, p)
		if code != exitCouldNotRun || !strings.Contains(stderr, tsv) || !strings.Contains(stderr, "results lost") {
			t.Fatalf("exit %d, want 3 naming %s\nstdout:\n%s\nstderr:\n%s", code, tsv, out, stderr)
		}
		if strings.Contains(out, "verdict: PASS") {
			t.Errorf("lost results printed PASS:\n%s", out)
		}
		// The JSON report, written after the failed append, says so.
		rep := readJSON(t, js)
		if rep["exit_code"].(float64) != exitCouldNotRun || !strings.Contains(rep["error"].(string), tsv) {
			t.Errorf("JSON report: exit_code %v, error %q", rep["exit_code"], rep["error"])
		}
	})

	t.Run("json", func(t *testing.T) {
		// The path passes the check before traffic; then every write fails.
		full := func(a *app) {
			a.writeReport = func(path string, _ *reports.Run) error {
				return errors.New("json " + path + ": no space left on device")
			}
		}
		code, out, stderr := cliWith(t, full, "run", "--log-level", "disabled", "--json", js, p)
		if code != exitCouldNotRun || !strings.Contains(stderr, js) || !strings.Contains(stderr, "results lost") {
			t.Fatalf("exit %d, want 3 naming %s\nstdout:\n%s\nstderr:\n%s", code, js, out, stderr)
		}
		if strings.Contains(out, "verdict: PASS") {
			t.Errorf("lost results printed PASS:\n%s", out)
		}
	})

	t.Run("markdown", func(t *testing.T) {
		// Issue 12: a lost Markdown (JUnit, HTML, HDR) report used to be
		// a line on stderr and exit 0. It is written before the final
		// JSON, which says so.
		md := filepath.Join(t.TempDir(), "r.md")
		full := func(a *app) {
			a.renderers = maps.Clone(a.renderers)
			a.renderers["md"] = func(io.Writer, *reports.Run) error { return errors.New("no space left on device") }
		}
		code, out, stderr := cliWith(t, full, "run", "--log-level", "disabled", "--json", js, "--markdown", md, p)
		if code != exitCouldNotRun || !strings.Contains(stderr, "results lost: markdown report "+md) {
			t.Fatalf("exit %d, want 3 naming %s\nstdout:\n%s\nstderr:\n%s", code, md, out, stderr)
		}
		if rep := readJSON(t, js); rep["exit_code"].(float64) != exitCouldNotRun || !strings.Contains(rep["error"].(string), md) {
			t.Errorf("JSON report: exit_code %v, error %q", rep["exit_code"], rep["error"])
		}
	})
}

// longName is a scenario name whose {scenario}-{run_id}.json expansion is
// 254 bytes: within NAME_MAX as written, but not with the 16 bytes its
// temporary file adds (or with a longer extension).
var longName = strings.Repeat("n", 225)

// TestIssue12_ExpandedPathCheckedBeforeTraffic: the output paths are
// checked as each run will write them, {scenario} and {run_id} expanded,
// every format, before any traffic: a name that the expansion makes too
// long for the file system (the file's own, its temporary file's, or a
// directory still to be made) exits 2 naming the flag and the path, and
// the target receives nothing. (It used to pass the check, send the load,
// then lose the results: exit 3.)
func TestIssue12_ExpandedPathCheckedBeforeTraffic(t *testing.T) {
	base := target(t)
	dir := t.TempDir()
	long := scenario(t, "long.yaml", strings.Replace(readFile(t, outputScenario(t, base, "")), "name: out", "name: "+longName, 1))
	// The expansion of outputs.markdown, from the scenario file.
	longMD := scenario(t, "long-md.yaml", readFile(t, long)+"outputs: {markdown: \""+dir+"/{scenario}-{run_id}-long.md\"}\n")
	for _, tt := range []struct {
		name   string
		file   string
		args   []string
		prefix string // the flag and the start of the expanded path
	}{
		{"json: temporary file too long", long, []string{"--json", dir + "/{scenario}-{run_id}.json"}, "json " + dir + "/" + longName + "-"},
		{"json: directory to make too long", long, []string{"--json", dir + "/sub/{scenario}-{run_id}-more-than-255/r.json"}, "json " + dir + "/sub/" + longName + "-"},
		{"markdown", long, []string{"--markdown", dir + "/{scenario}-{run_id}-long.md"}, "markdown " + dir + "/" + longName + "-"},
		{"outputs.markdown", longMD, nil, "markdown " + dir + "/" + longName + "-"},
		{"junit", long, []string{"--junit", dir + "/{scenario}-{run_id}-long.xml"}, "junit " + dir + "/" + longName + "-"},
		{"html", long, []string{"--html", dir + "/{scenario}-{run_id}-long.html"}, "html " + dir + "/" + longName + "-"},
		{"hdr", long, []string{"--hdr", dir + "/{scenario}-{run_id}-long.hdr"}, "hdr " + dir + "/" + longName + "-"},
		{"tsv: directory to make too long", long, []string{"--tsv", dir + "/sub/{scenario}-{run_id}-more-than-255/r.tsv"}, "tsv " + dir + "/sub/" + longName + "-"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", "--log-level", "disabled"}, tt.args...)
			code, out, stderr := cli(t, append(args, tt.file)...)
			if code != exitInvalid || !strings.Contains(stderr, tt.prefix) || !strings.Contains(stderr, "nothing was sent") {
				t.Errorf("exit %d, want 2 with a message starting %q\nstdout:\n%s\nstderr:\n%s", code, tt.prefix, out, stderr)
			}
			if n := stats(t, base)["requests"]; n != 0 {
				t.Fatalf("the target received %g requests before the expanded outputs were checked", n)
			}
		})
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("the check left files behind: %v", left)
	}
}

// slowScenario is a closed-model scenario against base that lasts about
// two seconds, with extra YAML appended.
func slowScenario(t *testing.T, name, base, extra string) string {
	return scenario(t, name, `version: 1
name: slow
target: {url: "`+base+`"}
driver: {http: {path: /}}
phases:
  - {closed: {connections: 1, think_time: 10ms}, duration: 2s}
`+extra)
}

// waitRequests waits until the target at base has received a request,
// failing if p exits first or after 10 s.
func waitRequests(t *testing.T, p *runnerProc, base string) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if stats(t, base)["requests"] > 0 {
			return
		}
		if !p.running() {
			t.Fatalf("runner exited (%d) before sending\nstdout:\n%s\nstderr:\n%s", p.cmd.ProcessState.ExitCode(), &p.stdout, &p.stderr)
		}
	}
	t.Fatalf("no request at %s after 10 s\nstderr:\n%s", base, &p.stderr)
}

// TestIssue12_ConcurrentRunsSameJSONRefused: while one run (a separate
// process) writes its reports, a second run naming the same JSON file,
// or the same Markdown, JUnit, HTML or HDR file, is refused before any
// traffic: exit 2, a message naming the path and the other run (its
// process id and scenario file). The first run's reports are whole and
// its lock files are gone at its end; a lock file a crashed run left
// behind blocks nobody. (Each run used to say "report written" while the
// file held only the last.)
func TestIssue12_ConcurrentRunsSameJSONRefused(t *testing.T) {
	t.Parallel()
	baseA, baseB := target(t), target(t)
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	fileA := slowScenario(t, "a.yaml", baseA, "")
	a := startRunner(t, "run", "--log-level", "disabled", "--json", p("r.json"), "--markdown", p("r.md"),
		"--junit", p("r.xml"), "--html", p("r.html"), "--hdr", p("r.hdr"), "--tsv", p("r.tsv"), fileA)
	waitRequests(t, a, baseA)
	fileB := outputScenario(t, baseB, "")
	for _, flag := range []string{"json", "markdown", "junit", "html", "hdr"} {
		path := map[string]string{"json": p("r.json"), "markdown": p("r.md"), "junit": p("r.xml"), "html": p("r.html"), "hdr": p("r.hdr")}[flag]
		t.Run(flag, func(t *testing.T) {
			// The TSV is shared on purpose: rows are appended under a lock.
			code, out, stderr := cli(t, "run", "--log-level", "disabled", "--tsv", p("r.tsv"), "--"+flag, path, fileB)
			want := []string{flag + " " + path, "another run is writing it", fmt.Sprintf("pid %d", a.cmd.Process.Pid), fileA, "nothing was sent"}
			for _, w := range want {
				if code != exitInvalid || !strings.Contains(stderr, w) {
					t.Errorf("exit %d, want 2 with %q in the message\nstdout:\n%s\nstderr:\n%s", code, w, out, stderr)
					break
				}
			}
			if n := stats(t, baseB)["requests"]; n != 0 {
				t.Fatalf("the second run sent %g requests", n)
			}
		})
	}
	if !a.running() {
		t.Fatal("the first run ended before the others were refused: the test proves nothing")
	}
	if code := a.wait(t, 30*time.Second); code != exitPass {
		t.Fatalf("first run: exit %d\nstdout:\n%s\nstderr:\n%s", code, &a.stdout, &a.stderr)
	}
	if rep := readJSON(t, p("r.json")); rep["outcome"] != "pass" || !strings.Contains(readFile(t, p("r.md")), "slow") {
		t.Errorf("the first run's reports: outcome %v", rep["outcome"])
	}
	if locks, _ := filepath.Glob(p("*.lock")); len(locks) != 0 {
		t.Errorf("lock files left behind: %v", locks)
	}

	t.Run("stale lock file", func(t *testing.T) {
		// A run killed with SIGKILL leaves its lock file, but the kernel
		// released its flock: the next run goes ahead.
		if err := os.WriteFile(p("r.json.lock"), []byte("pid 999999, runner run gone.yaml\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, stderr := cli(t, "run", "--log-level", "disabled", "--json", p("r.json"), fileB)
		if code != exitPass {
			t.Fatalf("exit %d with a stale lock file\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
		}
		if _, err := os.Stat(p("r.json.lock")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the lock file is still there: %v", err)
		}
	})
}

// namedScenario is outputScenario named name, with extra YAML appended.
func namedScenario(t *testing.T, file, name, base, extra string) string {
	return scenario(t, file, strings.Replace(readFile(t, outputScenario(t, base, "")), "name: out", "name: "+name, 1)+extra)
}

// TestIssue12_MultiScenarioOutputs: with several scenario files, every
// report format expands {scenario} and {run_id} per run, and one file
// named for all of them is refused before any traffic (exit 2), as
// --json is, whether it comes from a flag or from outputs.* in the
// files, or when the expansions coincide; two formats naming one file are
// refused too. The exception is JUnit: one file holds one <testsuite>
// per scenario under <testsuites>, valid against the JUnit XSD. (Each
// used to keep only the last scenario's report, without a word.)
func TestIssue12_MultiScenarioOutputs(t *testing.T) {
	base := target(t)
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	a, b := namedScenario(t, "a.yaml", "alpha", base, ""), namedScenario(t, "b.yaml", "beta", base, "")

	t.Run("refused", func(t *testing.T) {
		same := namedScenario(t, "same.yaml", "alpha", base, "")
		outA := namedScenario(t, "oa.yaml", "alpha", base, "outputs: {markdown: "+p("o.md")+"}\n")
		outB := namedScenario(t, "ob.yaml", "beta", base, "outputs: {markdown: "+p("o.md")+"}\n")
		for _, tt := range []struct {
			name  string
			args  []string
			files []string
			want  string
		}{
			{"json", []string{"--json", p("r.json")}, []string{a, b}, "--json names one file for several scenarios"},
			{"markdown", []string{"--markdown", p("r.md")}, []string{a, b}, "--markdown names one file for several scenarios"},
			{"html", []string{"--html", p("r.html")}, []string{a, b}, "--html names one file for several scenarios"},
			{"hdr", []string{"--hdr", p("r.hdr")}, []string{a, b}, "--hdr names one file for several scenarios"},
			{"outputs.markdown", nil, []string{outA, outB}, "outputs.markdown names one file for several scenarios"},
			{"same scenario name", []string{"--html", p("{scenario}.html")}, []string{a, same}, "--html names one file for several scenarios"},
			{"two formats", []string{"--json", p("{scenario}.x"), "--markdown", p("{scenario}.x")}, []string{a}, "--json and --markdown both name " + p("alpha.x")},
		} {
			t.Run(tt.name, func(t *testing.T) {
				args := append(append([]string{"run", "--log-level", "disabled"}, tt.args...), tt.files...)
				code, out, stderr := cli(t, args...)
				if code != exitInvalid || !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "nothing was sent") {
					t.Errorf("exit %d, want 2 with %q\nstdout:\n%s\nstderr:\n%s", code, tt.want, out, stderr)
				}
				if n := stats(t, base)["requests"]; n != 0 {
					t.Fatalf("the target received %g requests", n)
				}
			})
		}
		if left, _ := filepath.Glob(p("*")); len(left) != 0 {
			t.Errorf("refused runs left files: %v", left)
		}
	})

	code, out, stderr := cli(t, "run", "--log-level", "disabled", "--junit", p("all.xml"),
		"--json", p("{scenario}.json"), "--markdown", p("{scenario}.md"), "--html", p("{scenario}-{run_id}.html"), "--hdr", p("{run_id}.hdr"), a, b)
	if code != exitPass {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	for _, name := range []string{"alpha", "beta"} {
		if md := readFile(t, p(name+".md")); !strings.Contains(md, name) {
			t.Errorf("%s.md does not name its scenario:\n%s", name, md)
		}
		if html, _ := filepath.Glob(p(name + "-*.html")); len(html) != 1 {
			t.Errorf("%s: HTML reports %v, want one", name, html)
		}
	}
	if hdr, _ := filepath.Glob(p("*.hdr")); len(hdr) != 2 {
		t.Errorf("HDR logs %v, want two", hdr)
	}
	junit := readFile(t, p("all.xml"))
	var doc struct {
		Suites []struct {
			Name  string `xml:"name,attr"`
			Tests int    `xml:"tests,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(junit), &doc); err != nil {
		t.Fatalf("JUnit: %v\n%s", err, junit)
	}
	if len(doc.Suites) != 2 || doc.Suites[0].Name != "alpha" || doc.Suites[1].Name != "beta" || doc.Suites[1].Tests == 0 {
		t.Errorf("JUnit suites %+v, want alpha and beta, each with its test cases\n%s", doc.Suites, junit)
	}
	validateJUnitXSD(t, p("all.xml"))
	if locks, _ := filepath.Glob(p("*.lock")); len(locks) != 0 {
		t.Errorf("lock files left behind: %v", locks)
	}
}

// validateJUnitXSD validates the JUnit file at path against the schema
// reports' own tests use. Without xmllint it skips locally and fails
// under CI, as they do.
func validateJUnitXSD(t *testing.T, path string) {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("xmllint not installed (apt-get install libxml2-utils); CI requires it")
		}
		t.Fatal("xmllint not installed: .ci/run installs libxml2-utils")
	}
	xsd := filepath.Join("..", "..", "reports", "testdata", "junit-10.xsd")
	if out, err := exec.Command(xmllint, "--noout", "--schema", xsd, path).CombinedOutput(); err != nil {
		t.Errorf("%s does not validate against %s: %v\n%s", path, xsd, err, out)
	}
}
