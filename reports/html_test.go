package reports

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/measure"
)

func renderHTML(t *testing.T, r *Run) string {
	t.Helper()
	var b bytes.Buffer
	if err := HTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("RUNNER_HTML_OUT"); dir != "" {
		_ = os.WriteFile(dir+"/"+strings.ReplaceAll(t.Name(), "/", "_")+".html", b.Bytes(), 0o644)
	}
	return b.String()
}

var (
	tagRE  = regexp.MustCompile(`<(/?)([a-zA-Z][a-zA-Z0-9]*)\b[^>]*?(/?)>`)
	voidEl = map[string]bool{"meta": true, "br": true, "hr": true, "img": true, "link": true, "input": true}
)

// balanced checks that every non-void element is closed in order (the
// page is written so that it holds; no optional end tags are omitted).
func balanced(t *testing.T, doc string) {
	t.Helper()
	// Text inside <style> holds no tags.
	doc = regexp.MustCompile(`(?s)<style>.*?</style>`).ReplaceAllString(doc, "<style></style>")
	var stack []string
	for _, m := range tagRE.FindAllStringSubmatch(doc, -1) {
		closing, name, self := m[1] == "/", strings.ToLower(m[2]), m[3] == "/"
		switch {
		case self || voidEl[name]:
		case closing:
			if len(stack) == 0 || stack[len(stack)-1] != name {
				t.Fatalf("</%s> closes %v", name, stack)
			}
			stack = stack[:len(stack)-1]
		default:
			stack = append(stack, name)
		}
	}
	if len(stack) != 0 {
		t.Fatalf("unclosed elements %v", stack)
	}
}

func TestHTML(t *testing.T) {
	r := fixture(t)
	r.Scenario.Name = `evil <script>alert("x")</script> & co`
	r.Outcome = "fail"
	doc := renderHTML(t, r)

	if !strings.HasPrefix(doc, "<!DOCTYPE html>") || !strings.Contains(doc, "</html>") {
		t.Fatal("not an HTML document")
	}
	balanced(t, doc)
	for _, el := range []string{"<html", "<head>", "<body>", "<title>", "<style>", "<table"} {
		if !strings.Contains(doc, el) {
			t.Errorf("no %s", el)
		}
	}

	// Escaping: the scenario name never appears as markup.
	if strings.Contains(doc, "<script") {
		t.Error("an unescaped <script> made it into the page")
	}
	if !strings.Contains(doc, "evil &lt;script&gt;") {
		t.Error("the scenario name is not shown escaped")
	}
	// Secrets are redacted.
	if strings.Contains(doc, "s3cr3t-token") {
		t.Error("a secret leaked into the HTML report")
	}

	// Offline: nothing is fetched.
	low := strings.ToLower(doc)
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "src=", "href=", "url(", "@import", "xlink:href"} {
		if strings.Contains(low, bad) {
			t.Errorf("the page may fetch: found %q", bad)
		}
	}
	// The only URL is the target, shown as text.
	for _, m := range regexp.MustCompile(`https?://[^\s<"]*`).FindAllString(doc, -1) {
		if !strings.HasPrefix(m, "http://127.0.0.1:8080/") {
			t.Errorf("unexpected URL %q", m)
		}
	}

	// The verdict, prominently.
	if !strings.Contains(doc, `<div class="verdict fail" id="verdict">FAIL</div>`) {
		t.Error("the verdict is not shown")
	}
	// Rules: each with its observed value per repeat.
	for _, want := range []string{"errors == 0", "p50 &lt; 20ms", "repeat 1: observed", "repeat 2: observed", "errors=10"} {
		if !strings.Contains(doc, want) {
			t.Errorf("no %q in the page", want)
		}
	}
	// Summary tables.
	for _, want := range []string{"phase warm", "phase steady", "median [min – max] across repeats", "throughput (ok /s)", "offered /s", "λ·W", "503=10", "status=10"} {
		if !strings.Contains(doc, want) {
			t.Errorf("no %q in the page", want)
		}
	}

	// Charts: three per measured (phase, repeat); the warmup has none.
	measured := 0
	for _, pr := range r.Result.Phases {
		if !pr.Phase.Warmup {
			measured++
		}
	}
	if got, want := strings.Count(doc, "<svg"), 3*measured; got != want {
		t.Errorf("%d <svg> charts, want %d", got, want)
	}
	if got := strings.Count(doc, "</svg>"); got != 3*measured {
		t.Errorf("%d </svg>, want %d", got, 3*measured)
	}
	for _, want := range []string{"latency by percentile", "99.9", "response time", "service time", "ok/s", "mean and max", "errors/s", "Little"} {
		if !strings.Contains(doc, want) {
			t.Errorf("no %q in the charts", want)
		}
	}
	// Warnings.
	if !strings.Contains(doc, "<h2>warnings</h2>") || !strings.Contains(doc, "target-thread-bound") {
		t.Error("warnings missing")
	}
	if len(doc) > 400<<10 {
		t.Errorf("page is %d bytes", len(doc))
	}
}

