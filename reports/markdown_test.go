package reports

import (
	"bytes"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/rules"
	"github.com/runner-dev/runner/internal/sysinfo"
	"github.com/runner-dev/runner/schema"
)

// synthRun builds a judged run of sc: every phase of every repeat gets n
// requests at 10 ms intervals (100/s), the k-th with the service time and
// outcome gen gives.
func synthRun(t *testing.T, sc *schema.Scenario, n int, gen func(rep, k int) (time.Duration, drivers.Outcome)) *Run {
	t.Helper()
	pl, err := engine.Compile(sc, engine.Limits{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	res := &engine.Result{}
	for rep := 1; rep <= pl.Repeats; rep++ {
		for i := range pl.Phases {
			p := &pl.Phases[i]
			elapsed := time.Duration(n) * 10 * time.Millisecond
			rec := measure.NewRecorder(1, measure.Options{Duration: elapsed + time.Second})
			for k := 0; k < n; k++ {
				at := time.Duration(k) * 10 * time.Millisecond
				svc, out := gen(rep, k)
				rec.AddArrivals(1)
				rec.Record(0, &measure.Result{Seq: uint64(k + 1), Intended: at, Sent: at, Done: at + svc, Outcome: out})
			}
			rec.AddConnectionsOpened(int64(p.Connections))
			pr := &engine.PhaseResult{
				Repeat: rep, Phase: p, Start: start.Add(time.Duration(rep*100+i*10) * time.Second),
				Summary: rec.Summary(elapsed), ConnectionsRequested: p.Connections, ConnectionsEstablished: p.Connections,
				Wall: elapsed, ClientCPU: 0.05, GCPauseMax: 120 * time.Microsecond,
				Server: map[string]float64{"requests": float64(n)},
			}
			pr.Metrics = engine.MetricsOf(pr)
			res.Phases = append(res.Phases, pr)
		}
	}
	r := &Run{
		RunID: "20261129T120000Z-b10b10", Tool: "runner", Scenario: sc, Plan: pl,
		Env:    sysinfo.Env{OS: "linux", Arch: "amd64", Cores: 2, GOMAXPROCS: 2, GoVersion: "go1.26", Runner: "test"},
		Target: "http://127.0.0.1:8080/", Started: start, Ended: start.Add(time.Duration(pl.Repeats) * time.Duration(n) * 10 * time.Millisecond),
		Result: res,
	}
	r.Verdict = engine.Judge(pl, res)
	r.Across = engine.Across(res)
	r.Warnings = engine.Checks(pl, res)
	r.Outcome = r.Verdict.Status.String()
	if r.Verdict.Status.String() != "pass" {
		r.ExitCode = 1
	}
	return r
}

// richFixture is the golden fixture with reconciliation (one check that
// holds, one that does not) and a rule too thin to judge (p99.9 of 990
// samples), re-judged.
func richFixture(t *testing.T) *Run {
	t.Helper()
	r := fixture(t)
	sc := *r.Scenario
	sc.Assert = append(append([]schema.Rule(nil), sc.Assert...), schema.Rule{Expr: "p999 < 50ms", Phase: "steady"})
	sc.Reconcile = &schema.Reconcile{Fetch: schema.Fetch{Path: "/stats"}, Expect: []schema.Rule{
		{Expr: "server.requests == requests"}, {Expr: "server.requests == ok"},
	}}
	pl, err := engine.Compile(&sc, engine.Limits{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r.Scenario, r.Plan = &sc, pl
	r.Verdict = engine.Judge(pl, r.Result)
	r.Outcome, r.ExitCode = r.Verdict.Status.String(), 1
	r.Env.CPUModel = "Test CPU | 2 cores"
	r.Env.WorkdirCommit = "0123456789abcdef+dirty"
	return r
}

func markdownOf(t *testing.T, r *Run) string {
	t.Helper()
	var b bytes.Buffer
	if err := Markdown(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestMarkdownGolden(t *testing.T) {
	r := richFixture(t)
	out := markdownOf(t, r)
	for _, want := range []string{
		"## ❌ FAIL · runner · golden",
		"| ❌ FAIL | `errors == 0` | steady | #1 `errors=10` FAIL<br>#2 `errors=10` FAIL |",
		"| ✅ PASS | `p50 < 20ms` | steady | #1 `p50=5.004ms`<br>#2 `p50=6.004ms` |",
		"  - repeat 1: errors == 0 is false: 10 vs 0, difference 10",
		"### Reconciliation",
		"| ✅ PASS | `server.requests == requests` | steady |",
		"| ❌ FAIL | `server.requests == ok` | steady |",
		"difference 10",
		// Latency: median [min – max] across the two repeats.
		"| steady | 2 | 990, 990 | 6.004ms [5.004ms – 6.004ms] |",
		"| 503=10 |",
		"| CPU | Test CPU \\| 2 cores |",
		"`0123456789abcdef+dirty`",
		"xychart-beta",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	if strings.Contains(out, "s3cr3t-token") {
		t.Error("markdown shows a secret")
	}
	// The verdict comes before everything measured.
	if v, l := strings.Index(out, "### Verdict"), strings.Index(out, "### Load"); v < 0 || l < v {
		t.Error("the verdict is not first")
	}
	checkMarkdownTables(t, out)
	golden(t, "report.golden.md", []byte(out))
}

// checkMarkdownTables checks that every row of every table has as many cells as
// its header: an unescaped pipe would add one.
func checkMarkdownTables(t *testing.T, md string) {
	t.Helper()
	cells := func(line string) int {
		line = strings.ReplaceAll(line, `\|`, "")
		return strings.Count(line, "|") - 1
	}
	want := -1
	for i, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			want = -1
			continue
		}
		if want < 0 {
			want = cells(line)
			continue
		}
		if got := cells(line); got != want {
			t.Errorf("line %d has %d cells, its table %d: %s", i+1, got, want, line)
		}
	}
}

func TestMarkdownEscapes(t *testing.T) {
	for in, want := range map[string]string{
		"a|b":         `a\|b`,
		"x\ny":        "x<br>y",
		"*bold* _i_":  `\*bold\* \_i\_`,
		"<script>":    "&lt;script&gt;",
		"[l](u) \\ `": "\\[l\\](u) \\\\ \\`",
	} {
		if got := mdText(in); got != want {
			t.Errorf("mdText(%q) = %q, want %q", in, got, want)
		}
	}
	for _, c := range []struct {
		in   string
		cell bool
		want string
	}{
		{"p99 < 20ms", true, "`p99 < 20ms`"},
		{"a || b", true, "`a \\|\\| b`"},
		{"a || b", false, "`a || b`"},
		{"x `y` z", false, "`` x `y` z ``"},
		{"two\nlines", true, "`two lines`"},
	} {
		if got := mdCode(c.in, c.cell); got != c.want {
			t.Errorf("code(%q, %v) = %q, want %q", c.in, c.cell, got, c.want)
		}
	}
	// A rule with a pipe keeps its table intact.
	r := fixture(t)
	r.Verdict.Rules[0].Source = "errors == 0 || errors < 1"
	r.Verdict.Rules[0].Repeats[0].Observed = "a|b\nc"
	checkMarkdownTables(t, markdownOf(t, r))
}

func TestMarkdownSaysWhenNotJudged(t *testing.T) {
	t.Run("could-not-run", func(t *testing.T) {
		r := fixture(t)
		r.Result, r.Verdict, r.Across, r.Warnings = &engine.Result{}, nil, nil, nil
		r.Error, r.Outcome, r.ExitCode = "dial tcp 127.0.0.1:8080: connect: connection refused", "could-not-run", 4
		out := markdownOf(t, r)
		if !strings.HasPrefix(out, "## 🛑 COULD NOT RUN · runner · golden\n\n> **Could not run:** dial tcp 127.0.0.1:8080: connect: connection refused\n") {
			t.Errorf("the top does not say the run could not run:\n%s", out)
		}
		if !strings.Contains(out, "Not judged: nothing was measured.") || strings.Contains(out, "### Load") {
			t.Errorf("a run that measured nothing shows measurements:\n%s", out)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		r := fixture(t)
		r.Result.Interrupted = true
		r.Result.Phases[3].Interrupted = true
		r.Verdict = engine.Judge(r.Plan, r.Result)
		r.Outcome, r.ExitCode = "interrupted", 130
		out := markdownOf(t, r)
		if !strings.HasPrefix(out, "## ⏹️ INTERRUPTED · runner · golden\n\n> **Interrupted:**") {
			t.Errorf("the top does not say the run was interrupted:\n%s", out)
		}
		if !strings.Contains(out, "| steady **INTERRUPTED** | 2 |") {
			t.Errorf("the interrupted phase is not marked:\n%s", out)
		}
	})
	t.Run("inconclusive", func(t *testing.T) {
		r := fixture(t)
		r.Verdict.Rules = r.Verdict.Rules[1:] // p50 < 20ms holds
		r.Verdict.Status = r.Verdict.Rules[0].Status
		r.Warnings = append(r.Warnings, engine.Warning{Code: "client-cpu", Message: "the client used 98 % of its cores", Invalidates: true})
		r.Outcome, r.ExitCode = "inconclusive", 2
		out := markdownOf(t, r)
		if !strings.HasPrefix(out, "## ⚠️ INCONCLUSIVE · runner · golden\n\n> **Inconclusive:** the load generator was the bottleneck") ||
			!strings.Contains(out, "> - the client used 98 % of its cores") {
			t.Errorf("the top does not say the run is inconclusive and why:\n%s", out)
		}
	})
}

// A report loaded back from its JSON renders as the run did.
func TestMarkdownFromLoadedJSON(t *testing.T) {
	r := richFixture(t)
	back := roundTrip(t, r)
	if got, want := markdownOf(t, back), markdownOf(t, r); got != want {
		t.Errorf("markdown of the loaded report differs:\n%s\nwant:\n%s", got, want)
	}
}

// B10, the defect pinned: a CI report that shows a pass although requests
// failed.
//
// A quarter of the requests failed; `errors == 0` fails
// and `p99 < 50ms` passes, and both reports say so.
func TestField_B10_ReportsShowFailures(t *testing.T) {
	sc := &schema.Scenario{
		Version: 1, Name: "b10", File: "b10.yaml", Repeats: 1,
		Phases: []schema.Phase{
			{Name: "steady", Open: &schema.Open{Rate: schema.RateSpec{From: 100, To: 100}, Connections: 4}, Duration: schema.Duration(40 * time.Second)},
		},
		Assert: []schema.Rule{{Expr: "errors == 0", Line: 9, Col: 5}, {Expr: "p99 < 50ms", Line: 10, Col: 5}},
	}
	r := synthRun(t, sc, 4000, func(rep, k int) (time.Duration, drivers.Outcome) {
		svc := time.Duration(k%10+1) * time.Millisecond
		if k%4 == 3 {
			return svc, drivers.Outcome{Class: drivers.Status, Code: "500", Responded: true}
		}
		return svc, drivers.Outcome{Class: drivers.OK, Responded: true}
	})
	if s := r.Result.Phases[0].Summary; s.Errors != 1000 || s.Requests != 4000 {
		t.Fatalf("fixture: %d errors of %d requests, want 1000 of 4000", s.Errors, s.Requests)
	}

	md := markdownOf(t, r)
	for _, want := range []string{
		"## ❌ FAIL · runner · b10",
		"| ❌ FAIL | `errors == 0` | steady | #1 `errors=1000` FAIL |",
		"| ✅ PASS | `p99 < 50ms` | steady | #1 `p99=10ms` |",
		"| steady | 1 | 1000 | 25.00 % | status=1000 | 500=1000 | 0 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	checkMarkdownTables(t, md)

	var x bytes.Buffer
	if err := JUnit(&x, r); err != nil {
		t.Fatal(err)
	}
	doc := parseJUnit(t, x.Bytes())
	if len(doc.Suites) != 1 || doc.Suites[0].Name != "b10" {
		t.Fatalf("want one testsuite b10, got %+v", doc.Suites)
	}
	s := doc.Suites[0]
	if s.Tests != 2 || s.Failures != 1 || s.Errors != 0 || s.Skipped != 0 {
		t.Errorf("testsuite counts tests=%d failures=%d errors=%d skipped=%d, want 2 1 0 0", s.Tests, s.Failures, s.Errors, s.Skipped)
	}
	var failed, passed []string
	for _, c := range s.Cases {
		switch {
		case c.Failure != nil:
			failed = append(failed, c.Name)
			if !strings.Contains(c.Failure.Message, "errors=1000") || !regexp.MustCompile(`1000 vs 0`).MatchString(c.Failure.Message+c.Failure.Body) {
				t.Errorf("the failure does not carry the observed value and the reason: %+v", c.Failure)
			}
		case c.Error == nil && c.Skipped == nil:
			passed = append(passed, c.Name)
		}
	}
	if strings.Join(failed, ",") != "errors == 0 [phase steady]" || strings.Join(passed, ",") != "p99 < 50ms [phase steady]" {
		t.Errorf("failed %q, passed %q", failed, passed)
	}
	validateJUnit(t, x.Bytes())
}

// Each Mermaid chart labels its x-axis with one second per point, as many
// labels as every line has points (a numeric range would spread the
// points over it evenly, whatever seconds they stand for).
func TestMarkdownChartAxis(t *testing.T) {
	out := markdownOf(t, richFixture(t))
	charts := regexp.MustCompile("(?s)```mermaid\n(.*?)```").FindAllStringSubmatch(out, -1)
	if len(charts) == 0 {
		t.Fatal("no chart")
	}
	for _, c := range charts {
		x := regexp.MustCompile(`x-axis "second" \[([^\]]*)\]`).FindStringSubmatch(c[1])
		if x == nil {
			t.Fatalf("no labelled x-axis in\n%s", c[1])
		}
		labels := strings.Split(x[1], ", ")
		if labels[0] != "0" {
			t.Errorf("the first point is second %s, want 0", labels[0])
		}
		for _, l := range regexp.MustCompile(`line \[([^\]]*)\]`).FindAllStringSubmatch(c[1], -1) {
			if n := len(strings.Split(l[1], ", ")); n > len(labels) {
				t.Errorf("a line of %d points on %d labels", n, len(labels))
			}
		}
		if !strings.Contains(c[1], "plotColorPalette") {
			t.Error("no palette: the default theme's line is near invisible")
		}
	}
}

// TestInvalidReasonNamesTheWarningsKinds: the reason an invalidating
// warning gives for an inconclusive pass (console verdict line, Markdown
// note, HTML banner, JUnit) is its own kind's, never the load generator's
// unless a generator warning is among them; a kind without a phrase is
// named by its code.
func TestInvalidReasonNamesTheWarningsKinds(t *testing.T) {
	for _, c := range []struct {
		codes []string
		want  string // in every report
		not   string // in none
	}{
		{[]string{"baseline-flows"}, "flow iterations against single requests", "generator"},
		{[]string{"censored", "baseline-flows"}, "arrivals were left over (the figures censor the longest waits), and rules compare figures with a baseline's", "generator"},
		{[]string{"client-cpu", "step-lateness"}, "the load generator was the bottleneck", "and the load generator"},
		{[]string{"made-up-kind"}, "a made-up-kind warning invalidates the measurement", "generator"},
	} {
		r := flowFixture(t)
		r.Verdict.Status = rules.Pass
		r.Outcome = "inconclusive"
		for _, code := range c.codes {
			r.Warnings = append(r.Warnings, engine.Warning{Code: code, Phase: "shop", Message: "phase shop: " + code, Invalidates: true})
		}
		con, md, page := consoleMarkdownHTML(t, r)
		var ju bytes.Buffer
		if err := JUnit(&ju, r); err != nil {
			t.Fatal(err)
		}
		for name, out := range map[string]string{"console": con, "markdown": md, "html": html.UnescapeString(page), "junit": html.UnescapeString(ju.String())} {
			line := ""
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "every rule holds, but") || strings.Contains(l, "**Inconclusive:**") || strings.Contains(l, "inconclusive: ") {
					line += l + "\n"
				}
			}
			if !strings.Contains(strings.ReplaceAll(line, "\\", ""), c.want) || strings.Contains(line, c.not) {
				t.Errorf("%v: %s says %q, want %q and no %q", c.codes, name, line, c.want, c.not)
			}
		}
	}
}
