package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/reports"
)

// issue12Secret is 46 characters of random base32: none of its 4-character
// windows is ordinary text a report would hold by chance.
const issue12Secret = "QF7KZV2MXW4RJN6TPB3HLY5GDC7SWQ2EZK4VNM6XRT3JPF"

// TestIssue12_SecretsNeverWritten: a secret read from ${ENV} into a
// request header, the body, the scenario's name and a phase's name, and
// reflected by the target into an error message that the driver
// shortens with the cut inside it, appears nowhere runner writes: not in
// any report (JSON, TSV, Markdown, HTML, JUnit, HDR log, the GitHub step
// summary), not in their file names, not on stdout (console, the results
// line) nor on stderr (log lines in both formats, progress). Not even 4
// characters of it in a row.
func TestIssue12_SecretsNeverWritten(t *testing.T) {
	// A progress line within the phase.
	often := func(a *app) { a.progressEvery = 500 * time.Millisecond }
	t.Setenv("RUNNER_I12_TOKEN", issue12Secret)
	// The driver quotes 64 bytes of the bad status line "XTTP/1.1 502 "
	// + X-Echo: the cut falls after 24 characters of the secret.
	pad := strings.Repeat("x", 64-len("XTTP/1.1 502 ")-24)
	file := scenario(t, "s.yaml", `version: 1
name: "shop ${RUNNER_I12_TOKEN}"
target: {serve: http}
driver:
  http:
    method: POST
    path: /malformed
    headers: {Authorization: "Bearer ${RUNNER_I12_TOKEN}", X-Echo: "`+pad+`${RUNNER_I12_TOKEN}"}
    body: '{"token": "${RUNNER_I12_TOKEN}"}'
    timeout: 2s
phases:
  - {name: "ph-${RUNNER_I12_TOKEN}", open: {rate: 40/s, connections: 2}, duration: 1500ms}
assert: [errors == 0]
`)
	for _, format := range []string{"console", "json"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("GITHUB_STEP_SUMMARY", filepath.Join(dir, "step-summary.md"))
			p := func(name string) string { return filepath.Join(dir, name) }
			code, out, errOut := cliWith(t, often, "run", "--log-format", format, "--log-level", "debug",
				"--json", p("{scenario}.json"), "--tsv", p("{scenario}.tsv"), "--markdown", p("{scenario}.md"),
				"--html", p("{scenario}.html"), "--junit", p("{scenario}.xml"), "--hdr", p("{scenario}-{run_id}.hdr"), file)
			if code != exitFail {
				t.Errorf("exit %d, want 1 (every request failed)", code)
			}
			written := map[string]string{"stdout": out, "stderr": errOut}
			err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := os.ReadFile(path)
				written["file name "+path] = path
				written["file "+path] = string(b)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(written) != 2+2*7 {
				t.Errorf("%d outputs, want stdout, stderr and 7 files:\n%v", len(written), keys(written))
			}
			// The secret was sent and came back: the error example holds
			// its redacted, shortened front part, and the progress line
			// its phase.
			for _, want := range []struct{ where, what string }{
				{"file " + p("shop [redacted].json"), `XTTP/1.1 502 ` + pad + `[redacted]…`},
				{"stderr", "progress"},
				{"stdout", "report written to " + p("shop [redacted].json")},
			} {
				if !strings.Contains(written[want.where], want.what) {
					t.Errorf("%s does not hold %q:\n%s", want.where, want.what, written[want.where])
				}
			}
			for where, text := range written {
				for i := 0; i+4 <= len(issue12Secret); i++ {
					if w := issue12Secret[i : i+4]; strings.Contains(text, w) {
						at := strings.Index(text, w)
						t.Errorf("%s holds %q (characters %d–%d of the secret): …%s…", where, w, i+1, i+4, text[max(at-40, 0):min(at+44, len(text))])
						break
					}
				}
			}
		})
	}
}

// keys lists a map's keys, for a message.
func keys(m map[string]string) []string {
	var k []string
	for key := range m {
		k = append(k, key)
	}
	return k
}

