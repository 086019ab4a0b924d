package reports

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/rules"
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
	// Text inside <style> and <script> holds no tags.
	doc = regexp.MustCompile(`(?s)<style>.*?</style>`).ReplaceAllString(doc, "<style></style>")
	doc = regexp.MustCompile(`(?s)(<script[^>]*>).*?</script>`).ReplaceAllString(doc, "$1</script>")
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

// walk calls f on every node of the tree under n.
func walk(n *html.Node, f func(*html.Node)) {
	f(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func text(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	})
	return b.String()
}

// pageCharts parses the page with an HTML5 parser and checks that it
// fetches nothing: no element that loads a resource, no attribute that
// names one, no script from elsewhere, no url() or @import in its styles,
// and no URL in its text but the allowed ones. It returns the charts'
// data (the JSON block) and the data-chart IDs of the chart elements, in
// page order.
func pageCharts(t *testing.T, doc string, allowURL func(string) bool) (charts []chart, ids []string) {
	t.Helper()
	root, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	urlRE := regexp.MustCompile(`https?://[^\s<"]*`)
	walk(root, func(n *html.Node) {
		if n.Type == html.TextNode && n.Parent != nil && n.Parent.Data != "script" {
			for _, u := range urlRE.FindAllString(n.Data, -1) {
				if !allowURL(u) {
					t.Errorf("unexpected URL %q in the page's text", u)
				}
			}
		}
		if n.Type != html.ElementNode {
			return
		}
		switch n.Data {
		case "link", "img", "iframe", "object", "embed", "video", "audio", "source", "base", "frame":
			t.Errorf("<%s> may fetch", n.Data)
		case "style":
			if low := strings.ToLower(text(n)); strings.Contains(low, "url(") || strings.Contains(low, "@import") {
				t.Error("a style may fetch (url( or @import)")
			}
		case "script":
			js := text(n)
			for _, bad := range []string{"fetch(", "XMLHttpRequest", "import(", "WebSocket", "sendBeacon"} {
				if strings.Contains(js, bad) {
					t.Errorf("a script may fetch: %q", bad)
				}
			}
			if typ, _ := attr(n, "type"); typ == "application/json" {
				if id, _ := attr(n, "id"); id == "runner-charts" {
					if err := json.Unmarshal([]byte(js), &charts); err != nil {
						t.Fatalf("the charts' data: %v", err)
					}
				}
			}
		}
		for _, a := range n.Attr {
			switch strings.ToLower(a.Key) {
			case "src", "href", "xlink:href", "srcset", "action", "poster", "data", "formaction", "background":
				t.Errorf("<%s %s=%q> may fetch", n.Data, a.Key, a.Val)
			case "data-chart":
				ids = append(ids, a.Val)
			}
		}
	})
	return charts, ids
}

// checkCharts checks that every chart element has its data and that
// every chart has some: x values, each series one y per x, at least one
// of them a number, and a y axis that holds it all.
func checkCharts(t *testing.T, charts []chart, ids []string) map[string]chart {
	t.Helper()
	by := map[string]chart{}
	for _, c := range charts {
		by[c.ID] = c
	}
	if len(by) != len(ids) || len(charts) != len(ids) {
		t.Errorf("%d chart elements, %d charts' data (%d IDs)", len(ids), len(charts), len(by))
	}
	for _, id := range ids {
		c, ok := by[id]
		if !ok {
			t.Errorf("chart %s has no data", id)
			continue
		}
		if len(c.X) == 0 || len(c.Series) == 0 {
			t.Errorf("chart %s: %d x values, %d series", id, len(c.X), len(c.Series))
		}
		values := 0
		for _, s := range c.Series {
			if len(s.Y) != len(c.X) {
				t.Errorf("chart %s series %q: %d y for %d x", id, s.Label, len(s.Y), len(c.X))
			}
			for _, y := range s.Y {
				if !math.IsNaN(y) { // null in the JSON
					values++
					if y > c.YMax {
						t.Errorf("chart %s series %q: %g above the y axis's top %g", id, s.Label, y, c.YMax)
					}
				}
			}
		}
		if values == 0 {
			t.Errorf("chart %s draws nothing", id)
		}
	}
	return by
}