func TestHTMLVerdicts(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Run)
		want string
	}{
		{"pass", func(r *Run) { r.Verdict.Status = 0; r.Outcome = "pass" }, ">PASS<"},
		{"inconclusive", func(r *Run) { r.Verdict.Status = 0; r.Outcome = "inconclusive" }, ">INCONCLUSIVE<"},
		{"interrupted", func(r *Run) { r.Result.Interrupted = true; r.Result.Phases[len(r.Result.Phases)-1].Interrupted = true }, ">INTERRUPTED<"},
		{"could not run", func(r *Run) { r.Error = "dial <tcp>: refused" }, ">COULD NOT RUN<"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := fixture(t)
			c.edit(r)
			doc := renderHTML(t, r)
			balanced(t, doc)
			if !strings.Contains(doc, c.want) {
				t.Errorf("no %s", c.want)
			}
			if strings.Contains(doc, "<tcp>") {
				t.Error("error text not escaped")
			}
		})
	}
}

// A run that measured nothing still renders.
func TestHTMLEmpty(t *testing.T) {
	r := fixture(t)
	r.Result = &engine.Result{}
	r.Across, r.Warnings, r.Verdict = nil, nil, nil
	r.Error = "no connection"
	doc := renderHTML(t, r)
	balanced(t, doc)
	if strings.Contains(doc, "<svg") {
		t.Error("charts for a run that measured nothing")
	}
}

// A report read back from JSON renders like the run itself.
func TestHTMLFromJSON(t *testing.T) {
	r := fixture(t)
	path := t.TempDir() + "/r.json"
	if err := WriteJSON(path, r); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r.Scenario.File = "" // not in the JSON report
	a, b := renderHTML(t, r), renderHTML(t, back)
	if a != b {
		t.Error("the HTML of a loaded report differs from the run's")
	}
}

// TestHTMLFile renders a JSON report given as RUNNER_HTML_REPORT=in.json:out.html
// (bench/screenshot.sh uses it); skipped otherwise.
func TestHTMLFile(t *testing.T) {
	spec := os.Getenv("RUNNER_HTML_REPORT")
	if spec == "" {
		t.Skip("RUNNER_HTML_REPORT=in.json:out.html not set")
	}
	in, out, ok := strings.Cut(spec, ":")
	if !ok {
		t.Fatalf("RUNNER_HTML_REPORT=%q: want in.json:out.html", spec)
	}
	r, err := Load(in)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := HTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", out, b.Len())
}

// A long phase's timeline is summed into buckets so that a chart stays
// small, and every count is kept.
func TestHTMLLongTimeline(t *testing.T) {
	tl := make([]measure.TimelineBucket, 3*3600)
	for i := range tl {
		tl[i] = measure.TimelineBucket{OK: 10, Errors: int64(i % 2), ResponseSum: 10 * time.Millisecond, ResponseMax: time.Duration(i) * time.Microsecond}
	}
	b, step := bucketed(tl)
	if len(b) > maxPoints || step != 18 {
		t.Fatalf("%d buckets of %d s", len(b), step)
	}
	var ok, errs int64
	for _, x := range b {
		ok += x.OK
		errs += x.Errors
	}
	if ok != 10*int64(len(tl)) || errs != int64(len(tl)/2) || b[len(b)-1].ResponseMax != time.Duration(len(tl)-1)*time.Microsecond {
		t.Fatalf("bucketed lost counts: ok %d errors %d", ok, errs)
	}
	r := fixture(t)
	for _, pr := range r.Result.Phases {
		pr.Summary.Timeline = tl
	}
	if doc := renderHTML(t, r); len(doc) > 600<<10 {
		t.Errorf("page of a 3-hour timeline is %d bytes", len(doc))
	}
}