// TestIssue12_SecretsNotInProblems: a problem that a later stage than the
// loader finds (here the driver, quoting the path) does not print the
// secret read into the value it quotes, in validate, plan or run; nor
// does plan's description.
func TestIssue12_SecretsNotInProblems(t *testing.T) {
	t.Setenv("RUNNER_I12_TOKEN", issue12Secret)
	bad := scenario(t, "bad.yaml", `version: 1
target: {url: "http://127.0.0.1:1"}
driver: {http: {path: "/${RUNNER_I12_TOKEN}{{nope}}"}}
phases: [{closed: {connections: 1}, requests: 1}]
`)
	good := scenario(t, "good.yaml", `version: 1
name: "n-${RUNNER_I12_TOKEN}"
target: {url: "http://127.0.0.1:1"}
driver: {http: {path: "/${RUNNER_I12_TOKEN}"}}
phases: [{name: "p-${RUNNER_I12_TOKEN}", closed: {connections: 1}, requests: 1}]
`)
	for _, args := range [][]string{{"validate", bad}, {"plan", bad}, {"run", bad}, {"plan", good}} {
		code, out, errOut := cli(t, args...)
		if args[1] == bad && (code != exitInvalid || !strings.Contains(errOut, "nope")) {
			t.Errorf("%s: exit %d, want 2 and the driver's problem:\n%s", args[0], code, errOut)
		}
		if both := out + errOut; strings.Contains(both, issue12Secret[:4]) || !strings.Contains(both, "[redacted]") {
			t.Errorf("%s %s: the secret is not redacted:\n%s", args[0], filepath.Base(args[1]), both)
		}
	}
}

// TestIssue12_SecretThatReadsLikeSyntax: a secret equal to a word of a
// report's syntax (a JSON literal, a JUnit element, the HDR log's tag)
// is redacted where it is text, and every report stays readable: the
// JSON loads, the JUnit file is well-formed XML with its test case, the
// HDR log keeps its header. (Redacting the finished bytes broke them and
// the run still said "report written".)
func TestIssue12_SecretThatReadsLikeSyntax(t *testing.T) {
	for _, secret := range []string{"true", "testcase", "Histogram", "response", "phases"} {
		t.Run(secret, func(t *testing.T) {
			t.Setenv("RUNNER_I12_WORD", secret)
			file := scenario(t, "s.yaml", `version: 1
name: syntax
target: {serve: http}
driver: {http: {path: /x, headers: {X-Debug: "${RUNNER_I12_WORD}"}, timeout: 2s}}
phases:
  - {name: steady, closed: {connections: 1}, requests: 20}
assert: [errors == 0]
`)
			dir := t.TempDir()
			p := func(name string) string { return filepath.Join(dir, name) }
			code, out, errOut := cli(t, "run", "--log-level", "disabled", "--json", p("r.json"), "--tsv", p("r.tsv"),
				"--junit", p("r.xml"), "--hdr", p("r.hdr"), "--html", p("r.html"), "--markdown", p("r.md"), file)
			if code != exitPass {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			if _, err := reports.Load(p("r.json")); err != nil {
				t.Errorf("JSON report: %v", err)
			}
			x := must(os.ReadFile(p("r.xml")))
			dec := xml.NewDecoder(bytes.NewReader(x))
			for {
				if _, err := dec.Token(); err == io.EOF {
					break
				} else if err != nil {
					t.Errorf("JUnit report is not well-formed: %v\n%s", err, x)
					break
				}
			}
			if !bytes.Contains(x, []byte("<testcase")) {
				t.Errorf("JUnit report lost its test case:\n%s", x)
			}
			if h := must(os.ReadFile(p("r.hdr"))); !bytes.Contains(h, []byte("#[Histogram log format version")) {
				t.Errorf("HDR log lost its header:\n%.300s", h)
			}
			if strings.Contains(string(must(os.ReadFile(p("r.json")))), `"X-Debug": "`+secret+`"`) {
				t.Errorf("the secret header value is in the JSON report")
			}
		})
	}
}