// UnmarshalJSON reads nums back, null as NaN.
func (ns *nums) UnmarshalJSON(b []byte) error {
	var vs []*float64
	if err := json.Unmarshal(b, &vs); err != nil {
		return err
	}
	*ns = make(nums, len(vs))
	for i, v := range vs {
		(*ns)[i] = math.NaN()
		if v != nil {
			(*ns)[i] = *v
		}
	}
	return nil
}

// fixtureURL allows the one URL of the fixture: its target.
func fixtureURL(u string) bool { return strings.HasPrefix(u, "http://127.0.0.1:8080/") }

func TestHTML(t *testing.T) {
	r := fixture(t)
	r.Scenario.Name = `evil <script>alert("x")</script> & co`
	r.Outcome = "fail"
	doc := renderHTML(t, r)

	if !strings.HasPrefix(doc, "<!DOCTYPE html>") || !strings.Contains(doc, "</html>") {
		t.Fatal("not an HTML document")
	}
	balanced(t, doc)
	for _, el := range []string{"<html", "<head>", "<body>", "<title>", "<style>", "<table", "<noscript>"} {
		if !strings.Contains(doc, el) {
			t.Errorf("no %s", el)
		}
	}

	// Escaping: the scenario name never appears as markup.
	if strings.Contains(doc, "<script>alert") {
		t.Error("an unescaped <script> made it into the page")
	}
	if !strings.Contains(doc, "evil &lt;script&gt;") {
		t.Error("the scenario name is not shown escaped")
	}
	// Secrets are redacted.
	if strings.Contains(doc, "s3cr3t-token") {
		t.Error("a secret leaked into the HTML report")
	}
	// Offline: nothing is fetched; the only URL is the target, shown as text.
	charts, ids := pageCharts(t, doc, fixtureURL)
	// The scripts are inlined: uPlot and ours.
	if !strings.Contains(doc, uplotJS) || !strings.Contains(doc, reportJS) || !strings.Contains(doc, uplotCSS) {
		t.Error("uPlot or report.js is not inlined")
	}

	// The verdict, prominently, with the headline numbers beside it:
	// the median [min – max] of the 2 repeats.
	if !strings.Contains(doc, `<div class="verdict fail" id="verdict">FAIL</div>`) {
		t.Error("the verdict is not shown")
	}
	head := doc[strings.Index(doc, `id="verdict"`):strings.Index(doc, "<h2>rules</h2>")]
	for _, want := range []string{`id="headline"`, "throughput (ok)", "p95", "p99", "errors", "<b>99.0/s</b>", "[99.0/s – 99.0/s] of 2", "<b>11.000ms</b>", "[10.000ms – 11.000ms] of 2", "<b>10</b>"} {
		if !strings.Contains(head, want) {
			t.Errorf("no %q next to the verdict", want)
		}
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
	// The judged phase first, the warmup folded after it.
	steady, fold, warm := strings.Index(doc, "<h2>phase steady"), strings.Index(doc, `<details class="warmups">`), strings.Index(doc, "<h2>phase warm")
	if !(steady >= 0 && steady < fold && fold < warm) {
		t.Errorf("phase steady at %d, the folded warmups at %d, phase warm at %d", steady, fold, warm)
	}

	// Charts: five per measured (phase, repeat), and a sixth, the
	// percentiles over time, where the summary holds ok responses per
	// interval; the warmup has none.
	want := 0
	for _, pr := range r.Result.Phases {
		if !pr.Phase.Warmup {
			want += 5
			if len(pr.Summary.Intervals) > 0 {
				want++
			}
		}
	}
	if len(ids) != want || !strings.Contains(doc, "percentiles over time") {
		t.Errorf("%d charts, want %d with percentiles over time", len(ids), want)
	}
	checkCharts(t, charts, ids)
	for _, want := range []string{"latency by percentile", "response time", "service time", "ok/s", "mean and max", "errors/s", "Little"} {
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

// The rules' limits are drawn on the charts of the metric they constrain,
// the charts of one kind share their y scale across repeats, and the
// percentiles-over-time chart is drawn from the summary's intervals.
func TestHTMLBudgetsAndScales(t *testing.T) {
	old := intervalPercentiles
	t.Cleanup(func() { intervalPercentiles = old })
	intervalPercentiles = func(s *measure.Summary) []pctPoint {
		// Repeat 2 of the fixture is 1 ms slower (p50 6 ms against 5):
		// its last interval's p99 reaches 31 ms.
		p99 := 20 * time.Millisecond
		if v, _ := s.Response.Percentile(50); v > 5500*time.Microsecond {
			p99 = 31 * time.Millisecond
		}
		return []pctPoint{{T: 5, P50: 3 * time.Millisecond, P90: 8 * time.Millisecond, P99: 12 * time.Millisecond}, {T: 10, P50: 4 * time.Millisecond, P90: 9 * time.Millisecond, P99: p99}}
	}
	r := fixture(t)
	r.Verdict.Rules = append(r.Verdict.Rules,
		engine.RuleResult{Source: "throughput > 150 and max < 40ms", Phase: "steady", Status: rules.Fail},
		engine.RuleResult{Source: "p99 < 50ms or errors == 0", Phase: "steady", Status: rules.Pass})
	doc := renderHTML(t, r)
	charts, ids := pageCharts(t, doc, fixtureURL)
	if len(ids) != 2*6 {
		t.Fatalf("%d charts, want 6 for each of the 2 repeats", len(ids))
	}
	checkCharts(t, charts, ids)

	limits := func(c chart) (out []string) {
		for _, b := range c.Budgets {
			out = append(out, fmt.Sprintf("%s@%g", b.Label, b.Y))
		}
		return out
	}
	byKind := map[string][]chart{}
	for _, c := range charts {
		byKind[c.Kind] = append(byKind[c.Kind], c)
	}
	for kind, want := range map[string]string{
		// p50 < 20ms (the fixture's rule) and max < 40ms constrain
		// statistics of the response time; the rule with `or` sets no
		// limit.
		kindPercentile: "[p50 < 20ms@20 max < 40ms@40]",
		kindPctTime:    "[p50 < 20ms@20]",
		kindThroughput: "[throughput > 150@150]",
		kindLatency:    "[max < 40ms@40]",
	} {
		cs := byKind[kind]
		if len(cs) != 2 {
			t.Fatalf("%d %s charts, want one per repeat", len(cs), kind)
		}
		for _, c := range cs {
			if got := fmt.Sprint(limits(c)); got != want {
				t.Errorf("%s: limits %s, want %s", c.Title, got, want)
			}
		}
		if cs[0].YMax != cs[1].YMax {
			t.Errorf("%s: y axes up to %g and %g across repeats", kind, cs[0].YMax, cs[1].YMax)
		}
	}
	// The shared scale holds the highest of both repeats (p99 31 ms) and
	// every limit (the throughput of 99/s stays under its limit of 150).
	if y := byKind[kindPctTime][0].YMax; y < 31 {
		t.Errorf("percentiles over time: y axis up to %g, below repeat 2's p99 of 31 ms", y)
	}
	if y := byKind[kindThroughput][0].YMax; y < 150 {
		t.Errorf("throughput: y axis up to %g, below the limit 150", y)
	}
	pt := byKind[kindPctTime][1]
	if fmt.Sprint(pt.X) != "[5 10]" || len(pt.Series) != 3 || pt.Series[2].Label != "p99" || pt.Series[2].Y[1] != 31 {
		t.Errorf("percentiles over time of repeat 2: x %v, series %+v", pt.X, pt.Series)
	}
	if !strings.Contains(doc, `<span class="budget">limit throughput &gt; 150</span>`) {
		t.Error("the throughput chart's title does not name its limit")
	}
}

// TestUPlotVendored checks the vendored uPlot against the digests in its
// VERSION file (from the npm tarball of the version named there).
func TestUPlotVendored(t *testing.T) {
	dir := filepath.Join("assets", "uplot")
	v, err := os.ReadFile(filepath.Join(dir, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(v), "uplot 1.6.32 ") {
		t.Errorf("VERSION does not name uplot 1.6.32:\n%s", v)
	}
	checked := map[string]bool{}
	for _, line := range strings.Split(string(v), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || len(f[0]) != 64 {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, f[1]))
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != f[0] {
			t.Errorf("%s: sha256 %x, VERSION says %s", f[1], sum, f[0])
		}
		checked[f[1]] = true
	}
	for _, f := range []string{"uPlot.iife.min.js", "uPlot.min.css", "LICENSE"} {
		if !checked[f] {
			t.Errorf("VERSION has no digest of %s", f)
		}
	}
	if !strings.Contains(uplotJS, "(v1.6.32)") {
		t.Error("the embedded uPlot is not 1.6.32")
	}
}

func TestBudgets(t *testing.T) {
	for _, c := range []struct {
		rule string
		want string // metric:value, value in ms or /s
	}{
		{"p99 < 20ms", "[p99:20]"},                            // the common case
		{"p99<=1s", "[p99:1000]"},                             // no spaces, seconds
		{"p99.9 < 250us", "[p99.9:0.25]"},                     // p99.9 as written in rules
		{"p999 < 5ms", "[p999:5]"},                            // its catalogue name
		{"p75 < 3ms", "[p75:3]"},                              // a percentile outside the catalogue
		{"20ms > p99", "[p99:20]"},                            // written the other way round
		{"median(p99) < 5ms", "[p99:5]"},                      // across repeats
		{"max < 1.5s && mean < 500µs", "[max:1500 mean:0.5]"}, // both hold: both drawn
		{"p99 < 20ms and throughput > 90", "[p99:20 throughput:90]"},
		{"p99 < 20ms or errors == 0", "[]"}, // either may hold: no limit
		{"not (p99 > 20ms)", "[]"},          // negated
		{"errors == 0", "[]"},               // not charted as such
		{"p99 < 2 * p50", "[]"},             // two metrics
		{"service.p99 < 5ms", "[]"},         // service time: not a response-time line
		{"error_rate < 0.01", "[]"},         // not charted
		{"p99 == 20ms", "[]"},               // an equality is no limit
		{"p99 < baseline.p99 * 1.1", "[]"},  // relative to a baseline
		{`errors_by["503"] < 5`, "[]"},      // a map read
		{"throughput > 100ms", "[]"},        // does not compile: no line either
		{"p99 < 20", "[]"},                  // idem
		// A flow step's limits, drawn on the steps' chart (step/metric).
		{"step.login.p99 < 50ms", "[login/p99:50]"},
		{"median(step.login.p95) < 5ms", "[login/p95:5]"},
		{`step["log-in"].p99 < 1s`, "[log-in/p99:1000]"},                      // a name that cannot follow a dot
		{`step['log-in'].max < 2ms`, "[log-in/max:2]"},                        // single quotes
		{`step["a\"b"].p99 < 1ms`, `[a"b/p99:1]`},                             // an escaped quote
		{"step.login.errors == 0 && step.login.max < 1s", "[login/max:1000]"}, // the limit of the two
		{"step.login.service.p99 < 5ms", "[]"},                                // the step's service time
		{"step.login.throughput > 5", "[]"},                                   // no chart of a step's throughput
		{"step.login.p99 < 2 * p99", "[]"},                                    // two metrics
		{`step["x"].p99 < 1ms or errors == 0`, "[]"},                          // either may hold
	} {
		var got []string
		for _, b := range budgets(c.rule) {
			name := b.Metric
			if b.Step != "" {
				name = b.Step + "/" + name
			}
			got = append(got, fmt.Sprintf("%s:%g", name, b.Value))
		}
		if fmt.Sprint(got) != c.want {
			t.Errorf("budgets(%q) = %v, want %s", c.rule, got, c.want)
		}
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
	if _, ids := pageCharts(t, doc, fixtureURL); len(ids) > 0 {
		t.Error("charts for a run that measured nothing")
	}
}

// A report read back from JSON renders like the run itself.
func TestHTMLFromJSON(t *testing.T) {
	r := fixture(t)
	back := roundTrip(t, r)
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

// The headline shows one repeat's value alone, the median [min – max] of
// N over repeats, and n/a for what was not measured.
func TestHTMLHeadline(t *testing.T) {
	one := &engine.PhaseSpread{Phase: "p", Repeats: []int{1}, Metrics: map[string]engine.Spread{
		"throughput": {Median: 250, Min: 250, Max: 250, N: 1}, "p99_ms": {Median: 12.5, Min: 12.5, Max: 12.5, N: 1},
	}}
	three := &engine.PhaseSpread{Phase: "p", Repeats: []int{1, 2, 3}, Metrics: map[string]engine.Spread{
		"errors": {Median: 2, Min: 0, Max: 7, N: 3}, "p95_ms": {Median: 3, Min: 2, Max: 4, N: 3},
	}}
	for _, c := range []struct {
		sp   *engine.PhaseSpread
		want string
	}{
		{one, "[{250.0/s } {n/a } {12.500ms } {n/a }]"}, // durations as the tables show them
		{three, "[{n/a } {3.000ms [2.000ms – 4.000ms] of 3} {n/a } {2 [0 – 7] of 3}]"},
		{nil, "[{n/a } {n/a } {n/a } {n/a }]"},
	} {
		if got := fmt.Sprint(headlineOf("p", c.sp).Cells); got != c.want {
			t.Errorf("headline %s, want %s", got, c.want)
		}
	}
}

// TestPercentileSeries_NearestRankPerInterval records known response
// times in known seconds and reads the percentiles-over-time points back:
// each interval's nearest-rank p50/p90/p99 (rank ⌈p/100·n⌉, within a
// histogram bucket, 1/1024 of the value), a gap for a percentile the
// interval has too few samples for, and no point for an empty second.
func TestPercentileSeries_NearestRankPerInterval(t *testing.T) {
	r := measure.NewRecorder(2, measure.Options{Duration: 4 * time.Second})
	ok := drivers.Outcome{Class: drivers.OK, Responded: true}
	seq := uint64(0)
	record := func(done time.Duration, rt time.Duration) {
		seq++
		r.Record(int(seq%2), &measure.Result{Seq: seq, Intended: done - rt, Sent: done - rt, Done: done, Outcome: ok})
	}
	// Second 0: 1..200 ms, shuffled over the second; second 1: five
	// samples; second 2: none; second 3: ten samples of 7 ms and one of 70.
	for i := 200; i >= 1; i-- {
		record(time.Duration(i)*4*time.Millisecond, time.Duration(i)*time.Millisecond)
	}
	for i := 1; i <= 5; i++ {
		record(time.Second+time.Duration(i)*time.Millisecond, 30*time.Millisecond)
	}
	for i := 0; i < 10; i++ {
		record(3*time.Second+time.Duration(i)*time.Millisecond, 7*time.Millisecond)
	}
	record(3*time.Second+500*time.Millisecond, 70*time.Millisecond)
	s := r.Summary(4 * time.Second)
	pts := percentileSeries(s)
	if len(pts) != 3 {
		t.Fatalf("%d points, want 3 (seconds 0, 1, 3): %+v", len(pts), pts)
	}
	near := func(what string, got, want time.Duration) {
		t.Helper()
		if got < want || got > want+want/1024+time.Microsecond {
			t.Errorf("%s = %v, want %v (within one bucket above)", what, got, want)
		}
	}
	if pts[0].T != 0.5 || pts[1].T != 1.5 || pts[2].T != 3.5 {
		t.Errorf("interval middles %v %v %v, want 0.5 1.5 3.5", pts[0].T, pts[1].T, pts[2].T)
	}
	// 200 samples 1..200 ms: rank 100, 180, 198.
	near("second 0 p50", pts[0].P50, 100*time.Millisecond)
	near("second 0 p90", pts[0].P90, 180*time.Millisecond)
	near("second 0 p99", pts[0].P99, 198*time.Millisecond)
	// Five samples: p50 (needs 2) but no p90 (10) or p99 (100).
	near("second 1 p50", pts[1].P50, 30*time.Millisecond)
	if pts[1].P90 >= 0 || pts[1].P99 >= 0 {
		t.Errorf("second 1 (5 samples) p90 %v p99 %v, want both left out", pts[1].P90, pts[1].P99)
	}
	// Eleven samples, ten of 7 ms: rank 10 of 11 for p90 is 7 ms.
	near("second 3 p90", pts[2].P90, 7*time.Millisecond)
	if pts[2].P99 >= 0 {
		t.Errorf("second 3 (11 samples) p99 %v, want left out", pts[2].P99)
	}
	if c := pctTimeChart("x", pts, s.Elapsed, nil); !math.IsNaN(c.Series[2].Y[1]) || math.IsNaN(c.Series[0].Y[1]) {
		t.Errorf("chart of second 1: p50 %v p99 %v, want a value and a gap", c.Series[0].Y[1], c.Series[2].Y[1])
	}
	s.Intervals = nil
	if pts := percentileSeries(s); pts != nil {
		t.Errorf("a summary without intervals gives %d points, want none", len(pts))
	}
}
